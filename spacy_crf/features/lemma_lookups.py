"""What spaCy's lemma tables say of a word: the edit from the word to the lemma
of the lookup table (``lemma_lookup``) and to the lemma the rule lemmatizer
would give it under each coarse POS (``lemma_rules``, ``lemma_index``,
``lemma_exc``), as spacy-lookups-data ships them for the pipeline's language.

A word's values are computed once per word type, from its lowercase form (the
rule lemmatizer lowercases a word before anything, and the lookup table's
keys are lowercase but for a few hundred proper nouns), into a
:class:`~.word_table.WordTable` keyed by ``LOWER``. The tables' forms written
with capitals (the lookup table's "Americans", Greek's proper-noun exceptions
"Αγρινίου", French index lemmas "Deutéronome") are read by their lowercase
form too, with their lemmas lowercased, where the table has no lowercase entry
of its own: spaCy's rule lemmatizer looks the lowercase form up, so as written
it never meets them, and neither would a word of ours:

* ``lookup``: the edit from the form to ``lemma_lookup[form]`` (lowercased);
* ``rule:POS``: the edit to the first lemma of spaCy's ``rule_lemmatize`` for
  the POS (its exceptions, then the rules' results found in its index, in its
  order), or to the form itself where the form is in the index and no rule
  gives an indexed lemma. Where the rules only guess (no exception, no
  indexed result: spaCy would then take the first rule's result or the form
  as it is), the word has no value, so a word the tables do not know reads
  the same whether it was seen at ``initialize`` or not: the table holds
  every form the rules map onto an indexed lemma (each lemma of the index
  inflected by each rule backwards) and every exception.

An edit is the edit tree spaCy's ``edit_tree_lemmatizer`` would make of the
(form, lemma) pair (``EditTrees``, ``"(m 0 3 () (s 'ies' 'y'))"``), the lemma
target's labels: a word whose tables' lemma is right reads the very label it
should take, and the weight of that (value, label) pair is learned from every
word that takes the same edit. The table stores ids of those strings (from 1,
0 for none), with the strings beside them.
"""

from typing import Any, Dict, List, Optional, Sequence, Set

import numpy as np
from spacy.pipeline._edit_tree_internals.edit_trees import EditTrees
from spacy.strings import StringStore

from .lookups_data import (cache_file, once_per_language, paused_gc, read_cache, table_source,
                           write_cache)
from .word_table import WordTable, word_keys

LOOKUP_TABLE = "lemma_lookup"
RULE_TABLES = ("lemma_rules", "lemma_index", "lemma_exc")
#: the column of the lookup table's lemma; a rule column is ``RULE_COLUMN + pos``
LOOKUP_COLUMN = "lookup"
RULE_COLUMN = "rule:"
#: bumped when what a column holds changes: cached tables of another version are not read
#: (2: exception forms and index lemmas written with capitals are read by their lowercase)
VERSION = 2



class LemmaTables:
    """spaCy's lemma tables of one language, as spacy-lookups-data ships them.

    Parameters
    ----------
    lookup : dict
        ``lemma_lookup``: form -> lemma, or lemmas (French and Catalan list
        them: the first is read); empty where the language has none.
    rules, index, exceptions : dict
        ``lemma_rules``, ``lemma_index`` and ``lemma_exc`` by lowercase coarse
        POS (``"noun"``): suffix rules ``[old, new]``, known lemmas, form ->
        lemmas. They are read as spaCy's base ``Lemmatizer.rule_lemmatize``
        (English's) reads them; where a language's lemmatizer keys them
        otherwise (Spanish's rules by POS and features, ``verb_fin_ind``),
        the entries that are no such rule or POS are not read.
    """

    def __init__(self, lookup: Dict[str, Any], rules: Dict[str, Any], index: Dict[str, Any],
                 exceptions: Dict[str, Any]) -> None:
        lemmas = {form: _first(lemma) for form, lemma in lookup.items()}
        lemmas = {form: lemma for form, lemma in lemmas.items() if lemma}
        # the table's few capitalised keys ("Americans") are read by their
        # lowercase form, where the table has no lowercase key of its own
        self.lowercase_lookup = {form.lower(): lemma for form, lemma in lemmas.items()
                                 if form != form.lower()}
        self.lowercase_lookup.update((form, lemma) for form, lemma in lemmas.items()
                                     if form == form.lower())
        self.rules = {pos: [(pair[0], pair[1]) for pair in pairs if _is_rule(pair)]
                      for pos, pairs in rules.items() if isinstance(pairs, list)}
        # words are looked up by their lowercase form: the index's lemmas and the
        # exceptions' forms written with capitals are kept lowercase to be found
        self.index = {pos: {word.lower() for word in words if isinstance(word, str)}
                      for pos, words in index.items() if isinstance(words, list)}
        self.exceptions = {pos: _lowercase_exceptions(table)
                           for pos, table in exceptions.items() if isinstance(table, dict)}

    @property
    def rule_pos(self) -> List[str]:
        """The coarse POS (upper case) whose rule tables know some lemma (an
        index or exceptions: rules alone only guess), sorted."""
        return sorted({pos.upper() for table in (self.index, self.exceptions)
                       for pos, value in table.items() if value})

    def columns(self) -> List[str]:
        """The table's columns: the lookup table's, then a rule column per POS."""
        return ([LOOKUP_COLUMN] if self.lowercase_lookup else []) + [RULE_COLUMN + pos
                                                          for pos in self.rule_pos]

    def lookup_lemma(self, form: str) -> Optional[str]:
        """``lemma_lookup``'s lemma of ``form`` (lowercase), lowercased; None where it has none."""
        lemma = self.lowercase_lookup.get(form)
        return lemma.lower() if lemma else None

    def rule_lemma(self, pos: str, form: str) -> Optional[str]:
        """The lemma spaCy's ``rule_lemmatize`` gives the lowercase ``form``
        under ``pos`` (``"noun"``) where its tables know it: its exceptions
        first, then the rules' results found in the index (the last rule's
        first, as spaCy orders them); else ``form`` where the index holds it;
        else None (spaCy would guess: the first rule's result, or the form)."""
        index = self.index.get(pos, set())
        forms: List[str] = []
        for old, new in self.rules.get(pos, ()):
            if form.endswith(old):
                lemma = form[:len(form) - len(old)] + new
                if lemma and lemma in index:
                    forms.insert(0, lemma)
        forms = list(dict.fromkeys(forms))
        for lemma in self.exceptions.get(pos, {}).get(form, ()):
            if lemma not in forms:
                forms.insert(0, lemma)
        if forms:
            return forms[0]
        return form if form in index else None

    def words(self) -> Set[str]:
        """Every lowercase form some column has a value for: the lookup table's
        forms, the exceptions' forms, the index's lemmas and each of them
        inflected by each rule backwards (the forms a rule maps onto it)."""
        words = set(self.lowercase_lookup)
        for pos, index in self.index.items():
            words |= index
            for old, new in self.rules.get(pos, ()):
                cut = len(new)
                words.update(lemma[:len(lemma) - cut] + old for lemma in index
                             if lemma.endswith(new))
        for table in self.exceptions.values():
            words.update(table)
        words.discard("")
        return words

    def rule_lemmas(self, pos: str) -> Dict[str, str]:
        """Lowercase form -> the indexed lemma the last of ``pos``'s rules that
        maps it onto one gives it, for every such form: :meth:`rule_lemma` of
        a form without exceptions, less the index's own forms, computed from
        the index backwards (each lemma inflected by each rule) rather than
        by trying every rule on every word."""
        index = self.index.get(pos, set())
        lemmas: Dict[str, str] = {}
        for old, new in self.rules.get(pos, ()):  # a later rule's lemma replaces an earlier's
            cut = len(new)
            lemmas.update((lemma[:len(lemma) - cut] + old, lemma) for lemma in index
                          if lemma and lemma.endswith(new))
        return lemmas


def _lowercase_exceptions(table: Dict[str, Any]) -> Dict[str, List[str]]:
    """``lemma_exc``'s form -> lemmas of a POS, keyed by lowercase form.

    A form written with capitals ("Αγρινίου" -> "Αγρίνιο") is read by its
    lowercase form with its lemmas lowercased, so that its edit is the one
    from the form as written to its lemma as written ("Αγρινίου" ->
    "Αγρίνιο" and "αγρινίου" -> "αγρίνιο" make the same tree). A form also
    written in lowercase keeps the lowercase entry, as it is.
    """
    folded = {form.lower(): [lemma.lower() for lemma in _lemma_list(value)]
              for form, value in table.items() if form != form.lower()}
    folded.update((form, _lemma_list(value)) for form, value in table.items()
                  if form == form.lower())
    return folded


def _lemma_list(value: Any) -> List[str]:
    """An exception's lemmas: the string, or the strings of a list of them."""
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, (list, tuple)) else []


def _first(lemma: Any) -> Optional[str]:
    """A lookup table's lemma: the string, or the first of a list of them."""
    if isinstance(lemma, list):
        lemma = lemma[0] if lemma else None
    return lemma if isinstance(lemma, str) else None


def _is_rule(pair: Any) -> bool:
    """Whether ``pair`` is a suffix rule ``[old, new]``."""
    return (isinstance(pair, (list, tuple)) and len(pair) == 2
            and all(isinstance(part, str) for part in pair))


class LemmaTable:
    """Word (``LOWER``) -> an edit id per column, and the edits they name.

    The ids are small (English's tables make 686 edits), so a word's columns
    are packed into as few uint64 as hold them, ``bits`` bits each: the
    English table of five columns is one value a word, not five.

    Parameters
    ----------
    table : WordTable
        Keyed by ``LOWER``; the packed ids.
    columns : sequence of str
        ``"lookup"``, ``"rule:NOUN"``, ...: the packed columns in order.
    edits : sequence of str
        The edit tree strings; id ``i`` (from 1) is ``edits[i - 1]``.
    bits : int
        Bits a column takes in the packed values.
    """

    def __init__(self, table: WordTable, columns: Sequence[str], edits: Sequence[str],
                 bits: int) -> None:
        bits = int(bits)
        if not 1 <= bits <= 63 or table.n_columns != -(-len(columns) // (63 // bits)):
            raise ValueError(f"a lemma table of {len(columns)} columns of {bits} bits does "
                             f"not pack into {table.n_columns} values a word")
        if table.key_attr != "LOWER":
            raise ValueError("a lemma table is keyed by LOWER")
        self.table = table
        self.columns = list(columns)
        self.edits = list(edits)
        self.bits = bits

    @classmethod
    def from_ids(cls, keys: np.ndarray, ids: np.ndarray, columns: Sequence[str],
                 edits: Sequence[str]) -> "LemmaTable":
        """The table of ``(len(keys), len(columns))`` edit ids (0: none), packed."""
        ids = np.asarray(ids, dtype=np.uint64).reshape(len(keys), len(columns))
        bits = max(1, int(ids.max(initial=0)).bit_length())
        per_value = 63 // bits
        packed = np.zeros((len(keys), -(-len(columns) // per_value)), dtype=np.uint64)
        for j in range(len(columns)):
            packed[:, j // per_value] |= ids[:, j] << np.uint64(bits * (j % per_value))
        return cls(WordTable(keys, packed, "LOWER"), columns, edits, bits)

    def column_ids(self, values: np.ndarray, column: str) -> np.ndarray:
        """The ids of ``column`` in packed ``values`` (rows of the word table)."""
        j = self.columns.index(column)
        per_value = 63 // self.bits
        shifted = values[:, j // per_value] >> np.uint64(self.bits * (j % per_value))
        return shifted & np.uint64((1 << self.bits) - 1)

    def select(self, columns: Sequence[str]) -> "LemmaTable":
        """The table of ``columns`` alone, of the words with a value in one of them."""
        ids = np.stack([self.column_ids(self.table.values, column) for column in columns],
                       axis=1)
        kept = ids.any(axis=1)
        return LemmaTable.from_ids(self.table.keys[kept], ids[kept], columns, self.edits)

    def edit_of(self, word: str, column: str, strings: StringStore) -> Optional[str]:
        """The edit string ``column`` holds for ``word`` (None: no value)."""
        key = np.asarray([strings.add(word.lower())], dtype=np.uint64)
        value = int(self.column_ids(self.table.lookup(key), column)[0])
        return self.edits[value - 1] if value else None

    def to_dict(self) -> Dict[str, Any]:
        """Arrays and lists, for msgpack."""
        return {"table": self.table.to_dict(), "columns": self.columns, "edits": self.edits,
                "bits": self.bits}

    @classmethod
    def from_dict(cls, msg: Dict[str, Any]) -> "LemmaTable":
        """The table of :meth:`to_dict` (ValueError for an incomplete one)."""
        try:
            return cls(WordTable.from_dict(msg["table"]), msg["columns"], msg["edits"],
                       msg["bits"])
        except (KeyError, TypeError) as err:
            raise ValueError(f"a saved lemma table is incomplete: {err!r}") from err


def build_lemma_table(tables: LemmaTables) -> Optional[LemmaTable]:
    """Every column of ``tables`` for every word some column has a value for
    (None where the tables hold none). English: 246k words, about 1 s."""
    columns = tables.columns()
    if not columns:
        return None
    words = sorted(tables.words())
    trees = EditTrees(StringStore())
    edit_ids: Dict[int, int] = {}  # tree id -> edit id (from 1)

    def edit_id(form: str, lemma: Optional[str]) -> int:
        if not lemma:
            return 0
        # the trees of spaCy's edit tree lemmatizer: one id per distinct tree
        return edit_ids.setdefault(trees.add(form, lemma), len(edit_ids) + 1)

    rule_pos = [column[len(RULE_COLUMN):].lower() for column in columns
                if column.startswith(RULE_COLUMN)]
    # each column's lemma of every word (the rules' from a dict made once per
    # POS, not a try of every rule on every word; a form with exceptions takes
    # the whole of rule_lemma), then the edit ids, row by row: an edit's id is
    # the order in which the rows first meet it
    lemmas: List[List[Optional[str]]] = []
    if columns[0] == LOOKUP_COLUMN:
        lemmas.append([tables.lookup_lemma(word) for word in words])
    for pos in rule_pos:
        rule_lemmas, index = tables.rule_lemmas(pos), tables.index.get(pos, set())
        exceptions = tables.exceptions.get(pos, {})
        lemmas.append([tables.rule_lemma(pos, word) if word in exceptions
                       else rule_lemmas.get(word) or (word if word in index else None)
                       for word in words])
    ids = np.array([[edit_id(word, lemma) if lemma else 0 for lemma in row_lemmas]
                    for word, *row_lemmas in zip(words, *lemmas)],
                   dtype=np.int64).reshape(len(words), len(columns))
    kept = ids.any(axis=1)
    if not kept.any():
        return None
    keys = word_keys(word for word, keep in zip(words, kept) if keep)
    edits = [trees.tree_to_str(tree) for tree in sorted(edit_ids, key=edit_ids.get)]
    return LemmaTable.from_ids(keys, ids[kept], columns, edits)


@once_per_language
def lookups_data_lemma_table(lang: str) -> Optional[LemmaTable]:
    """The lemma table of spacy-lookups-data's tables for ``lang``, made once
    per process (and kept in :func:`~.lookups_data.cache_dir` for the next);
    None where the package is not installed or has no lemma table for the language."""
    return _make_lemma_table(lang)


def _make_lemma_table(lang: str) -> Optional[LemmaTable]:
    from spacy.lookups import load_language_data

    sources = {name: table_source(lang, name) for name in (LOOKUP_TABLE, *RULE_TABLES)}
    sources = {name: path for name, path in sources.items() if path is not None}
    if LOOKUP_TABLE not in sources and "lemma_rules" not in sources:
        return None
    stem = f"{lang}_lemma_tables_v{VERSION}"
    cached = cache_file(list(sources.values()), stem)
    arrays = read_cache(cached)
    if arrays is not None:
        try:
            return LemmaTable(WordTable(arrays["keys"], arrays["values"], "LOWER"),
                              arrays["columns"].tolist(), arrays["edits"].tolist(),
                              int(arrays["bits"]))
        except (KeyError, ValueError):  # a cache of another layout: made anew below
            pass
    with paused_gc():
        data = {name: load_language_data(path) for name, path in sources.items()}
        table = build_lemma_table(LemmaTables(data.get(LOOKUP_TABLE, {}),
                                              data.get("lemma_rules", {}),
                                              data.get("lemma_index", {}),
                                              data.get("lemma_exc", {})))
    if table is not None:
        write_cache(cached, {"keys": table.table.keys, "values": table.table.values,
                             "columns": np.asarray(table.columns), "bits": table.bits,
                             "edits": np.asarray(table.edits)}, stem)
    return table
