"""Word clusters, vector clusters and gazetteers as features (issue #34).

Each attribute is checked against a Python reference on small docs (spaCy's
own ``Token.cluster`` for the Brown clusters), each source of a table is
loaded, and a trained model saves, loads without its sources and predicts
bit-identically.
"""

import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import spacy
import srsly
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.vectors import Vectors

from spacy_crf._kernels.features import SEED, mix64
from spacy_crf.features import brown_clusters, lookups_data
from spacy_crf.features.brown_clusters import path_value, read_cluster_file
from spacy_crf.features.extract import extract_features
from spacy_crf.features.gazetteer import (CODE_B, CODE_I, CODE_L, CODE_U, EVERY_FOLD,
                                          Gazetteer, document_fold, read_gazetteer,
                                          training_phrases)
from spacy_crf.feature_sources import BrownClusters, GazetteerSource
from spacy_crf.features.lexicon import Lexicon
from spacy_crf.features.templates import FeatureTemplates
from spacy_crf.features.vector_clusters import kmeans, unit_rows
from spacy_crf.features.word_table import WordTable
from spacy_crf.pipeline.factory import DEFAULT_MODEL
from conftest import FROM_INITIALIZE, NO_WORD_TABLES, run_main, train

#: Brown paths of a tiny table (bit strings, first bit first)
PATHS = {"the": "0010", "a": "0011", "cat": "110", "dog": "1101", "Paris": "10",
         "London": "100", "sat": "0111"}
WORDS = "the cat sat in Paris , a dog sat in London".split()


def blank_with_clusters():
    nlp = spacy.blank("en")
    table = {w: path_value(p) for w, p in PATHS.items()}
    nlp.vocab.lookups.add_table("lexeme_cluster", table)
    return nlp


def strings_of(table, strings):
    """``{word: value}`` for the words of ``table`` that ``strings`` knows (a
    table keeps hashes, not texts)."""
    return {strings[key]: value for key, value in zip(table.keys.tolist(), table.values[:, 0].tolist())
            if key in strings}


def reference_ids(doc, attr_value, k=0, offset=0):
    """What hash_templates gives a one-part template at position k, in Python."""
    out = []
    for t in range(len(doc)):
        u = t + offset
        if 0 <= u < len(doc):
            v = np.uint64(attr_value(doc[u]))
        else:
            v = np.uint64(0x9E3779B97F4A7C15) + np.uint64(offset + 1024)
        out.append(mix64(mix64(SEED, np.uint64(k)), v))
    return np.asarray(out, dtype=np.uint64)


# -- templates -----------------------------------------------------------------

def test_word_representation_attributes_parse_in_windows_and_conjunctions():
    t = FeatureTemplates(["CLUSTER[-1..1]", "CLUSTER6|NORM", "VECTOR_CLUSTER64", "GAZETTEER[1]"])
    assert t.names == ["CLUSTER[-1]", "CLUSTER[0]", "CLUSTER[1]", "CLUSTER6[0]|NORM[0]",
                       "VECTOR_CLUSTER64[0]", "GAZETTEER[1]"]
    assert t.lexicon_attrs == ["CLUSTER", "CLUSTER6", "GAZETTEER", "VECTOR_CLUSTER64"]


@pytest.mark.parametrize("bad", ["CLUSTER0", "CLUSTER64", "VECTOR_CLUSTER1", "VECTOR_CLUSTER"])
def test_out_of_range_word_attributes_are_refused_by_name(bad):
    with pytest.raises(ValueError, match=r"\[CRF-E00[12]\]"):
        FeatureTemplates([bad])


# -- Brown clusters ------------------------------------------------------------

@pytest.mark.parametrize("attr,bits", [("CLUSTER", 0), ("CLUSTER1", 1), ("CLUSTER3", 3)])
@pytest.mark.parametrize("offset", [-1, 0, 1])
def test_cluster_features_match_token_cluster(attr, bits, offset):
    nlp = blank_with_clusters()
    doc = nlp.make_doc(" ".join(WORDS))
    lexicon = Lexicon({"clusters": BrownClusters(brown_clusters.table_from_lookups(
        nlp.vocab.lookups.get_table("lexeme_cluster")))})
    templates = FeatureTemplates([f"{attr}[{offset}]"])
    got = extract_features([doc], templates, lexicon=lexicon)[:, 0]
    mask = (1 << bits) - 1 if bits else -1
    # spaCy's own Token.cluster reads the same lookups table
    want = reference_ids(doc, lambda tok: tok.cluster & mask, offset=offset)
    assert np.array_equal(got, want)
    assert doc[4].cluster == path_value("10") and doc[2].cluster != 0 and doc[3].cluster == 0


def test_prefixes_group_words_by_their_first_bits():
    nlp = blank_with_clusters()
    doc = nlp.make_doc("the a cat dog")
    lexicon = Lexicon({"clusters": BrownClusters(brown_clusters.table_from_lookups(
        nlp.vocab.lookups.get_table("lexeme_cluster")))})
    ids = extract_features([doc], FeatureTemplates(["CLUSTER", "CLUSTER3", "CLUSTER2"]),
                           lexicon=lexicon)
    assert len(set(ids[:, 0])) == 4  # four paths
    assert ids[0, 1] == ids[1, 1] and ids[2, 1] == ids[3, 1] and ids[0, 1] != ids[2, 1]
    assert ids[0, 2] == ids[1, 2] and ids[2, 2] == ids[3, 2]


def test_paths_file_and_json_table_give_spacys_encoding(tmp_path):
    paths = tmp_path / "paths"
    paths.write_text("".join(f"{p}\t{w}\t{i + 1}\n" for i, (w, p) in enumerate(PATHS.items())),
                     encoding="utf8")
    table = read_cluster_file(paths)
    strings = spacy.blank("en").vocab.strings
    for w in PATHS:
        strings.add(w)
    assert strings_of(table, strings) == {w: int(p[::-1], 2) for w, p in PATHS.items()}
    json_path = tmp_path / "clusters.json.gz"
    brown_clusters.write_json_table(((w, v) for w, v, _ in brown_clusters.read_paths(paths)),
                                    json_path)
    assert read_cluster_file(json_path) == table


def test_words_that_are_spacy_symbols_are_found(tmp_path):
    # "ORG" and "nsubj" are spaCy symbols: Doc.to_array(ORTH) gives their symbol
    # ids, not the hashes of the strings
    paths = tmp_path / "paths.txt"
    paths.write_text("0110\tORG\t5\n10\tnsubj\t3\n11\tcat\t2\n", encoding="utf8")
    doc = spacy.blank("en").make_doc("ORG nsubj cat dog")
    table = read_cluster_file(paths)
    assert table.lookup(doc.to_array("ORTH"))[:, 0].tolist() == [
        path_value("0110"), path_value("10"), path_value("11"), 0]
    shown = run_clusters("show", paths, "ORG", "nsubj")
    assert shown.stdout.splitlines() == ["ORG\t011", "nsubj\t1"]  # trailing zeros are lost


def test_a_bad_paths_line_is_named(tmp_path):
    paths = tmp_path / "paths"
    paths.write_text("0101\tthe\t3\n01x1\tcat\t2\n", encoding="utf8")
    with pytest.raises(ValueError, match=r"\[CRF-E123\].*line 2"):
        read_cluster_file(paths)
    with pytest.raises(ValueError, match=r"\[CRF-E123\].*no such file"):
        read_cluster_file(tmp_path / "missing")


def tagger(nlp, **model):
    config = {"target": "tag"}
    if model:
        config["model"] = {**DEFAULT_MODEL, **model}
    pipe = nlp.add_pipe("crf_tagger", config=config)
    # the clusters alone: spaCy's lemma tables, which the tag target also
    # reads by default, are tested in tests/feature_sources/test_lemma_lookups.py
    nlp.config["initialize"]["components"]["crf_tagger"] = dict(NO_WORD_TABLES)
    return pipe


def tag_examples(nlp):
    words = [("the cat sat in Paris", "DT NN VBD IN NNP"),
             ("a dog sat in London", "DT NN VBD IN NNP")]
    return [Example.from_dict(nlp.make_doc(w), {"tags": t.split()}) for w, t in words]


def feature_layer_templates(pipe):
    return [node.attrs["templates"].source for node in pipe.model.walk()
            if node.name == "crf_featurize"][0]


def test_table_from_the_vocab_lookups_adds_the_cluster_templates():
    nlp = blank_with_clusters()
    pipe = tagger(nlp)
    train(nlp, tag_examples(nlp), 15, optimizer=FROM_INITIALIZE)
    source = feature_layer_templates(pipe)
    assert source[-len(DEFAULT_MODEL["cluster_templates"]):] == list(DEFAULT_MODEL["cluster_templates"])
    lexicon = next(n.attrs["crf_lexicon"] for n in pipe.model.walk() if n.name == "crf_featurize")
    assert len(lexicon["clusters"].table) == len(PATHS)


def test_a_file_of_ones_own_comes_before_the_vocab(tmp_path):
    nlp = blank_with_clusters()
    paths = tmp_path / "paths"
    paths.write_text("1\tcat\t1\n", encoding="utf8")
    pipe = tagger(nlp)
    train(nlp, tag_examples(nlp), 1, optimizer=FROM_INITIALIZE)
    nlp.get_pipe("crf_tagger").initialize(lambda: tag_examples(nlp), nlp=nlp, clusters=str(paths))
    lexicon = next(n.attrs["crf_lexicon"] for n in pipe.model.walk() if n.name == "crf_featurize")
    assert len(lexicon["clusters"].table) == 1


def test_spacy_lookups_data_table_is_read_for_the_language():
    pytest.importorskip("spacy_lookups_data")
    table = brown_clusters.lookups_data_table("en")
    assert table is not None and len(table) > 100_000
    nlp = spacy.blank("en")
    ref = spacy.lookups.load_lookups("en", ["lexeme_cluster"]).get_table("lexeme_cluster")
    words = ["the", "The", "Paris", "apple", "notawordxyz"]
    keys = np.asarray([nlp.vocab.strings.add(w) for w in words], dtype=np.uint64)
    assert table.lookup(keys)[:, 0].tolist() == [ref.get(w, 0) for w in words]
    assert brown_clusters.lookups_data_table("zz") is None  # no such language


def test_without_a_table_the_model_reads_spelling_only_and_says_how_once(monkeypatch):
    monkeypatch.setattr(brown_clusters, "lookups_data_table", lambda lang: None)
    nlp = spacy.blank("en")
    pipe = tagger(nlp)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(nlp, tag_examples(nlp), 3, optimizer=FROM_INITIALIZE)
    said = [w for w in caught if "[CRF-W007]" in str(w.message)]
    assert len(said) == 1 and "spacy-lookups-data" in str(said[0].message)
    assert feature_layer_templates(pipe) == list(DEFAULT_MODEL["templates"])
    # the same as a model that never had cluster templates
    other = spacy.blank("en")
    tagger(other, cluster_templates=[])
    train(other, tag_examples(other), 3, optimizer=FROM_INITIALIZE)
    doc_a, doc_b = nlp("a cat sat in Rome"), other("a cat sat in Rome")
    assert [t.tag_ for t in doc_a] == [t.tag_ for t in doc_b]


def test_reinitializing_without_a_table_takes_the_cluster_templates_out(monkeypatch):
    nlp = blank_with_clusters()
    pipe = tagger(nlp)
    train(nlp, tag_examples(nlp), 1, optimizer=FROM_INITIALIZE)
    assert any("CLUSTER" in t for t in feature_layer_templates(pipe))
    nlp.vocab.lookups.remove_table("lexeme_cluster")
    monkeypatch.setattr(brown_clusters, "lookups_data_table", lambda lang: None)
    with pytest.warns(UserWarning, match="W007"):
        train(nlp, tag_examples(nlp), 1, optimizer=FROM_INITIALIZE)
    assert feature_layer_templates(pipe) == list(DEFAULT_MODEL["templates"])


def test_templates_that_must_read_clusters_fail_clearly_without_a_table(monkeypatch):
    monkeypatch.setattr(brown_clusters, "lookups_data_table", lambda lang: None)
    nlp = spacy.blank("en")
    tagger(nlp, templates=["NORM", "CLUSTER4"], cluster_templates=[])
    with pytest.raises(ValueError, match=r"\[CRF-E126\].*CLUSTER4"):
        train(nlp, tag_examples(nlp), 1, optimizer=FROM_INITIALIZE)


def test_predicting_before_initialize_names_the_missing_table():
    nlp = spacy.blank("en")
    doc = nlp.make_doc("a cat")
    with pytest.raises(ValueError, match=r"\[CRF-E126\].*CLUSTER"):
        extract_features([doc], FeatureTemplates(["CLUSTER"]))


# -- vector clusters -----------------------------------------------------------

def three_groups(nlp, seed=0):
    """Vectors of 12 words in three well-separated directions."""
    rng = np.random.default_rng(seed)
    groups = {"animal": ["cat", "dog", "cow", "fox"], "city": ["Paris", "London", "Rome", "Oslo"],
              "verb": ["sat", "ran", "ate", "saw"]}
    centres = np.eye(8, dtype=np.float32)[:3] * 10
    words, rows = [], []
    for i, names in enumerate(groups.values()):
        for w in names:
            words.append(w)
            rows.append(centres[i] + rng.normal(0, 0.5, 8))
    nlp.vocab.vectors = Vectors(strings=nlp.vocab.strings, data=np.asarray(rows, dtype=np.float32),
                                keys=words)
    return groups


def test_kmeans_recovers_separated_groups_and_is_deterministic():
    rng = np.random.default_rng(1)
    data = np.concatenate([rng.normal(c, 0.05, (30, 3)) for c in np.eye(3)])
    centroids = kmeans(unit_rows(data), 3, seed=4)
    labels = np.argmax(unit_rows(data) @ centroids.T, axis=1)
    assert sorted(len(set(labels[i * 30:(i + 1) * 30])) for i in range(3)) == [1, 1, 1]
    assert len(set(labels)) == 3
    assert np.array_equal(centroids, kmeans(unit_rows(data), 3, seed=4))


def test_vector_clusters_group_words_with_similar_vectors():
    nlp = spacy.blank("en")
    groups = three_groups(nlp)
    tagger(nlp, templates=["NORM", "VECTOR_CLUSTER3", "VECTOR_CLUSTER2"], cluster_templates=[])
    examples = [Example.from_dict(nlp.make_doc("cat sat in Paris"), {"tags": ["N", "V", "P", "N"]})]
    train(nlp, examples, 1, optimizer=FROM_INITIALIZE)
    doc = nlp.make_doc(" ".join(w for names in groups.values() for w in names) + " unknownword")
    lexicon = next(n.attrs["crf_lexicon"] for n in nlp.get_pipe("crf_tagger").model.walk()
                   if n.name == "crf_featurize")
    values = lexicon.columns([doc], ["VECTOR_CLUSTER3"], {"ORTH": doc.to_array("ORTH")})[:, 0]
    assert [len(set(values[i * 4:(i + 1) * 4])) for i in range(3)] == [1, 1, 1]
    assert len(set(values[:12])) == 3 and values[12] == 0  # no vector: 0
    assert lexicon["vector_clusters"].ks == [2, 3]


def test_vector_clusters_need_vectors():
    nlp = spacy.blank("en")
    tagger(nlp, templates=["NORM", "VECTOR_CLUSTER8"], cluster_templates=[])
    with pytest.raises(ValueError, match=r"\[CRF-E124\].*vectors is empty"):
        train(nlp, [Example.from_dict(nlp.make_doc("a b"), {"tags": ["X", "Y"]})], 1,
              optimizer=FROM_INITIALIZE)


def test_floret_vectors_are_named_as_such():
    # floret vectors keep no word list: the message says so, not "no vectors"
    from spacy.vectors import Vectors

    nlp = spacy.blank("en")
    nlp.vocab.vectors = Vectors(strings=nlp.vocab.strings, mode="floret",
                                data=np.ones((10, 4), dtype="f"), hash_count=1, minn=2, maxn=3)
    tagger(nlp, templates=["NORM", "VECTOR_CLUSTER8"], cluster_templates=[])
    with pytest.raises(ValueError, match=r"\[CRF-E124\].*'floret' mode"):
        train(nlp, [Example.from_dict(nlp.make_doc("a b"), {"tags": ["X", "Y"]})], 1,
              optimizer=FROM_INITIALIZE)


# -- gazetteers ----------------------------------------------------------------

def gaz_value(*pairs):
    out = np.uint64(0)
    for name, code in pairs:
        out ^= mix64(np.uint64(spacy.strings.hash_string(name)), np.uint64(code))
    return out


def test_gazetteer_positions_lists_overlaps_and_case():
    nlp = spacy.blank("en")
    gaz = Gazetteer([("CITY", ("New", "York")), ("CITY", ("New", "York", "City")),
                     ("CITY", ("York",)), ("STATE", ("New", "York")), ("CITY", ("Rome",))])
    doc = nlp.make_doc("i left new york city for rome")
    got = gaz.column([doc])
    # CITY: the longest match "new york city" wins over "new york" and "york";
    # STATE: "new york"; case is ignored by default
    want = [0, 0, gaz_value(("CITY", CODE_B), ("STATE", CODE_B)),
            gaz_value(("CITY", CODE_I), ("STATE", CODE_L)), gaz_value(("CITY", CODE_L)), 0,
            gaz_value(("CITY", CODE_U))]
    assert got.tolist() == [int(v) for v in want]
    strict = Gazetteer([("CITY", ("Rome",))], case_sensitive=True)
    assert strict.column([doc]).tolist() == [0] * 7
    # list names that are spaCy symbols (ORG, LOC: the matcher's ids are symbol ids)
    symbols = Gazetteer([("LOC", ("rome",)), ("ORG", ("new", "york"))])
    assert symbols.column([doc]).tolist() == [0, 0, int(gaz_value(("ORG", CODE_B))),
                                              int(gaz_value(("ORG", CODE_L))), 0, 0,
                                              int(gaz_value(("LOC", CODE_U)))]


def test_gazetteer_features_without_other_word_tables_or_affixes():
    # templates that read the gazetteer and no affix or cluster once got no
    # gazetteer column at all, and the hashing read past the values
    nlp = spacy.blank("en")
    lexicon = Lexicon({"gazetteer": GazetteerSource(Gazetteer([("CITY", ("Paris",))]))})
    docs = [nlp.make_doc(t) for t in ("we saw Paris", "we saw Rome")]
    alone = extract_features(docs, FeatureTemplates(["GAZETTEER", "NORM"]), lexicon=lexicon)
    with_affix = extract_features(docs, FeatureTemplates(["GAZETTEER", "NORM", "SUFFIX3"]),
                                  lexicon=lexicon)
    assert np.array_equal(alone, with_affix[:, :2])
    assert np.array_equal(alone, extract_features(docs, FeatureTemplates(["GAZETTEER", "NORM"]),
                                                  lexicon=lexicon))
    gaz = alone[:, 0]
    assert gaz[2] != gaz[5] and len({gaz[0], gaz[1], gaz[3], gaz[4], gaz[5]}) == 1


def test_gazetteer_files_and_bad_rows(tmp_path):
    jsonl = tmp_path / "gaz.jsonl"
    jsonl.write_text('{"label": "CITY", "pattern": "New York"}\n\n{"label": "ORG", "pattern": "ACME"}\n',
                     encoding="utf8")
    assert read_gazetteer(jsonl) == [("CITY", "New York"), ("ORG", "ACME")]
    tsv = tmp_path / "gaz.tsv"
    tsv.write_text("CITY\tNew York\nORG\tACME\n", encoding="utf8")
    assert read_gazetteer(tsv) == read_gazetteer(jsonl)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"label": "CITY", "pattern": "Rome"}\n{"label": "X", "pattern": [{"LOWER": "a"}]}\n',
                   encoding="utf8")
    with pytest.raises(ValueError, match=r"\[CRF-E125\].*line 2"):
        read_gazetteer(bad)


def ner_examples(nlp):
    data = [("Alice flew to Paris", [(14, 19, "LOC")]), ("Bob lives in Rome", [(13, 17, "LOC")]),
            ("Carol met Dave", [])]
    return [Example.from_dict(nlp.make_doc(t), {"entities": e}) for t, e in data]


def test_gazetteer_from_a_file_and_an_entity_ruler(tmp_path):
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns([{"label": "CITY", "pattern": "Oslo"}, {"label": "X", "pattern": [{"LOWER": "b"}]}])
    nlp.add_pipe("crf_tagger", config={"target": "ents", "model": {
        **DEFAULT_MODEL, "templates": ["NORM", "GAZETTEER[-1..1]"], "cluster_templates": []}})
    path = tmp_path / "gaz.tsv"
    path.write_text("CITY\tnew york\n", encoding="utf8")
    pipe = nlp.get_pipe("crf_tagger")
    with nlp.select_pipes(disable=["entity_ruler"]):
        pipe.initialize(lambda: ner_examples(nlp), nlp=nlp, gazetteer=str(path),
                        gazetteer_ruler="entity_ruler")
    lexicon = next(n.attrs["crf_lexicon"] for n in pipe.model.walk() if n.name == "crf_featurize")
    assert sorted(lexicon["gazetteer"].gazetteer.entries) == [(0, ("Oslo",)), (0, ("new", "york"))]
    with pytest.raises(ValueError, match=r"\[CRF-E125\].*nosuchruler"):
        pipe.initialize(lambda: ner_examples(nlp), nlp=nlp, gazetteer_ruler="nosuchruler")


def test_a_gazetteer_without_a_template_to_read_it_is_refused(tmp_path):
    nlp = spacy.blank("en")
    path = tmp_path / "gaz.tsv"
    path.write_text("CITY\tRome\n", encoding="utf8")
    nlp.add_pipe("crf_tagger", config={"target": "ents"})
    with pytest.raises(ValueError, match=r"\[CRF-E125\].*GAZETTEER"):
        nlp.get_pipe("crf_tagger").initialize(lambda: ner_examples(nlp), nlp=nlp,
                                              gazetteer=str(path))


def texts_in_folds(template, n):
    """``n`` texts made from ``template`` whose documents fall in ``n`` different folds."""
    nlp = spacy.blank("en")
    found = {}
    for k in range(10_000):
        text = template.format(k)
        found.setdefault(document_fold(nlp.make_doc(text)), text)
        if len(found) == n:
            return list(found.values())
    raise AssertionError("no texts in enough folds")


def held_out_reference(docs_and_spans, given, doc):
    """What a training doc's gazetteer should be, by definition: the phrases of
    every *other* fold's documents, plus those given (a file's)."""
    fold = document_fold(doc)
    phrases = [(s.label_, tuple(t.text for t in s)) for d, spans in docs_and_spans
               if document_fold(d) != fold for s in spans]
    return Gazetteer(phrases + given)


def test_a_training_phrase_keeps_the_whitespace_inside_as_the_file_phrases_do():
    """A gold span "New  York" (two spaces: a whitespace token inside) was a
    phrase without it, which never matched its own text; the whitespace at a
    span's edges is left out, as for phrases of a file or a ruler."""
    nlp = spacy.blank("en")
    doc = Doc(nlp.vocab, words=["\n", "New", " ", "York", "\n", "is", "big"],
              spaces=[False, False, False, False, False, True, False])
    phrases, _ = training_phrases([(doc, [Span(doc, 0, 5, "LOC"), Span(doc, 5, 6, "X")])])
    assert phrases == [("LOC", ("New", " ", "York")), ("X", ("is",))]
    gaz = Gazetteer(phrases)
    assert gaz.column([doc]).tolist()[1:4] != [0, 0, 0]


def test_a_training_gazetteer_holds_out_each_documents_own_fold():
    nlp = spacy.blank("en")
    one, two, three = (nlp.make_doc(t) for t in texts_in_folds("Ann met Bob in Rome {}", 3))
    # "Rome" comes from two folds, "Bob" from one, "Ann" from one and a file
    spans = [(one, [Span(one, 2, 3, "PER"), Span(one, 0, 1, "PER")]),
             (two, [Span(two, 4, 5, "LOC")]), (three, [Span(three, 4, 5, "LOC")])]
    phrases, folds = training_phrases(spans)
    given = [("PER", ("Ann",))]
    gaz = Gazetteer(given + phrases, folds=[EVERY_FOLD] + folds)
    assert gaz.from_training and not Gazetteer(given).from_training
    for doc in (one, two, three):
        # predicting (new text) sees every phrase; training sees the other folds'
        assert gaz.column([doc]).tolist() == Gazetteer(given + phrases).column([doc]).tolist()
        assert (gaz.column([doc], held_out=True).tolist()
                == held_out_reference(spans, given, doc).column([doc]).tolist())
    # Bob is held out of his only document, Ann (also a file's) and Rome are not
    first = gaz.column([one], held_out=True)
    assert first[2] == 0 and first[0] != 0 and first[4] != 0
    # a batch is the docs one by one
    batch = gaz.column([one, two, three], held_out=True)
    assert batch.tolist() == sum((gaz.column([d], held_out=True).tolist()
                                  for d in (one, two, three)), [])
    # the folds are saved, and an old saved gazetteer (no folds) holds everywhere
    assert Gazetteer.from_dict(gaz.to_dict()).folds == gaz.folds
    assert "folds" not in Gazetteer(given).to_dict()


def test_held_out_matches_a_jackknife_on_random_corpora():
    rng = np.random.default_rng(0)
    nlp = spacy.blank("en")
    words = ["Ann", "Bob", "Rome", "Oslo", "new", "york", "the", "met"]
    for _ in range(30):
        spans = []
        for k in range(int(rng.integers(2, 8))):
            toks = [words[i] for i in rng.integers(0, len(words), size=6)] + [str(k)]
            doc = nlp.make_doc(" ".join(toks))
            start = int(rng.integers(0, 5))
            label = "A" if rng.random() < 0.5 else "B"
            spans.append((doc, [Span(doc, start, start + int(rng.integers(1, 3)), label)]))
        phrases, folds = training_phrases(spans)
        gaz = Gazetteer(phrases, folds=folds)
        for doc, _ in spans:
            assert (gaz.column([doc], held_out=True).tolist()
                    == held_out_reference(spans, [], doc).column([doc]).tolist())


def test_gazetteer_from_training_in_the_pipeline(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "ents", "model": {
        **DEFAULT_MODEL, "templates": ["NORM", "GAZETTEER[-1..1]"], "cluster_templates": []}})
    nlp.config["initialize"]["components"]["crf_tagger"] = {"gazetteer_from_training": True}
    examples = ner_examples(nlp)
    optimizer = nlp.initialize(lambda: examples)
    pipe = nlp.get_pipe("crf_tagger")
    featurize = next(n for n in pipe.model.walk() if n.name == "crf_featurize")
    gaz = featurize.attrs["crf_lexicon"]["gazetteer"].gazetteer
    assert sorted(gaz.entries) == [(0, ("Paris",)), (0, ("Rome",))] and gaz.from_training
    doc = nlp.make_doc("Alice flew to Paris")
    # training features hold Paris out of its own document; prediction sees it
    assert not np.array_equal(featurize([doc], is_train=True)[0], featurize.predict([doc]))
    other = nlp.make_doc("We flew to Paris")
    if document_fold(other) != document_fold(doc):
        assert np.array_equal(featurize([other], is_train=True)[0], featurize.predict([other]))
    for _ in range(5):
        nlp.update(examples, sgd=optimizer)
    nlp.to_disk(tmp_path / "model")
    loaded = spacy.load(tmp_path / "model")
    again = next(n for n in loaded.get_pipe("crf_tagger").model.walk()
                 if n.name == "crf_featurize").attrs["crf_lexicon"]["gazetteer"].gazetteer
    assert again == gaz and again.folds == gaz.folds
    texts = ["Bob flew to Rome", "Alice met Carol in Paris"]
    assert ([[(e.text, e.label_) for e in d.ents] for d in nlp.pipe(texts)]
            == [[(e.text, e.label_) for e in d.ents] for d in loaded.pipe(texts)])


def test_gazetteer_from_training_reads_a_span_groups_gold():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "spans:sc", "model": {
        **DEFAULT_MODEL, "templates": ["NORM", "GAZETTEER"], "cluster_templates": []}})
    examples = []
    for text, (start, end, label) in [("we met in Paris", (3, 4, "LOC")),
                                      ("the acme corp sued", (1, 3, "ORG"))]:
        reference = nlp.make_doc(text)
        reference.spans["sc"] = [Span(reference, start, end, label)]
        examples.append(Example(nlp.make_doc(text), reference))
    pipe = nlp.get_pipe("crf_tagger")
    pipe.initialize(lambda: examples, nlp=nlp, gazetteer_from_training=True)
    gaz = next(n for n in pipe.model.walk() if n.name == "crf_featurize").attrs["crf_lexicon"]["gazetteer"].gazetteer
    assert sorted((gaz.names[i], t) for i, t in gaz.entries) == [("LOC", ("Paris",)),
                                                                  ("ORG", ("acme", "corp"))]


def test_gazetteer_from_training_needs_spans():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "tag", "model": {
        **DEFAULT_MODEL, "templates": ["NORM", "GAZETTEER"], "cluster_templates": []}})
    with pytest.raises(ValueError, match=r"\[CRF-E125\].*has none"):
        nlp.get_pipe("crf_tagger").initialize(lambda: tag_examples(nlp), nlp=nlp,
                                              gazetteer_from_training=True)
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "ents", "model": {
        **DEFAULT_MODEL, "templates": ["NORM", "GAZETTEER"], "cluster_templates": []}})
    no_ents = [Example.from_dict(nlp.make_doc("Carol met Dave"), {"entities": []})]
    with pytest.raises(ValueError, match=r"\[CRF-E125\].*no gold spans"):
        nlp.get_pipe("crf_tagger").initialize(lambda: no_ents, nlp=nlp, labels=["O", "U-LOC"],
                                              gazetteer_from_training=True)


# -- save and load ---------------------------------------------------------------

def test_trained_model_round_trips_without_its_sources(tmp_path):
    nlp = blank_with_clusters()
    three_groups(nlp)
    gaz = tmp_path / "gaz.tsv"
    gaz.write_text("CITY\tParis\nCITY\tnew york\n", encoding="utf8")
    tagger(nlp, templates=["NORM", "SUFFIX3", "VECTOR_CLUSTER3[-1..1]", "GAZETTEER[-1..1]"])
    examples = tag_examples(nlp)
    # the config route: [initialize.components.crf_tagger] gazetteer = PATH
    nlp.config["initialize"]["components"]["crf_tagger"] = {"gazetteer": str(gaz)}
    train(nlp, examples, 10, optimizer=FROM_INITIALIZE)
    texts = ["the dog sat in new york", "a cat ran to Oslo", "London sat in Rome"]
    want = [[t.tag_ for t in doc] for doc in nlp.pipe(texts)]
    scores = nlp.get_pipe("crf_tagger").model.predict([nlp.make_doc(t) for t in texts]).emissions
    nlp.to_disk(tmp_path / "model")
    (tmp_path / "texts.txt").write_text("\n".join(texts), encoding="utf8")
    np.save(tmp_path / "emissions.npy", scores)
    # a fresh process where spacy-lookups-data cannot be imported, the vocab has
    # neither the cluster table nor the vectors, and the gazetteer file is gone
    gaz.unlink()
    script = textwrap.dedent(f"""
        import sys
        sys.modules["spacy_lookups_data"] = None
        import numpy as np, spacy
        from spacy.vectors import Vectors
        nlp = spacy.load({str(tmp_path / "model")!r})
        if nlp.vocab.lookups.has_table("lexeme_cluster"):
            nlp.vocab.lookups.remove_table("lexeme_cluster")
        nlp.vocab.vectors = Vectors(strings=nlp.vocab.strings)
        texts = open({str(tmp_path / "texts.txt")!r}, encoding="utf8").read().split("\\n")
        scores = nlp.get_pipe("crf_tagger").model.predict([nlp.make_doc(t) for t in texts])
        assert np.array_equal(scores.emissions, np.load({str(tmp_path / "emissions.npy")!r}))
        print([[t.tag_ for t in doc] for doc in nlp.pipe(texts)])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(want)


def test_to_bytes_round_trip_keeps_the_word_tables():
    nlp = blank_with_clusters()
    pipe = tagger(nlp)
    train(nlp, tag_examples(nlp), 5, optimizer=FROM_INITIALIZE)
    data = pipe.to_bytes()
    other = spacy.blank("en")
    loaded = tagger(other).from_bytes(data)
    assert feature_layer_templates(loaded) == feature_layer_templates(pipe)
    docs = [other.make_doc("a dog sat in Paris")]
    assert np.array_equal(loaded.model.predict(docs).emissions,
                          pipe.model.predict([nlp.make_doc("a dog sat in Paris")]).emissions)


def test_damaged_word_tables_fail_the_load_clearly():
    lexicon = Lexicon({"clusters": BrownClusters(WordTable([1, 2], [3, 4]))})
    assert Lexicon.from_bytes(lexicon.to_bytes()) == lexicon
    with pytest.raises(ValueError, match="format"):
        Lexicon.from_bytes(srsly.msgpack_dumps({"format": 99}))
    with pytest.raises(ValueError):
        WordTable.from_dict({"keys": np.asarray([1, 1], dtype=np.uint64),
                             "values": np.asarray([1, 2]), "key_attr": "ORTH"})


# -- the clusters command ---------------------------------------------------------

def run_clusters(*args):
    """``python -m spacy_crf.clusters ARGS``, its main in this process."""
    from spacy_crf.commands.clusters import main

    return run_main(main, args)


def test_clusters_command_imports_a_paths_file_for_initialize(tmp_path):
    paths = tmp_path / "paths"
    paths.write_text("".join(f"{p}\t{w}\t{i + 1}\n" for i, (w, p) in enumerate(PATHS.items())),
                     encoding="utf8")
    out = run_clusters("import", paths, tmp_path / "c.json.gz", "--min-count", "2")
    assert out.returncode == 0, out.stderr
    assert f"{len(PATHS) - 1} words" in out.stdout  # 'the' was seen once
    shown = run_clusters("show", tmp_path / "c.json.gz", "cat", "the")
    assert shown.stdout.splitlines() == ["cat\t11", "the\t-"]  # "110": its trailing 0 is lost
    nlp = spacy.blank("en")
    tagger(nlp)
    nlp.config["initialize"]["components"]["crf_tagger"] = {"clusters": str(tmp_path / "c.json.gz")}
    train(nlp, tag_examples(nlp), 1, optimizer=FROM_INITIALIZE)
    lexicon = next(n.attrs["crf_lexicon"] for n in nlp.get_pipe("crf_tagger").model.walk()
                   if n.name == "crf_featurize")
    assert len(lexicon["clusters"].table) == len(PATHS) - 1


def test_clusters_command_usage_errors_exit_2(tmp_path):
    assert run_clusters("import", tmp_path / "missing", tmp_path / "o.json").returncode == 2
    bad = tmp_path / "bad"
    bad.write_text("10\tcat\t1\nnot-bits\tdog\t1\n", encoding="utf8")
    out = run_clusters("import", bad, tmp_path / "o.json")
    said = " ".join(out.stderr.split())  # (the message is wrapped where the path is long)
    assert out.returncode == 2 and "[CRF-E123]" in said and "line 2" in said
    assert "Traceback" not in out.stderr


def test_chain_tree_experts_share_one_lexicon_after_a_load(tmp_path):
    nlp = blank_with_clusters()
    nlp.add_pipe("crf_tagger", config={"target": "tag", "structure": "chain_tree"})
    words = [("the cat sat in Paris", "DT NN VBD IN NNP", [1, 2, 2, 2, 3]),
             ("a dog sat in London", "DT NN VBD IN NNP", [1, 2, 2, 2, 3])]
    examples = [Example.from_dict(nlp.make_doc(w), {"tags": t.split(), "heads": h,
                                                    "deps": ["det", "nsubj", "ROOT", "case", "obl"]})
                for w, t, h in words]
    for eg in examples:  # the gold trees as the predicted docs' parse
        eg.predicted.from_array(["HEAD", "DEP"], eg.reference.to_array(["HEAD", "DEP"]))
    train(nlp, examples, 5, optimizer=FROM_INITIALIZE)
    pipe = nlp.get_pipe("crf_tagger")
    docs = [eg.predicted for eg in examples]
    pipe.use_prediction_weights()  # the (averaged) weights it predicts with and saves
    want = pipe.model.predict(docs)
    nlp.to_disk(tmp_path / "m")
    loaded = spacy.load(tmp_path / "m").get_pipe("crf_tagger")
    lexicons = [n.attrs["crf_lexicon"] for n in loaded.model.walk() if n.name == "crf_featurize"]
    assert len(lexicons) == 2 and lexicons[0] is lexicons[1] and lexicons[0].get("clusters") is not None
    got = loaded.model.predict(docs)
    assert np.array_equal(got.emissions, want.emissions)


def test_clusters_command_induces_a_table_from_raw_text(tmp_path):
    text = tmp_path / "text.jsonl"
    rows = [{"text": f"the {a} {v} at {p}."} for a in ("cat", "dog", "cow")
            for v in ("runs", "eats") for p in ("home", "town")] * 3
    srsly.write_jsonl(text, rows)
    out = run_clusters("induce", text, tmp_path / "c.json", "--clusters", "6", "--min-count", "2")
    assert out.returncode == 0, out.stderr
    table = srsly.read_json(tmp_path / "c.json")
    assert table["cat"] == table["dog"] == table["cow"] and table["home"] == table["town"]
    assert table["cat"] != table["home"]
    paths = tmp_path / "paths"
    assert run_clusters("induce", text, paths, "--clusters", "6").returncode == 0
    assert read_cluster_file(paths) == read_cluster_file(tmp_path / "c.json")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"no": "text"}\n', encoding="utf8")
    out = run_clusters("induce", bad, tmp_path / "o.json")
    assert out.returncode == 2 and "line 2" in out.stderr and "Traceback" not in out.stderr


def test_a_gazetteer_model_runs_in_worker_processes(tmp_path):
    nlp = spacy.blank("en")
    path = tmp_path / "gaz.tsv"
    path.write_text("LOC\tParis\nLOC\tnew york\n", encoding="utf8")
    nlp.add_pipe("crf_tagger", config={"target": "ents", "model": {
        **DEFAULT_MODEL, "templates": ["NORM", "GAZETTEER[-1..1]"], "cluster_templates": None}})
    nlp.config["initialize"]["components"]["crf_tagger"] = {"gazetteer": str(path)}
    train(nlp, ner_examples(nlp), 20, optimizer=FROM_INITIALIZE)
    texts = ["Alice flew to Paris", "Bob lives in New York", "Carol met Dave"]
    want = [[(e.text, e.label_) for e in doc.ents] for doc in nlp.pipe(texts)]
    got = [[(e.text, e.label_) for e in doc.ents] for doc in nlp.pipe(texts, n_process=2)]
    assert got == want


@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage"])
def test_a_damaged_cached_lookups_table_is_read_again_and_replaced(tmp_path, monkeypatch, damage):
    """The arrays kept in ``~/.cache/spacy-crf`` may be cut short (a full disk,
    a killed process): the package's table is read again, and the file rewritten."""
    pytest.importorskip("spacy_lookups_data")
    from spacy.util import registry

    monkeypatch.setenv("SPACY_CRF_CACHE", str(tmp_path))
    # the package's 1M-word file takes seconds: a small table stands in for it
    monkeypatch.setattr(spacy.lookups, "load_language_data", lambda source: {"cat": 3, "dog": 5})
    source = registry.lookups.get("en").get(brown_clusters.TABLE_NAME)
    cached = lookups_data.cache_file([Path(source)], f"en_{brown_clusters.TABLE_NAME}")
    lookups_data.write_cache(cached, {"keys": np.arange(1000, dtype=np.uint64),
                                      "values": np.ones((1000, 1), dtype=np.uint64)})
    whole = cached.read_bytes()
    cached.write_bytes({"truncated": whole[:len(whole) // 2], "empty": b"",
                        "garbage": b"PK\x03\x04" + bytes(200)}[damage])
    table = brown_clusters._read_lookups_data("en")
    assert table is not None and len(table) == 2
    # replaced by the table just read: the next process loads it
    with np.load(cached) as arrays:
        assert len(arrays["keys"]) == 2
