"""Corpora as spaCy Docs, on top of spaCy's own converters.

* :func:`convert_chunks`: CoNLL-2000 style ``WORD POS CHUNK`` columns, read by
  spaCy's ``conll_ner_to_docs`` (POS into ``Token.tag_``, the last column as
  IOB entities); the chunks are also stored as ``doc.spans["chunks"]`` and
  their tags as the ``_.ATTR`` label list, one sentence per doc.
* :func:`convert_uner`: Universal NER IOB2 files (index, token, tag, ...
  columns, ``# sent_id`` comments) as ``doc.ents``, one sentence per doc,
  optionally joined to a CoNLL-U treebank whose tokens match (:func:`join_trees`:
  on ``sent_id`` where every id matches, else on their token sequence, else by
  position), whose gold heads, relations, UPOS, XPOS and lemmas the docs then carry.
* :func:`convert_conll`: CoNLL-2002/2003 NER files (``WORD [POS ...] TAG``
  columns, ``-DOCSTART-`` document markers dropped, an ``I-X`` that starts an
  entity repaired to ``B-X`` by :func:`repair_iob`) as ``doc.ents``.
* :func:`read_conllu` and :func:`read_conllu_upos`: CoNLL-U sentences as rows.

``python -m spacy_crf.convert chunks|uner|conll`` (``spacy crf-convert``,
:mod:`spacy_crf.commands.convert`) writes them as ``.spacy`` files.
"""

from pathlib import Path

import numpy as np
from typing import Dict, List, Optional, Sequence, Tuple, Union

from spacy.attrs import ENT_IOB, ENT_TYPE
from spacy.tokens import Doc
from spacy.training import biluo_tags_to_spans, iob_to_biluo
from spacy.training.converters import conll_ner_to_docs
from spacy.vocab import Vocab

from ._kernels.tree import check_forest
from .errors import Errors
from .targets import set_doc_labels

_IOB_PREFIX = {1: "I-", 3: "B-"}


def iob_tags_from_ents(doc: Doc) -> List[str]:
    """IOB2 tags of a doc's entities (``O`` outside them)."""
    values = doc.to_array([ENT_IOB, ENT_TYPE])
    strings = doc.vocab.strings
    return [
        _IOB_PREFIX[int(iob)] + strings[int(kind)] if int(iob) in _IOB_PREFIX else "O"
        for iob, kind in values
    ]


#: the document marker spaCy's ``conll_ner_to_docs`` splits on (not a token)
_DOC_DELIMITER = "-DOCSTART- -X- O O"


def convert_chunks(text: str, attr: str = "chunk") -> List[Doc]:
    """Docs (one per sentence) from CoNLL-2000 style text: chunks as ``doc.ents``
    and ``doc.spans["chunks"]``, their IOB tags in ``_.attr``.

    Raises
    ------
    ValueError
        E235 for a line that is not ``WORD POS CHUNK`` (three columns, the
        chunk tag ``O``, ``B-TYPE`` or ``I-TYPE``), with its number.
    """
    _check_chunk_lines(text)
    docs = list(conll_ner_to_docs(text, n_sents=1, no_print=True))
    for doc in docs:
        set_doc_labels(doc, attr, iob_tags_from_ents(doc))
        doc.spans["chunks"] = list(doc.ents)
    return docs


def _check_chunk_lines(text: str) -> None:
    """E235 for the first line of a chunks file that is not ``WORD POS CHUNK``.

    spaCy's reader zips the columns of a sentence, so one short line cut every
    line of it to that width (a POS tag read as the chunk tag, or E177 from
    spaCy), and it reads any tag's first letter as its IOB part (``Q-NP`` as
    ``B-NP``).
    """
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.strip() == _DOC_DELIMITER:
            continue
        row = line.split()
        if len(row) != 3:
            why = f"has {len(row)} column(s), not 3"
        elif row[2] != "O" and not _is_iob(row[2]):
            why = f"has an invalid chunk tag, '{row[2]}'"
        else:
            continue
        raise ValueError(Errors.E235.format(line=number, why=why, text=line[:80]))


def _blocks(text: str) -> List[List[str]]:
    return [b.splitlines() for b in text.strip("\n").split("\n\n") if b.strip()]


def _sent_id(lines: List[str]) -> Optional[str]:
    for line in lines:
        if line.startswith("# sent_id"):
            return line.split("=", 1)[1].strip()
    return None


def read_conllu(text: str) -> List[Tuple[Optional[str], List[List[str]]]]:
    """``(sent_id, rows)`` of every sentence of a CoNLL-U text, in order: the rows
    of its syntactic words (multiword-token ranges and empty nodes skipped)."""
    sentences = []
    for lines in _blocks(text):
        rows = [line.split("\t") for line in lines if line and not line.startswith("#")]
        rows = [r for r in rows if r[0].isdigit()]
        sentences.append((_sent_id(lines), rows))
    return sentences


def read_conllu_upos(path: Union[str, Path], limit: int = 0) -> List[Tuple[List[str], List[str]]]:
    """``(words, UPOS tags)`` of every sentence of a CoNLL-U file: its syntactic
    words, as ``spacy convert -c conllu`` makes the tokens.

    Parameters
    ----------
    path
        The CoNLL-U file.
    limit
        Keep only the first ``limit`` sentences (0 keeps all).
    """
    pairs = [([r[1] for r in rows], [r[3] for r in rows])
             for _, rows in read_conllu(Path(path).read_text(encoding="utf8")) if rows]
    return pairs[:limit] if limit else pairs


JOINS = ("sent_id", "token sequence", "position")


def join_trees(sentences: Sequence[Tuple[Optional[str], List[str]]],
               trees: Sequence[Tuple[Optional[str], List[List[str]]]]
               ) -> Tuple[List[List[List[str]]], str]:
    """The CoNLL-U rows of each ``(sent_id, words)`` sentence, and the join used.

    On ``sent_id`` if every sentence's id names a tree with its tokens; else on
    the token sequence (repeated sequences matched in order); else by position
    if there are as many trees as sentences and each has as many tokens as its
    sentence.

    Raises
    ------
    ValueError
        E090, naming the first sentence that no join places and why.
    """
    by_id = {sid: rows for sid, rows in trees if sid is not None}
    joined = [by_id.get(sid) for sid, _ in sentences]
    if all(rows is not None and [r[1] for r in rows] == words
           for rows, (_, words) in zip(joined, sentences)):
        return joined, JOINS[0]
    by_tokens: Dict[Tuple[str, ...], List[List[List[str]]]] = {}
    for _, rows in trees:
        by_tokens.setdefault(tuple(r[1] for r in rows), []).append(rows)
    taken: Dict[Tuple[str, ...], int] = {}
    joined = []
    for _, words in sentences:
        key = tuple(words)
        candidates = by_tokens.get(key, [])
        k = taken.get(key, 0)
        joined.append(candidates[k] if k < len(candidates) else None)
        taken[key] = k + 1
    if all(rows is not None for rows in joined):
        return joined, JOINS[1]
    if len(trees) == len(sentences) and all(
            len(rows) == len(words) for (_, rows), (_, words) in zip(trees, sentences)):
        return [rows for _, rows in trees], JOINS[2]
    # no join: the first sentence the most specific join misses, and why
    for i, (sid, words) in enumerate(sentences):
        tree = by_id.get(sid)
        if tree is not None and [r[1] for r in tree] == words:
            continue
        if sid is not None and tree is None:
            why = f"no CoNLL-U sentence has sent_id {sid}"
        elif sid is not None:
            why = (f"the CoNLL-U sentence with sent_id {sid} has other tokens "
                   f"({' '.join(r[1] for r in tree[:8])} ...)")
        else:
            why = "it has no sent_id"
        if tuple(words) not in by_tokens:
            why += ", no CoNLL-U sentence has its tokens"
        if len(trees) != len(sentences):
            why += f", and by position the files differ ({len(sentences)} against {len(trees)} sentences)"
        elif i < len(trees) and len(trees[i][1]) != len(words):
            why += (f", and by position its CoNLL-U counterpart has {len(trees[i][1])} tokens, "
                    f"not {len(words)}")
        raise ValueError(Errors.E090.format(i=i + 1, sid=sid, words=" ".join(words[:8]), why=why))
    raise ValueError(Errors.E090.format(i=0, sid=None, words="", why="no join places them"))


def convert_uner(text: str, vocab: Vocab, conllu: Optional[str] = None,
                 report: Optional[Dict[str, str]] = None) -> List[Doc]:
    """Docs (one per sentence) from Universal NER IOB2 text, entities in ``doc.ents``.

    With ``conllu``, each sentence is joined to its tree (:func:`join_trees`);
    ``report["join"]`` is set to the join used if ``report`` is given.

    Raises
    ------
    ValueError
        E144 for a tag that is not ``O``, ``B-TYPE`` or ``I-TYPE``, E145 for a
        line with fewer than 3 tab-separated columns (both with the line
        number), E146 for a joined CoNLL-U tree whose heads are not a tree (a
        cycle, a head out of range or not a number), E090 when no join works.
    """
    blocks = [_uner_sentence(lines) for lines in _numbered_blocks(text)]
    trees: List[Optional[List[List[str]]]] = [None] * len(blocks)
    if conllu is not None:
        trees, join = join_trees([(sid, words) for sid, words, _ in blocks], read_conllu(conllu))
        if report is not None:
            report["join"] = join
        for i, ((sid, words, _), tree) in enumerate(zip(blocks, trees), start=1):
            _check_tree(tree, i, sid, words)
    docs = []
    for (sid, words, tags), tree in zip(blocks, trees):
        extra = {}
        if tree is not None:
            extra = dict(
                spaces=["SpaceAfter=No" not in r[9] for r in tree],
                lemmas=[r[2] for r in tree], pos=[r[3] for r in tree],
                tags=[r[4] for r in tree], heads=[int(r[6]) - 1 if r[6] != "0" else i
                                                  for i, r in enumerate(tree)],
                deps=[r[7] for r in tree],
            )
        doc = Doc(vocab, words=words, **extra)
        doc.set_ents(biluo_tags_to_spans(doc, iob_to_biluo(tags)), default="outside")
        if sid:
            doc.user_data[("spacy_crf", "sent_id")] = sid
        docs.append(doc)
    return docs


def _numbered_blocks(text: str) -> List[List[Tuple[int, str]]]:
    """The sentences of a blank-line separated text, as ``(1-based line, line)`` lists
    (a line of whitespace alone separates sentences too)."""
    blocks: List[List[Tuple[int, str]]] = [[]]
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            blocks[-1].append((number, line))
        elif blocks[-1]:
            blocks.append([])
    return [block for block in blocks if block]


def _uner_sentence(lines: List[Tuple[int, str]]) -> Tuple[Optional[str], List[str], List[str]]:
    """``(sent_id, words, tags)`` of a UNER sentence; E145 / E144 name the bad line."""
    sid = _sent_id([line for _, line in lines])
    words, tags = [], []
    for number, line in lines:
        if line.startswith("#"):
            continue
        row = line.split("\t")
        if len(row) < 3:
            raise ValueError(Errors.E145.format(line=number, n=len(row), text=line[:80]))
        tag = row[2]
        if tag != "O" and not _is_iob(tag):
            raise ValueError(Errors.E144.format(line=number, sid=sid, tag=tag))
        words.append(row[1])
        tags.append(tag)
    return sid, words, tags


def _check_tree(tree: Optional[List[List[str]]], i: int, sid: Optional[str],
                words: List[str]) -> None:
    """E146 unless the CoNLL-U rows joined to sentence ``i`` have heads that form
    a tree: whole numbers from 0 (the root) to the sentence length, no token its
    own head, no cycle (spaCy takes any heads, and training failed later, E016)."""
    if tree is None:
        return
    n = len(tree)
    where = dict(i=i, sid=sid, words=" ".join(words[:8]))
    if any(len(r) < 8 for r in tree):
        raise ValueError(Errors.E146.format(**where, why="a CoNLL-U line has fewer than "
                                                         "the 10 columns"))
    bad = next((k for k, r in enumerate(tree, 1) if not r[6].isdigit() or int(r[6]) > n), None)
    if bad is not None:
        raise ValueError(Errors.E146.format(**where, why=f"token {bad}'s head "
                                                         f"'{tree[bad - 1][6]}' is not 0..{n}"))
    heads = np.asarray([int(r[6]) - 1 for r in tree], dtype=np.int64)  # -1: the root
    status = check_forest(heads, np.asarray([n], dtype=np.int64), np.empty(n, dtype=np.int64))
    if status:
        why = ("a token is its own head" if status == 1 else
               "its heads form a cycle (no path from some token to the root)")
        raise ValueError(Errors.E146.format(**where, why=why))


def repair_iob(tags: List[str]) -> Tuple[List[str], int]:
    """IOB2 tags from IOB1 or stray ``I-`` tags: an ``I-X`` that starts an
    entity (after ``O``, after another type, or first) becomes ``B-X``.

    Returns the tags and how many were changed.
    """
    out, changed, previous = [], 0, "O"
    for tag in tags:
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            tag = "B-" + tag[2:]
            changed += 1
        out.append(tag)
        previous = tag
    return out, changed


def _is_iob(tag: str) -> bool:
    return len(tag) > 2 and tag[:2] in ("B-", "I-")


def convert_conll(text: str, vocab: Vocab, pos_as_tag: bool = False) -> Tuple[List[Doc], Dict[str, int]]:
    """Docs (one per sentence) from CoNLL-2002/2003 NER text (``WORD [POS ...] TAG``).

    ``-DOCSTART-`` lines are dropped; entities (last column) go to
    ``doc.ents`` after :func:`repair_iob`; with ``pos_as_tag`` the second
    column becomes ``Token.tag_``. Returns the docs and counts
    (``documents``, ``repaired``).
    """
    docs: List[Doc] = []
    counts = {"documents": 0, "repaired": 0}
    for lines in _blocks(text):
        rows = [line.split() for line in lines if line.strip()]
        kept = [r for r in rows if r[0] != "-DOCSTART-"]
        counts["documents"] += len(rows) - len(kept)
        if not kept:
            continue
        if any(len(r) < 2 for r in kept):
            bad = next(r for r in kept if len(r) < 2)
            raise ValueError(Errors.E091.format(line=" ".join(bad)))
        words = [r[0] for r in kept]
        bad_tags = [r[-1] for r in kept if r[-1] != "O" and not _is_iob(r[-1])]
        if bad_tags:
            raise ValueError(Errors.E093.format(words=" ".join(words[:10]),
                                                err=f"'{bad_tags[0]}'"))
        tags, changed = repair_iob([r[-1] for r in kept])
        counts["repaired"] += changed
        if pos_as_tag and any(len(r) < 3 for r in kept):
            raise ValueError(Errors.E092.format(line=" ".join(next(r for r in kept if len(r) < 3))))
        doc = Doc(vocab, words=words, tags=[r[1] for r in kept] if pos_as_tag else None)
        try:
            doc.set_ents(biluo_tags_to_spans(doc, iob_to_biluo(tags)), default="outside")
        except ValueError as err:
            raise ValueError(Errors.E093.format(words=" ".join(words[:10]), err=err)) from err
        docs.append(doc)
    return docs, counts
