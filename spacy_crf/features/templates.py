"""Feature templates: parse and validate the strings of the config.

A template is a conjunction of parts joined by ``|``. A part is an attribute
name with an optional window offset: ``NORM`` (= ``NORM[0]``), ``TAG[-1]``.
A one-part template may give a window, ``NORM[-2..2]``, which expands into
one template per offset. So CRFsuite's chunking template reads::

    ["NORM[-2..2]", "NORM[-1]|NORM[0]", "NORM[0]|NORM[1]", "TAG[-2..2]",
     "TAG[-2]|TAG[-1]", "TAG[-1]|TAG[0]", "TAG[0]|TAG[1]", "TAG[1]|TAG[2]",
     "TAG[-2]|TAG[-1]|TAG[0]", "TAG[-1]|TAG[0]|TAG[1]", "TAG[0]|TAG[1]|TAG[2]"]

Attributes are spaCy token attributes read with ``Doc.to_array`` (NORM,
LOWER, SHAPE, TAG, POS, IS_TITLE, LIKE_NUM, ...) plus ``PREFIX1..4`` and
``SUFFIX1..4``: the first / last 1 to 4 characters of the token's ``LOWER``.

Word-representation attributes are those of the registered feature sources
(``spacy_crf.feature_sources``), read from tables the component builds at
``initialize``: ``CLUSTER`` / ``CLUSTERk`` (Brown clusters), ``VECTOR_CLUSTERk``
(clusters of the static vectors), ``GAZETTEER`` (phrase lists), and those of
any source a package registers.

Dependency-tree attributes need a parse (an upstream parser, or gold trees
copied onto the docs): ``head:ATTR`` is a spaCy attribute of the token's head
(a fixed ROOT value at roots), e.g. ``head:NORM``, ``head:DEP``; and
``N_CHILDREN``, ``DEPTH``, ``HEAD_DIST`` (signed distance to the head, which
also gives the direction), ``LCHILD_DEP`` / ``RCHILD_DEP`` (the relation of
the leftmost / rightmost child).
"""

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from spacy.attrs import IDS

from ..errors import Errors
from ..feature_sources import attrs_hints, source_of

MAX_OFFSET = 10

#: spaCy attributes a template may read, by name.
TOKEN_ATTRS: Tuple[str, ...] = (
    "ORTH", "LOWER", "NORM", "SHAPE", "PREFIX", "SUFFIX", "LENGTH", "LEMMA",
    "TAG", "POS", "MORPH", "DEP", "ENT_TYPE", "ENT_IOB",
    "IS_ALPHA", "IS_ASCII", "IS_DIGIT", "IS_LOWER", "IS_UPPER", "IS_TITLE",
    "IS_PUNCT", "IS_SPACE", "IS_STOP", "IS_BRACKET", "IS_QUOTE", "IS_LEFT_PUNCT",
    "IS_RIGHT_PUNCT", "IS_CURRENCY", "LIKE_NUM", "LIKE_URL", "LIKE_EMAIL",
)
#: attributes computed from the token text in numba.
AFFIX_ATTRS: Tuple[str, ...] = tuple(
    [f"PREFIX{k}" for k in range(1, 5)] + [f"SUFFIX{k}" for k in range(1, 5)]
)
#: attributes computed from the dependency tree, in column order.
STRUCTURE_ATTRS: Tuple[str, ...] = ("N_CHILDREN", "DEPTH", "HEAD_DIST", "LCHILD_DEP", "RCHILD_DEP")
HEAD = "HEAD:"


def lexicon_attr(attr: str) -> bool:
    """Whether ``attr`` is read from a table of the component (a feature source's)."""
    return source_of(attr) is not None


_PART = re.compile(
    r"^(HEAD:)?([A-Z_][A-Z0-9_]*)(?:\[\s*([+-]?\d+)\s*(?:\.\.\s*([+-]?\d+)\s*)?\])?$"
)


@dataclass(frozen=True)
class Part:
    """One (attribute, offset) pair of a template; ``attr`` may be ``HEAD:X``."""

    attr: str
    offset: int


class FeatureTemplates:
    """A parsed, validated list of feature templates.

    Parameters
    ----------
    templates : sequence of str
        Template strings as described in the module docstring.

    Attributes
    ----------
    templates : list of tuple of Part
        One tuple of parts per (expanded) template.
    token_attrs : list of str
        The spaCy attributes to read with ``Doc.to_array``, in column order.
    uses_affixes : bool
        Whether any template reads ``PREFIXk`` / ``SUFFIXk``; their eight
        columns then follow the spaCy attributes.
    lexicon_attrs : list of str
        The feature sources' attributes read (``CLUSTER6``,
        ``VECTOR_CLUSTER256``, ``GAZETTEER``), sorted; one column each follows
        the affixes.
    head_attrs : list of str
        Attributes read at the head (``head:X``); one column each follows.
    uses_tree : bool
        Whether the templates need a parse; the structure columns come last.
    """

    def __init__(self, templates: Sequence[str]) -> None:
        if isinstance(templates, str):
            templates = [templates]
        parsed: List[Tuple[Part, ...]] = []
        for text in templates:
            parsed.extend(_parse(text))
        if not parsed:
            raise ValueError(Errors.E004)
        self.source = list(templates)
        self.templates = parsed
        used = {p.attr for tmpl in parsed for p in tmpl}
        self.head_attrs = [a for a in TOKEN_ATTRS if HEAD + a in used]
        self.uses_structure = any(a in used for a in STRUCTURE_ATTRS)
        self.uses_tree = bool(self.head_attrs) or self.uses_structure
        needed = used | set(self.head_attrs)
        if self.uses_structure:
            needed.add("DEP")
        self.token_attrs = [a for a in TOKEN_ATTRS if a in needed]
        self.uses_affixes = any(a in used for a in AFFIX_ATTRS)
        columns: Dict[str, int] = {a: i for i, a in enumerate(self.token_attrs)}
        extra = list(AFFIX_ATTRS) if self.uses_affixes else []
        self.lexicon_attrs = sorted(a for a in used if lexicon_attr(a))
        extra += self.lexicon_attrs
        extra += [HEAD + a for a in self.head_attrs]
        extra += list(STRUCTURE_ATTRS) if self.uses_structure else []
        for a in extra:
            columns[a] = len(columns)
        self.n_columns = len(columns)
        ptr, col, off = [0], [], []
        for tmpl in parsed:
            for p in tmpl:
                col.append(columns[p.attr])
                off.append(p.offset)
            ptr.append(len(col))
        self.part_ptr = np.asarray(ptr, dtype=np.int64)
        self.part_col = np.asarray(col, dtype=np.int64)
        self.part_off = np.asarray(off, dtype=np.int64)
        self.attr_ids = [IDS[a] for a in self.token_attrs]

    def __len__(self) -> int:
        return len(self.templates)

    @property
    def names(self) -> List[str]:
        """The expanded templates as strings, e.g. ``'NORM[-1]|NORM[0]'``."""
        return ["|".join(f"{p.attr.replace(HEAD, 'head:')}[{p.offset}]" for p in t)
                for t in self.templates]

    def reads(self, attr: str) -> bool:
        """Whether any template reads ``attr`` (at the token or, as ``head:attr``, its head)."""
        names = {attr, HEAD + attr}
        if attr == "DEP":
            names |= {"LCHILD_DEP", "RCHILD_DEP"}
        return any(p.attr in names for t in self.templates for p in t)


def _parse(text: str) -> List[Tuple[Part, ...]]:
    if not isinstance(text, str) or not text.strip():
        raise ValueError(Errors.E002.format(template=text, why="it is empty or not a string"))
    pieces = [s.strip() for s in text.split("|")]
    parts: List[List[Part]] = []
    for piece in pieces:
        m = _PART.match(piece.upper())
        if m is None:
            raise ValueError(Errors.E002.format(template=text, why=f"'{piece}' is not ATTR[offset]"))
        head, attr, lo, hi = m.group(1), m.group(2), m.group(3), m.group(4)
        if head:
            if attr not in TOKEN_ATTRS:
                options = ", ".join("head:" + a for a in TOKEN_ATTRS)
                raise ValueError(Errors.E001.format(attr="head:" + attr, template=text, options=options))
            attr = HEAD + attr
        elif lexicon_attr(attr):
            source_of(attr).check(attr, text)
        elif attr not in TOKEN_ATTRS + AFFIX_ATTRS + STRUCTURE_ATTRS:
            options = (", ".join(TOKEN_ATTRS + AFFIX_ATTRS + STRUCTURE_ATTRS)
                       + f", {attrs_hints()}, head:ATTR")
            raise ValueError(Errors.E001.format(attr=attr, template=text, options=options))
        start = int(lo) if lo is not None else 0
        stop = int(hi) if hi is not None else start
        if stop < start:
            raise ValueError(Errors.E002.format(template=text, why=f"window {start}..{stop} is empty"))
        for offset in (start, stop):
            if abs(offset) > MAX_OFFSET:
                raise ValueError(Errors.E003.format(offset=offset, template=text, max=MAX_OFFSET))
        if hi is not None and len(pieces) > 1:
            raise ValueError(Errors.E002.format(template=text, why="a window is only allowed in a one-part template"))
        parts.append([Part(attr, o) for o in range(start, stop + 1)])
    if len(parts) == 1:
        return [(p,) for p in parts[0]]
    return [tuple(p[0] for p in parts)]


def templates_of(model: Any) -> List["FeatureTemplates"]:
    """The feature templates of every layer of ``model`` that has them (its
    ``templates`` attr): what the model's features read."""
    return [node.attrs["templates"] for node in model.walk()
            if hasattr(node.attrs.get("templates"), "reads")]
