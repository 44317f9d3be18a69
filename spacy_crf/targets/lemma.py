"""``lemma``: ``Token.lemma_``, one edit tree per token as spaCy's edit tree
lemmatizer makes them (``"(m 0 1 () (s 's' ''))"``), each token choosing
among the trees that apply to its form; and the reading of those trees from
the strings that name them."""

import re
from collections import Counter
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import numpy as np
from spacy.attrs import LEMMA, ORTH
from spacy.pipeline._edit_tree_internals.edit_trees import EditTrees
from spacy.strings import StringStore, hash_string
from spacy.tokens import Doc, Token
from spacy.training import Example
from spacy.vocab import Vocab

from ..errors import Errors, Warnings, warn
from ..feature_sources.usual_case import USUAL_CASE_TEMPLATES
from ..features.doc_arrays import batch_strings
from .base import Target
from .lemma_case import CASES, case_of, cased_form, join_label, split_label
from .registry import register_target
from .scores import column_keys

#: the id spaCy's EditTrees gives "no subtree" (``edit_trees.NULL_TREE_ID``)
NULL_TREE = 2**32 - 1


def parse_edit_tree(label: str) -> tuple:
    """An edit tree from the string spaCy's ``EditTrees.tree_to_str`` writes.

    ``(m PREFIX_LEN SUFFIX_LEN PREFIX_TREE SUFFIX_TREE)`` is a match node
    (``()`` for no subtree), ``(s 'ORIG' 'SUBST')`` a substitution node.
    The strings are not escaped, so a parse is searched for (a quote inside
    them cannot be told from the end of the node by reading on): the first
    that reads the whole label is taken.

    Returns
    -------
    tuple
        ``("m", prefix_len, suffix_len, prefix, suffix)`` (subtrees as tuples,
        ``None`` for none) or ``("s", orig, subst)``.

    Raises
    ------
    ValueError
        E220 if ``label`` is no edit tree.
    """
    if isinstance(label, str):
        for node, end in _parse_node(label, 0):
            if end == len(label):
                return node
    raise ValueError(Errors.E220.format(label=label))


_MATCH_HEAD = re.compile(r"\(m (\d+) (\d+) ")


def _parse_node(text: str, at: int):
    """Every (node, end) that ``text[at:]`` starts with (a generator)."""
    if text.startswith("(m ", at):
        head = _MATCH_HEAD.match(text, at)
        if head is None:
            return
        for prefix, after_prefix in _parse_subtree(text, head.end()):
            if text.startswith(" ", after_prefix):
                for suffix, end in _parse_subtree(text, after_prefix + 1):
                    if text.startswith(")", end):
                        yield ("m", int(head.group(1)), int(head.group(2)), prefix, suffix), end + 1
    elif text.startswith("(s '", at):
        start = at + 4
        middle = text.find("' '", start)
        while middle >= 0:
            end = text.find("')", middle + 3)
            while end >= 0:
                yield ("s", text[start:middle], text[middle + 3:end]), end + 2
                end = text.find("')", end + 1)
            middle = text.find("' '", middle + 1)


def _parse_subtree(text: str, at: int):
    if text.startswith("()", at):
        yield None, at + 2
    else:
        yield from _parse_node(text, at)


def apply_edit_tree(node: tuple, form: str) -> Optional[str]:
    """The lemma the edit tree ``node`` (:func:`parse_edit_tree`) makes of
    ``form``, None where it does not apply: spaCy's ``EditTrees.apply``
    without its exception for a tree that does not apply (which, with the
    error message it formats, cost four times the test itself: most trees
    tried on a form do not apply)."""
    pieces: List[str] = []
    return "".join(pieces) if _apply_node(node, form, pieces) else None


def _apply_node(node: tuple, form: str, pieces: List[str]) -> bool:
    if node[0] == "s":
        if form != node[1]:
            return False
        pieces.append(node[2])
        return True
    _, prefix_len, suffix_len, prefix, suffix = node
    if prefix_len + suffix_len > len(form):
        return False
    suffix_start = len(form) - suffix_len
    if prefix is not None and not _apply_node(prefix, form[:prefix_len], pieces):
        return False
    pieces.append(form[prefix_len:suffix_start])
    return suffix is None or _apply_node(suffix, form[suffix_start:], pieces)


def edit_tree_pattern(label: str) -> str:
    """A lemma label as the rule it is, for people: ``"*ies -> *y"``, ``"was ->
    be"``, ``"* -> *"`` (the form kept), each ``*`` a stretch of characters the
    tree keeps; a case first, ``"lower: *s -> *"`` (``lemma_case.py``). A label
    that is no tree reads as it is."""
    case, tree = split_label(label)
    try:
        node = parse_edit_tree(tree)
    except ValueError:
        return label
    form, lemma = _node_pattern(node)
    return f"{case}: {form} -> {lemma}" if case else f"{form} -> {lemma}"


def _node_pattern(node: Optional[tuple]) -> Tuple[str, str]:
    if node is None:
        return "", ""
    if node[0] == "s":
        return node[1], node[2]
    prefix, suffix = _node_pattern(node[3]), _node_pattern(node[4])
    return prefix[0] + "*" + suffix[0], prefix[1] + "*" + suffix[1]


def _tree_index_key(node: tuple) -> Tuple[str, str]:
    """A test every form a tree applies to passes, for :class:`LemmaTarget`'s
    index of its trees: ``("form", s)`` the form is ``s``, ``("suffix", s)``
    it ends with ``s``, ``("prefix", s)`` it starts with ``s``, ``("any", "")``.

    A match node's suffix subtree applies to the form's end, and so on down its
    suffix subtrees: a substitution node found there must be the form's last
    characters (the prefix side likewise).
    """
    if node[0] == "s":
        return ("form", node[1])
    for side, child in (("suffix", 4), ("prefix", 3)):
        sub = node[child]
        while sub is not None and sub[0] == "m":
            sub = sub[child]
        if sub is not None:
            return (side, sub[1])
    return ("any", "")


@register_target
class LemmaTarget(Target):
    """Lemmas as edit trees, as spaCy's ``edit_tree_lemmatizer`` learns them.

    A label is the edit tree that rewrites a token's form into its lemma
    (spaCy's ``EditTrees``), named as ``EditTrees.tree_to_str`` writes it:
    ``"(m 0 1 () (s 's' ''))"`` strips a final ``s``; after a case
    (``lemma_case.py``) where the form's capitals are not the lemma's:
    ``"lower (m 0 1 () (s 's' ''))"`` takes ``Dogs`` to ``dog`` whatever the
    first letter. The labels describe their trees, so the trees are saved
    with the component's cfg and come back with it, and ``add_label`` takes a
    label string.

    * Gold: the tree of each token's (form, lemma); a token without a lemma
      is unannotated. Trees seen fewer than :attr:`MIN_TREE_FREQ` times in the
      corpus ``initialize`` reads are left out of the labels, as spaCy's
      lemmatizer prunes them (``min_tree_freq = 3``); their tokens, and gold
      whose tree is no label, are unannotated (W035).
    * Candidates: a token may only take a tree that applies to its form
      (:meth:`allowed_labels`, the component puts the others at ``-inf``).
      Which trees apply to a form is worked out once per distinct form and
      kept (an index of the trees by the suffix, prefix or whole form they
      need gives the few worth trying).
    * Writing: ``Token.lemma_``, the tree applied to the form; where no tree
      applies to a form (its candidates are then left open), the lemma backs
      off to the form itself, as spaCy's lemmatizer's ``backoff = "orth"``.
    """

    name = score_attr = "lemma"
    assigns = ("token.lemma",)
    many_labels = True  # 531 trees seen 3+ times in UD English EWT's training split
    #: as spaCy's lemmatizers (overwrite = false): lemmas a rule or a lookup
    #: set before it stay
    keeps_existing = True
    #: what spaCy's lemma tables say of the word and its neighbours
    #: (``feature_sources/lemma_lookups.py``), where spacy-lookups-data has them
    #: for the pipeline's language: +0.41 lemma_acc on UD English EWT dev
    #: (docs/features.md, "spaCy's lemma tables")
    #: and how the word is usually written (``feature_sources/usual_case.py``):
    #: whether a capitalized form keeps its capital ("Texas") or not
    #: ("Military" in a title), +0.16 on dev. A language reads the columns its
    #: tables have: Greek's rules also cover DET and PROPN, and it has no
    #: lookup table (UD Greek GDT, plain loop, 3 seeds: test lemma_acc 93.06
    #: -> 93.29; English has neither column, and reads as before)
    optional_templates = ("LOOKUP_LEMMA[-1..1]", "RULE_LEMMA_ADJ", "RULE_LEMMA_ADV",
                          "RULE_LEMMA_NOUN", "RULE_LEMMA_VERB",
                          "LOOKUP_LEMMA|RULE_LEMMA_ADJ|RULE_LEMMA_ADV"
                          "|RULE_LEMMA_NOUN|RULE_LEMMA_VERB",
                          "RULE_LEMMA_DET", "RULE_LEMMA_PROPN",
                          "RULE_LEMMA_ADJ|RULE_LEMMA_ADV|RULE_LEMMA_DET|RULE_LEMMA_NOUN"
                          "|RULE_LEMMA_PROPN|RULE_LEMMA_VERB") + USUAL_CASE_TEMPLATES
    warns_without_optional_sources = True
    #: trees seen fewer times in the corpus ``initialize`` reads are no label
    #: (spaCy's ``edit_tree_lemmatizer``'s ``min_tree_freq``), unless that
    #: leaves none
    MIN_TREE_FREQ = 3
    #: distinct forms whose candidate trees are kept
    CACHE_SIZE = 500_000

    def __init__(self) -> None:
        super().__init__()
        # trees of gold (form, lemma) pairs, only to name them: strings of their own
        self._gold_trees = EditTrees(StringStore())
        self._pair_keys: Dict[Tuple[int, int], int] = {}
        self._tree_names: Dict[int, Tuple[str, str, str]] = {}  # key -> (tree, form, lemma)
        self._counts: Counter = Counter()  # of each tree, while initialize reads the corpus
        self._reset_trees()

    def _reset_trees(self) -> None:
        self._tree_strings = StringStore()
        self._trees = EditTrees(self._tree_strings)  # the labels' trees
        self._tree_ids: List[int] = []
        self._nodes: List[tuple] = []  # each label's tree, parsed (parse_edit_tree)
        self._cases: List[str] = []  # the case each label applies first (lemma_case.py)
        # (case, kind, string) -> the labels of that case whose trees need it
        self._index: Dict[Tuple[str, str, str], List[int]] = {}
        self._suffix_lengths: List[int] = []
        self._prefix_lengths: List[int] = []
        # form -> the label ids whose trees apply, sorted (their lemmas are not
        # kept: 45 strings a form took 3.7 KB, 1.8 GB for a full cache)
        self._candidates: Dict[str, np.ndarray] = {}
        # (form's ORTH key, label id) -> the key of the lemma written for it
        self._lemma_keys: Dict[Tuple[int, int], int] = {}

    def set_labels(self, labels: Sequence[str], vocab: Vocab) -> None:
        split = [split_label(label) for label in labels]
        nodes = [parse_edit_tree(tree) for _, tree in split]  # E220 before anything changes
        self._reset_trees()
        flat: List[dict] = []
        seen: Dict[tuple, int] = {}
        self._tree_ids = [self._flatten(node, flat, seen) for node in nodes]
        self._nodes = nodes
        self._trees.from_json(flat)
        for label, (_, text), tree in zip(labels, split, self._tree_ids):
            if self._trees.tree_to_str(tree) != text:  # e.g. "(m 1 0 () ())" written "(m 01 0 ...)"
                raise ValueError(Errors.E220.format(label=label))
        self._cases = [case for case, _ in split]
        for i, (case, node) in enumerate(zip(self._cases, nodes)):
            self._index.setdefault((case, *_tree_index_key(node)), []).append(i)
        self._suffix_lengths = sorted({len(s) for _, kind, s in self._index if kind == "suffix"})
        self._prefix_lengths = sorted({len(s) for _, kind, s in self._index if kind == "prefix"})
        self._counts = Counter()  # the labels are chosen: a new initialize counts afresh
        super().set_labels(labels, vocab)

    def _flatten(self, node: Optional[tuple], flat: List[dict], seen: Dict[tuple, int]) -> int:
        """Add ``node`` and its subtrees to ``flat`` (``EditTrees.from_json``'s
        list, subtrees by position) once each; its position."""
        if node is None:
            return NULL_TREE
        if node[0] == "m":
            entry = {"prefix_len": node[1], "suffix_len": node[2],
                     "prefix_tree": self._flatten(node[3], flat, seen),
                     "suffix_tree": self._flatten(node[4], flat, seen)}
        else:
            entry = {"orig": self._tree_strings.add(node[1]),
                     "subst": self._tree_strings.add(node[2])}
        key = tuple(entry.items())
        if key not in seen:
            seen[key] = len(flat)
            flat.append(entry)
        return seen[key]

    def key_of(self, label: str, vocab: Vocab) -> int:
        return hash_string(label)

    def labels_for(self, label: str) -> List[str]:
        """The labels ``add_label(label)`` adds: ``label``, an edit tree string,
        with a case before it or not (``"lower (m 0 1 () (s 's' ''))"``; E220)."""
        parse_edit_tree(split_label(label)[1])
        return [label]

    def _pair_key(self, strings, orth: int, lemma: int) -> int:
        """The key of the tree of a (form, lemma) pair (0 for no lemma)."""
        if not lemma:
            return 0
        key = self._pair_keys.get((orth, lemma))
        if key is None:
            form, lem = strings[orth], strings[lemma]
            case = case_of(form, lem)  # the case first, then a tree of any letter
            # past CACHE_SIZE trees (lemmas a doc brings to predictions kept
            # as they are, keep_existing), a tree is named in a table of its
            # own and not kept: the tables stay bounded
            full = len(self._tree_names) >= self.CACHE_SIZE
            trees = EditTrees(StringStore()) if full else self._gold_trees
            tree = join_label(case, trees.tree_to_str(trees.add(CASES[case](form), lem)))
            key = hash_string(tree)
            if not full:
                self._tree_names.setdefault(key, (tree, form, lem))
            if len(self._pair_keys) < self.CACHE_SIZE:
                self._pair_keys[(orth, lemma)] = key
        return key

    def reference_keys(self, doc: Doc) -> np.ndarray:
        if not len(doc):
            return np.zeros(0, dtype=np.uint64)
        pairs = doc.to_array([ORTH, LEMMA]).astype(np.uint64).reshape(len(doc), 2)
        if not pairs[:, 1].any():  # no lemma at all: nothing to name
            return np.zeros(len(doc), dtype=np.uint64)
        unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
        keys = np.asarray([self._pair_key(doc.vocab.strings, orth, lemma)
                           for orth, lemma in unique.tolist()], dtype=np.uint64)
        return keys[inverse.reshape(-1)]

    def label_names(self, labels: Sequence[str]) -> List[str]:
        """Each tree as its rule, ``"*s -> *"`` (:func:`edit_tree_pattern`)."""
        return [edit_tree_pattern(label) for label in labels]

    def label_strings(self, doc: Doc) -> List[str]:
        keys = self.reference_keys(doc)
        keys = keys[keys != 0]
        unique, counts = np.unique(keys, return_counts=True)
        # (a tree past CACHE_SIZE distinct ones has no name: no label either)
        names = [self._tree_names[key][0] for key in unique.tolist() if key in self._tree_names]
        counts = [n for key, n in zip(unique.tolist(), counts.tolist()) if key in self._tree_names]
        # counted for order_labels, which leaves the rare trees out
        self._counts.update(dict(zip(names, counts)))
        return names

    def order_labels(self, labels: Iterable[str]) -> List[str]:
        """The trees sorted, less those the corpus read since the labels were
        last set has fewer than :attr:`MIN_TREE_FREQ` times (trees it has not
        had, given or added, stay), unless no tree is that frequent."""
        labels = set(labels)
        counts = {label: self._counts.get(label, self.MIN_TREE_FREQ) for label in labels}
        return sorted(self.kept_labels(counts))

    def kept_labels(self, counts: Dict[str, int]) -> Set[str]:
        """The trees seen at least :attr:`MIN_TREE_FREQ` times, unless none is."""
        frequent = {label for label, n in counts.items() if n >= self.MIN_TREE_FREQ}
        return frequent if frequent else set(counts)

    def string_of(self, doc: Doc, key: int) -> str:
        named = self._tree_names.get(key)
        return named[0] if named else f"an edit tree past the first {self.CACHE_SIZE:,} named"

    def _warn_unknown(self, reference: Doc, keys: np.ndarray, ids: np.ndarray) -> None:
        """W035, once per component, for gold lemmas whose tree is no label
        (rare trees, left out at initialize, come up in every batch: one
        warning says it, not one per tree)."""
        unknown = keys[(keys != 0) & (ids < 0)]
        named = [key for key in unknown.tolist() if key in self._tree_names]
        if named and self.first_time("W035"):
            tree, form, lemma = self._tree_names[named[0]]
            warn(Warnings.W035.format(n=int(unknown.size), form=form, lemma=lemma, tree=tree,
                                      min_freq=self.MIN_TREE_FREQ))

    def gold_ids(self, example: Example) -> np.ndarray:
        """Gold tree ids (see :meth:`Target.gold_ids`), -1 also where the tree
        does not apply to the predicted token's form (W036): the token could
        not take it."""
        gold = super().gold_ids(example)
        known = np.flatnonzero(gold >= 0)
        if not len(known):
            return gold
        allowed = self.allowed_labels([example.predicted])
        bad = known[~allowed[known, gold[known]]]
        if len(bad):
            if self.first_time("W036"):
                warn(Warnings.W036.format(n=len(bad), form=example.predicted[int(bad[0])].text,
                                          tree=self._labels[int(gold[bad[0]])]))
            gold[bad] = -1
        return gold

    def candidates(self, form: str) -> Tuple[np.ndarray, List[str]]:
        """The label ids whose trees apply to ``form`` (sorted) and the lemma
        each gives it."""
        ids = self._candidate_ids(form)
        return ids, [self._lemma_of(form, i) for i in ids.tolist()]

    def _candidate_ids(self, form: str) -> np.ndarray:
        """The label ids whose trees apply to ``form``, sorted: those that give
        it a lemma, not an empty one (a tree learned from "children" -> "child"
        cuts "ren" to nothing); worked out once per form."""
        found = self._candidates.get(form)
        if found is not None:
            return found
        index = self._index
        tried: Dict[int, str] = {}  # label -> the form its tree reads (its case applied)
        for case in set(self._cases):
            text = cased_form(case, form)
            if text is None:  # the case changes nothing: the plain labels serve
                continue
            keys = [("form", text), ("any", "")]
            keys += [("suffix", text[len(text) - n:]) for n in self._suffix_lengths
                     if n <= len(text)]
            keys += [("prefix", text[:n]) for n in self._prefix_lengths if n <= len(text)]
            for key in keys:
                for i in index.get((case, *key), ()):
                    tried[i] = text
        nodes = self._nodes
        # (apply_edit_tree gives None where the tree does not apply)
        found = np.asarray([i for i in sorted(tried) if apply_edit_tree(nodes[i], tried[i])],
                           dtype=np.int32)
        if len(self._candidates) < self.CACHE_SIZE:
            self._candidates[form] = found
        return found

    def allowed_labels(self, docs: Sequence[Doc]) -> Optional[np.ndarray]:
        """(N, L) bool over the docs' tokens: the trees that apply to each
        token's form (a row of False where none does). Each distinct form of
        the batch is looked up once."""
        docs = [doc for doc in docs if len(doc)]
        n_labels = len(self._labels)
        if not docs:
            return np.zeros((0, n_labels), dtype=bool)
        orths = np.concatenate([doc.to_array(ORTH).astype(np.uint64).reshape(-1) for doc in docs])
        unique, inverse = np.unique(orths, return_inverse=True)
        strings = batch_strings(docs)  # (docs of several vocabs: each read in its own)
        ids = [self._candidate_ids(strings[orth]) for orth in unique.tolist()]
        rows = np.zeros((len(unique), n_labels), dtype=bool)
        # one assignment for the batch, not one per form (a batch has a form at least)
        rows[np.repeat(np.arange(len(ids)), [len(i) for i in ids]), np.concatenate(ids)] = True
        return rows[inverse.reshape(-1)]

    def has_existing(self, doc: Doc) -> bool:
        return doc.has_annotation("LEMMA")

    def write(self, doc: Doc, ids: np.ndarray) -> None:
        self.write_batch([doc], ids, np.asarray([len(doc)]), False)

    def write_batch(self, docs: Sequence[Doc], label_ids: np.ndarray, doc_lengths: np.ndarray,
                    keep_existing: bool) -> None:
        """``Token.lemma_``: each token's tree applied to its form, the form
        itself where the tree does not apply (no tree applies to the form:
        ``backoff = "orth"``); with ``keep_existing``, a lemma already there stays."""
        live = [doc for doc in docs if len(doc)]
        if not live:
            return
        if len({id(doc.vocab) for doc in live}) > 1:
            # each lemma's key goes into the strings of its doc's own vocab
            self._write_by_vocab(docs, label_ids, doc_lengths, keep_existing)
            return
        strings = live[0].vocab.strings
        orths = np.concatenate([doc.to_array(ORTH).astype(np.uint64).reshape(-1) for doc in live])
        label_ids = np.asarray(label_ids, dtype=np.int64).reshape(-1)
        # each distinct (form, tree) of the batch once, looked up in those
        # of earlier batches: in a long run most are (a tree applied anew
        # cost 13 us, its lemma's key looked up 0.1). A pair is numbered
        # form * n_trees + tree over the batch's distinct forms: one exact
        # int64 per token, whose np.unique is 5x that of the (orth, tree) rows
        forms, form_of = np.unique(orths, return_inverse=True)
        n_trees = int(label_ids.max()) + 1
        pairs, inverse = np.unique(form_of.reshape(-1) * n_trees + label_ids,
                                   return_inverse=True)
        keys = np.asarray([self._lemma_key(pair, strings) for pair in
                           zip(forms[pairs // n_trees].tolist(), (pairs % n_trees).tolist())],
                          dtype=np.uint64)
        values = keys[inverse.reshape(-1)]
        end = 0
        for doc in live:
            n = len(doc)
            end += n
            mine = values[end - n:end]
            if keep_existing:
                there = doc.to_array(LEMMA).astype(np.uint64).reshape(-1)
                mine = np.where(there != 0, there, mine)
            doc.from_array([LEMMA], mine)

    def _write_by_vocab(self, docs: Sequence[Doc], label_ids: np.ndarray,
                        doc_lengths: np.ndarray, keep_existing: bool) -> None:
        """:meth:`write_batch` for the docs of each vocab apart."""
        starts = np.cumsum(doc_lengths) - doc_lengths
        groups: Dict[int, List[int]] = {}
        for i, doc in enumerate(docs):
            groups.setdefault(id(doc.vocab), []).append(i)
        for members in groups.values():
            ids = [label_ids[starts[i]:starts[i] + doc_lengths[i]] for i in members]
            self.write_batch([docs[i] for i in members], np.concatenate(ids),
                             doc_lengths[members], keep_existing)

    def _lemma_key(self, pair: Tuple[int, int], strings: StringStore) -> int:
        """The key of the lemma tree ``pair[1]`` gives the form of key
        ``pair[0]``, in ``strings``; kept for the next batches."""
        key = self._lemma_keys.get(pair)
        if key is not None and key in strings:
            return key
        key = strings.add(self._lemma_of(strings[pair[0]], pair[1]))
        if len(self._lemma_keys) < self.CACHE_SIZE:
            self._lemma_keys[pair] = key
        return key

    def _lemma_of(self, form: str, label: int) -> str:
        """The lemma tree ``label`` gives ``form``; the form where it does not
        apply, or would leave nothing (as :meth:`_candidate_ids` has it)."""
        text = cased_form(self._cases[label], form)
        lemma = None if text is None else apply_edit_tree(self._nodes[label], text)
        return lemma or form

    def getter(self) -> Callable[[Token, str], object]:
        return lambda token, _: token.lemma_

    #: the lemma itself beside the tree that is the label (a backed-off form has no tree)
    record_fields = ("lemma",)

    def record_values(self, doc: Doc) -> Dict[str, List[Any]]:
        return {"lemma": [token.lemma_ for token in doc]}

    def score_keys(self, doc: Doc) -> np.ndarray:
        # Token.lemma_ compared as spaCy's lemmatizers score it, not the trees
        # (two trees may give a form one lemma)
        return column_keys(LEMMA)(doc)
