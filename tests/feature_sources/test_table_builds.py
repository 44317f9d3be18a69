"""The tables built from spacy-lookups-data (usual case, Brown clusters, lemma
edits) come out the same, array for array and byte for byte, as the simpler
builds they replaced (kept here as the reference): the faster builds change
how long the first ``initialize`` takes, never what a feature reads."""

from typing import Dict, Optional

import numpy as np
import pytest
from spacy.pipeline._edit_tree_internals.edit_trees import EditTrees
from spacy.strings import StringStore

from spacy_crf.features import brown_clusters, lemma_lookups, usual_case
from spacy_crf.features.lemma_lookups import LOOKUP_COLUMN, RULE_COLUMN, LemmaTable, LemmaTables
from spacy_crf.features.usual_case import FLOOR, MIN_LOGPROB, case_value
from spacy_crf.features.word_table import table_from_items, word_keys

# ------------------------------------------------------------------ the reference builds


def reference_usual_case_table(probs):
    forms: Dict[str, Dict[str, float]] = {}
    for form, logprob in probs.items():
        lower = form.lower()
        if form in (lower, lower.capitalize(), lower.upper()) and lower.isalpha():
            forms.setdefault(lower, {})[form] = float(logprob)
    words, values = [], []
    for lower, seen in forms.items():
        scores = [seen.get(form, FLOOR) for form in (lower, lower.capitalize(), lower.upper())]
        if max(scores) < MIN_LOGPROB:
            continue
        words.append(lower)
        values.append(case_value(*scores))
    if not words:
        return None
    return table_from_items(word_keys(words), values, "LOWER")


def reference_table_of_paths(data):
    values = np.fromiter(data.values(), dtype=np.int64, count=len(data))
    table = table_from_items(word_keys(data.keys()), values)
    return table if len(table) else None


def reference_lemma_table(tables: LemmaTables) -> Optional[LemmaTable]:
    columns = tables.columns()
    if not columns:
        return None
    words = sorted(tables.words())
    trees = EditTrees(StringStore())
    edit_ids: Dict[int, int] = {}

    def edit_id(form, lemma):
        if not lemma:
            return 0
        return edit_ids.setdefault(trees.add(form, lemma), len(edit_ids) + 1)

    ids = np.zeros((len(words), len(columns)), dtype=np.int64)
    rule_pos = [column[len(RULE_COLUMN):].lower() for column in columns
                if column.startswith(RULE_COLUMN)]
    first = int(columns[0] == LOOKUP_COLUMN)
    for row, word in enumerate(words):
        if first:
            ids[row, 0] = edit_id(word, tables.lookup_lemma(word))
        for j, pos in enumerate(rule_pos, first):
            ids[row, j] = edit_id(word, tables.rule_lemma(pos, word))
    kept = ids.any(axis=1)
    if not kept.any():
        return None
    keys = word_keys(word for word, keep in zip(words, kept) if keep)
    edits = [trees.tree_to_str(tree) for tree in sorted(edit_ids, key=edit_ids.get)]
    return LemmaTable.from_ids(keys, ids[kept], columns, edits)


# ------------------------------------------------------------------ comparing


def assert_same_arrays(made: Dict[str, np.ndarray], reference: Dict[str, np.ndarray]) -> None:
    assert made.keys() == reference.keys()
    for name in reference:
        a, b = np.asarray(made[name]), np.asarray(reference[name])
        assert (a.dtype, a.shape) == (b.dtype, b.shape), name
        assert a.tobytes() == b.tobytes(), name


def word_table_arrays(table):  # what lookups_data.cached_word_table writes
    return None if table is None else {"keys": table.keys, "values": table.values}


def lemma_arrays(table):  # what lemma_lookups._make_lemma_table writes
    return None if table is None else {
        "keys": table.table.keys, "values": table.table.values,
        "columns": np.asarray(table.columns), "bits": np.asarray(table.bits),
        "edits": np.asarray(table.edits)}


def assert_same(made, reference):
    if reference is None:
        assert made is None
    else:
        assert made is not None
        assert_same_arrays(made, reference)


# ------------------------------------------------------------------ small tables


@pytest.mark.parametrize("probs", [
    {"military": -9.6, "Military": -12.3, "texas": -13.0, "Texas": -10.4, "USD": -11.9,
     "usd": -14.0, "iPhone": -10.0, "rare": MIN_LOGPROB - 1, "e-mail": -9.0, "E-mail": -12.0,
     "Solo": -12.0},
    # a likely form whose lowercase form is rare, a likely spelling that is not
    # one ("iPhone"), forms whose lowercase is another word ("SS" -> "ss", not
    # "ß"; "İ" -> "i̇"), letters without case, a form exactly at MIN_LOGPROB
    {"Rare": -12.0, "rare": -20.0, "RARE": -19.0, "iPhone": -9.0, "iphone": -18.0,
     "ß": -12.0, "SS": -10.0, "ss": -19.5, "İstanbul": -11.0, "istanbul": -16.0,
     "東京": -12.0, "Edge": MIN_LOGPROB, "x1": -8.0, "": -9.0, "Ǆ": -12.0, "ǅ": -13.0},
    {"rare": MIN_LOGPROB - 0.5, "Rare": FLOOR},  # none kept
    {},
])
def test_the_usual_case_table_is_the_reference_one(probs):
    assert_same(word_table_arrays(usual_case.usual_case_table(probs)),
                word_table_arrays(reference_usual_case_table(probs)))


@pytest.mark.parametrize("data", [
    {"the": 2, "a": 0, "ORG": 5, "cat": 7, "": 3},  # a 0, a symbol, the empty string
    {"a": 0, "b": 0},  # none with a cluster
])
def test_the_brown_cluster_table_is_the_reference_one(data):
    assert_same(word_table_arrays(brown_clusters._table_of_paths(data)),
                word_table_arrays(reference_table_of_paths(data)))


@pytest.mark.parametrize("raw", [
    # rules that chain, overlap and give the same lemma; exceptions that
    # repeat a lemma, hold one the rules give too, or are empty; an index with
    # "" and capitals; a lookup of lists and capitals; a POS of exceptions alone
    ({"went": "go", "Americans": "American", "mice": ["mouse", "mice"], "x": [], "y": ""},
     {"noun": [["s", ""], ["ies", "y"], ["es", "e"], ["es", ""], ["", "s"], ["ves", "f"]],
      "verb": [["ing", ""], ["ing", "e"], ["ed", ""], ["ed", "e"], ["s", ""]],
      "adj": [["er", ""], ["est", ""], ["er", "e"]], "punct": [["“", '"']],
      "bad": "not a list"},
     {"noun": ["cat", "fly", "house", "ho", "leaf", "", "Museum", "s", "ss"],
      "verb": ["make", "mak", "walk", "be"], "adj": ["big", "nice", "nic"]},
     {"noun": {"mice": ["mouse"], "cats": ["cot", "cat", "cot"], "dogs": [],
               "Geese": ["Goose"], "geese": ["goose"], "oxen": "ox"},
      "verb": {"was": ["be"], "making": ["mak", "make", "made", "mak"]},
      "propn": {"Αγρινίου": ["Αγρίνιο"]}}),
    ({}, {"noun": [["s", ""]]}, {"noun": ["cat"]}, {}),  # no lookup table
    ({"went": "go"}, {}, {}, {}),  # the lookup table alone
    ({}, {"punct": [["“", '"']]}, {}, {}),  # nothing known: no table
])
def test_the_lemma_table_is_the_reference_one(raw):
    assert_same(lemma_arrays(lemma_lookups.build_lemma_table(LemmaTables(*raw))),
                lemma_arrays(reference_lemma_table(LemmaTables(*raw))))


def test_the_rules_lemma_of_a_form_without_exceptions_is_rule_lemmas():
    tables = LemmaTables({}, {"noun": [["s", ""], ["ies", "y"], ["es", ""], ["", "s"]]},
                         {"noun": ["cat", "fly", "box", "boxe", "s"]}, {})
    lemmas = tables.rule_lemmas("noun")
    for word in sorted(tables.words()):
        expected = tables.rule_lemma("noun", word)
        ours = lemmas.get(word) or (word if word in tables.index["noun"] else None)
        assert ours == expected, word
    assert lemmas["boxes"] == "box"  # of two rules, the last that gives an indexed lemma


# ------------------------------------------------------------------ spacy-lookups-data


def _sources(lang, *names):
    from spacy.lookups import load_language_data

    from spacy_crf.features.lookups_data import table_source

    paths = {name: table_source(lang, name) for name in names}
    if any(path is None for path in paths.values()):
        pytest.skip(f"spacy-lookups-data has no {names} for '{lang}'")
    return {name: load_language_data(path) for name, path in paths.items()}


@pytest.mark.parametrize("lang", ["en", pytest.param("de", marks=pytest.mark.slow)])
def test_spacy_lookups_data_tables_build_as_the_reference(lang):
    pytest.importorskip("spacy_lookups_data")
    probs = _sources(lang, "lexeme_prob")["lexeme_prob"]
    assert_same(word_table_arrays(usual_case.usual_case_table(probs)),
                word_table_arrays(reference_usual_case_table(probs)))
    clusters = _sources(lang, "lexeme_cluster")["lexeme_cluster"]
    assert_same(word_table_arrays(brown_clusters._table_of_paths(clusters)),
                word_table_arrays(reference_table_of_paths(clusters)))


@pytest.mark.parametrize("lang", ["en", pytest.param("el", marks=pytest.mark.slow),
                                  pytest.param("fr", marks=pytest.mark.slow)])  # 15-20 s each
def test_spacy_lookups_data_lemma_tables_build_as_the_reference(lang):
    pytest.importorskip("spacy_lookups_data")
    from spacy_crf.features.lookups_data import table_source

    names = [name for name in (lemma_lookups.LOOKUP_TABLE, *lemma_lookups.RULE_TABLES)
             if table_source(lang, name) is not None]
    data = _sources(lang, *names)
    raw = [data.get(name, {}) for name in (lemma_lookups.LOOKUP_TABLE,
                                           *lemma_lookups.RULE_TABLES)]
    made = lemma_lookups.build_lemma_table(LemmaTables(*raw))
    assert made is not None
    assert_same(lemma_arrays(made), lemma_arrays(reference_lemma_table(LemmaTables(*raw))))
