"""The ``sent_starts`` target: ``Token.is_sent_start`` as ``S`` / ``I`` labels over
the whole doc, a senter (issue #52): gold reading, writing, whole-doc sequences,
scores, saving and loading, docs without boundaries, config filling and a short
training on the shipped EWT sample."""

import numpy as np
import pytest
import spacy
from spacy.attrs import SENT_START
from spacy.language import Language
from spacy.pipeline.senter import senter_score
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import load_config, load_model_from_config

from conftest import (EWT_SAMPLE, FROM_INITIALIZE, SMALL_MODEL, featurize_layer,
                      filled_config, make_nlp, train)
from spacy_crf.features.doc_arrays import DocBatch
from spacy_crf.scoring import MAIN_SCORE, default_score_weights, main_score_key, score_crf
from spacy_crf.targets import SentStartsTarget, make_target
from spacy_crf.targets.sent_starts import BOUNDARY_TEMPLATES

ROOT = EWT_SAMPLE.parents[1]
TEXTS = ["I saw it . It was big .", "The cat sat . Then it left !",
         "Hello there . How are you ?", "We ran home . She stayed . He left ."]


def gold_doc(vocab, text):
    """A doc of ``text`` (words split on spaces) with a start after . ! ?"""
    words = text.split()
    return Doc(vocab, words=words,
               sent_starts=[i == 0 or words[i - 1] in ".!?" for i in range(len(words))])


def examples_of(nlp, texts=TEXTS):
    return [Example(nlp.make_doc(text), gold_doc(nlp.vocab, text)) for text in texts]


def sents_nlp(**config):
    return make_nlp("sent_starts", **config)


def trained(n_iter=20, **config):
    nlp = sents_nlp(**config)
    examples = examples_of(nlp) * 3
    train(nlp, examples, n_iter, optimizer=FROM_INITIALIZE)
    return nlp, examples


def starts(doc):
    return [bool(t.is_sent_start) for t in doc]


# ----------------------------------------------------------------- gold reading


def test_gold_reads_starts_non_starts_and_missing_tokens():
    nlp = spacy.blank("en")
    target = make_target("sent_starts")
    assert isinstance(target, SentStartsTarget)
    target.set_labels(target.order_labels([]), nlp.vocab)
    words = ["a", "b", ".", "C", "d", "e"]
    # the first token unannotated, then start / not / missing
    doc = Doc(nlp.vocab, words=words, sent_starts=[None, False, False, True, None, False])
    ids = target.gold_ids(Example(Doc(nlp.vocab, words=words), doc))
    s, i = target._labels.index("S"), target._labels.index("I")
    # the first token of a doc is a start, annotated or not
    assert ids.tolist() == [s, i, i, s, -1, i]
    assert sorted(target.label_strings(doc)) == ["I", "S"]


def test_a_doc_without_boundary_annotation_has_no_gold():
    nlp = spacy.blank("en")
    target = make_target("sent_starts")
    target.set_labels(["I", "S"], nlp.vocab)
    # a fresh Doc marks its first token a start and says nothing else
    doc = Doc(nlp.vocab, words=["no", "annotation", "here"])
    assert target.label_strings(doc) == [] and (target.reference_keys(doc) == 0).all()
    assert (target.gold_ids(Example(Doc(nlp.vocab, words=doc.text.split()), doc)) == -1).all()


def test_a_corpus_without_boundaries_is_E008_and_an_unannotated_doc_trains_on():
    nlp = sents_nlp()
    bare = [Example(nlp.make_doc(t), nlp.make_doc(t)) for t in TEXTS]
    with pytest.raises(ValueError, match="E008"):
        nlp.initialize(lambda: bare)
    nlp, _ = trained(n_iter=2)
    losses = nlp.update(bare[:1], sgd=nlp.create_optimizer())
    assert losses["crf_tagger"] == 0.0
    scores = nlp.evaluate(bare)  # nothing to score: no crash, no number
    assert scores["sents_f"] is None


def test_labels_are_s_and_i_only():
    nlp = sents_nlp()
    pipe = nlp.get_pipe("crf_tagger")
    assert pipe.add_label("S") == 1
    with pytest.raises(ValueError, match="E213"):
        pipe.add_label("B-SENT")
    nlp, _ = trained(n_iter=1)
    assert nlp.get_pipe("crf_tagger").labels == ("I", "S")


# ---------------------------------------------------------------------- writing


def test_writing_sets_is_sent_start_and_the_first_token_is_always_a_start():
    nlp = spacy.blank("en")
    target = make_target("sent_starts")
    target.set_labels(["I", "S"], nlp.vocab)
    docs = [Doc(nlp.vocab, words=w.split()) for w in ("a b . c d", "e f", "", "g")]
    lengths = np.asarray([len(d) for d in docs], dtype=np.int64)
    ids = np.asarray([0, 0, 0, 1, 0, 0, 0, 0], dtype=np.int64)  # every doc's first "I"
    target.write_batch(docs, ids, lengths, keep_existing=False)
    assert starts(docs[0]) == [True, False, False, True, False]
    assert [s.text for s in docs[0].sents] == ["a b .", "c d"]
    assert starts(docs[1]) == [True, False] and starts(docs[3]) == [True]
    assert all(d.has_annotation("SENT_START") for d in docs)
    assert target.ids_of_keys(target.reference_keys(docs[0])).tolist() == [1, 0, 0, 1, 0]


def test_the_first_token_is_decoded_as_a_start_so_confidence_and_n_best_describe_it():
    """A model that scores every token "I" still writes S first, and its
    confidence and n-best lists are conditioned on it (not the free decode's)."""
    nlp, _ = trained(n_iter=5, store_confidence=True, n_best=2)
    pipe = nlp.get_pipe("crf_tagger")
    bias = [node for node in pipe.model.walk() if node.has_param("b")][0]
    b = bias.get_param("b").copy()
    b[..., pipe.labels.index("I")] = 30.0
    b[..., pipe.labels.index("S")] = -30.0
    bias.set_param("b", b)
    target = pipe.target
    docs = list(nlp.pipe([Doc(nlp.vocab, words=w.split()) for w in (", and then", "x", "", "a b")]))
    for doc in docs:
        if not len(doc):
            continue
        assert starts(doc) == [True] + [False] * (len(doc) - 1)
        confidence = [t._.crf_confidence for t in doc]
        assert confidence[0] == pytest.approx(1.0)
        for _, labels in doc._.crf_nbest[0]:
            assert labels[0] == "S"
        assert doc._.crf_nbest[0][0][1] == ["S"] + ["I"] * (len(doc) - 1)
    forced = target.forced_labels([d for d in docs if len(d)])
    assert forced.tolist() == [1, -1, -1, 1, 1, -1]


def test_predictions_give_later_components_doc_sents():
    @Language.component("sents_counter_52")
    def count(doc):
        doc.user_data["n_sents"] = len(list(doc.sents))
        return doc

    nlp, _ = trained()
    nlp.add_pipe("sents_counter_52")
    doc = nlp("We went home . She stayed here .")
    assert starts(doc) == [True, False, False, False, True, False, False, False]
    assert doc.user_data["n_sents"] == 2
    assert nlp.get_pipe_meta("crf_tagger").assigns == ["token.is_sent_start"]
    analysis = nlp.analyze_pipes(pretty=False)
    assert analysis["summary"]["crf_tagger"]["assigns"] == ["token.is_sent_start"]


# ------------------------------------------------------------ whole-doc sequences


def test_the_sequence_is_the_doc_whatever_boundaries_it_already_has():
    nlp, _ = trained()
    pipe = nlp.get_pipe("crf_tagger")
    text = "We went home . She stayed here ."
    fresh = nlp.make_doc(text)
    cut = nlp.make_doc(text)  # boundaries at every token, as a bad upstream senter
    cut.from_array([SENT_START], np.ones(len(cut), dtype=np.uint64))
    batches = [pipe.read_batch(DocBatch([doc])) for doc in (fresh, cut)]
    assert [b.layout.lengths.tolist() for b in batches] == [[len(fresh)], [len(cut)]]
    # the feature windows read across those boundaries too: the same scores
    emissions = [pipe.model.predict(b).emissions for b in batches]
    np.testing.assert_array_equal(emissions[0], emissions[1])
    # kept by default, as spaCy's senter keeps them; overwritten with keep_existing false
    assert starts(nlp(cut)) == [True] * len(cut)
    pipe.cfg["keep_existing"] = False
    assert starts(nlp(cut)) == starts(nlp(fresh))


@pytest.mark.parametrize("config", [{"sequence": "sentence"},
                                    {"structure": {"@structures": "spacy-crf.DocChain.v1"}},
                                    {"structure": {"@structures": "spacy-crf.Tree.v1"}},
                                    {"structure": {"@structures": "spacy-crf.ChainTree.v1"}}])
def test_settings_that_cut_the_doc_at_its_boundaries_are_refused(config):
    with pytest.raises(ValueError, match="E212"):
        sents_nlp(**config)


# ----------------------------------------------------------------------- scores


def test_scores_are_spacys_senter_scores():
    nlp = spacy.blank("en")
    gold = gold_doc(nlp.vocab, TEXTS[3])
    pred = Doc(nlp.vocab, words=TEXTS[3].split(),
               sent_starts=[True, False, False, False, True, False, False, False, False, False])
    examples = [Example(pred, gold)]
    scores = score_crf(examples, target="sent_starts")
    expected = senter_score(examples)
    for key in ("sents_p", "sents_r", "sents_f"):
        assert scores[key] == pytest.approx(expected[key]), key
    assert scores["sents_p"] == pytest.approx(1 / 2) and scores["sents_r"] == pytest.approx(1 / 3)
    assert scores[MAIN_SCORE] == scores["sents_f"]
    assert scores["crf_acc"] == pytest.approx(9 / 10)


def test_main_score_and_weights():
    assert main_score_key("sent_starts") == "sents_f"
    assert default_score_weights("sent_starts") == {"sents_f": 1.0, "sents_p": 0.0,
                                                    "sents_r": 0.0}
    assert sents_nlp().config["training"]["score_weights"] == default_score_weights("sent_starts")
    nlp, examples = trained()
    assert nlp.evaluate(examples)["sents_f"] == 1.0


# --------------------------------------------------------------- save and load


def test_saved_and_loaded_pipelines_predict_the_same(tmp_path):
    nlp, _ = trained(n_iter=3)
    texts = ["We went home . She stayed here .", "Hello . How are you ? Fine ."]
    before = [starts(doc) for doc in nlp.pipe(texts)]
    nlp.to_disk(tmp_path / "model")
    for loaded in (spacy.load(tmp_path / "model"), sents_nlp().from_disk(tmp_path / "model")):
        assert [starts(doc) for doc in loaded.pipe(texts)] == before
    fresh = sents_nlp()
    fresh.get_pipe("crf_tagger").from_bytes(nlp.get_pipe("crf_tagger").to_bytes())
    assert [starts(doc) for doc in fresh.pipe(texts)] == before


# --------------------------------------------------------- boundary templates


@pytest.mark.parametrize("lang", ["en", "xx"])
def test_the_boundary_templates_are_read_with_or_without_word_tables(lang):
    # English has clusters and word probabilities; "xx" has no table at all:
    # the boundary's shapes read none, so both pipelines read them
    nlp = spacy.blank(lang)
    nlp.add_pipe("crf_tagger", config={"target": "sent_starts", "model": dict(SMALL_MODEL)})
    train(nlp, examples_of(nlp), n_iter=1)
    read = featurize_layer(nlp).attrs["templates"].source
    assert [t for t in read if t in BOUNDARY_TEMPLATES] == list(BOUNDARY_TEMPLATES)


def test_a_senter_whose_own_templates_see_no_boundary_learns_one_from_its_shapes():
    # the model's own template tells nothing of a boundary; what the shapes on
    # both sides of it tell (". Xxxx"), read on words never seen, is learned
    nlp = spacy.blank("xx")
    nlp.add_pipe("crf_tagger", config={"target": "sent_starts",
                                       "model": {**SMALL_MODEL, "templates": ["LIKE_NUM"]}})
    train(nlp, examples_of(nlp), n_iter=30)
    assert starts(nlp("Zorp blag . Quux fim . Wib")) == [True, False, False, True, False,
                                                         False, True]


def test_a_senter_trained_on_one_line_break_finds_boundaries_after_another():
    # the only mark of these boundaries is a line break (no punctuation, no
    # capital); trained on "\n", the senter reads "\n\n" and "\r\n", whose NORM
    # and SHAPE it never saw, as line breaks too (LINE_BREAK_TEMPLATES)
    nlp = spacy.blank("xx")
    nlp.add_pipe("crf_tagger", config={"target": "sent_starts",
                                       "model": {**SMALL_MODEL, "templates": ["NORM", "NORM[-1]"]}})
    words = ["we", "went", "home", "\n", "then", "we", "ate", "\n", "it", "was", "late"]
    sent_starts = [True, False, False, False, True, False, False, False, True, False, False]
    gold = Doc(nlp.vocab, words=words, sent_starts=sent_starts)
    train(nlp, [Example(Doc(nlp.vocab, words=words), gold)] * 8, n_iter=20)
    for brk in ("\n", "\n\n", "\r\n"):
        doc = nlp(Doc(nlp.vocab, words=["so", "we", "left", brk, "now", "we", "rest"]))
        assert starts(doc) == [True, False, False, False, True, False, False], repr(brk)


# ------------------------------------------------------------------- configs


def test_fill_config_works_from_the_factory_and_target_alone(tmp_path):
    config = filled_config(tmp_path, "senter", "sent_starts")
    assert config["components"]["senter"]["sequence"] == "doc"
    assert config["training"]["score_weights"] == {"sents_f": 1.0, "sents_p": 0.0,
                                                   "sents_r": 0.0}
    nlp = load_model_from_config(config, auto_fill=True)
    assert nlp.get_pipe("senter").target.name == "sent_starts"


# ---------------------------------------------------------- the EWT sample


def sample_examples(nlp, split):
    """The EWT sample's ``split``, ten sentences a doc (as ``spacy convert -n 10``)."""
    from spacy.training.converters import conllu_to_docs

    text = (EWT_SAMPLE / f"en_ewt-{split}.conllu").read_text(encoding="utf8")
    docs = list(conllu_to_docs(text, n_sents=10, no_print=True))
    return [Example(Doc(nlp.vocab, words=[t.text for t in d],
                        spaces=[bool(t.whitespace_) for t in d]), d) for d in docs]


def after_punctuation(examples):
    """The baseline: a start after every . ! ? (and at each doc's first token)."""
    out = []
    for eg in examples:
        words = [t.text for t in eg.reference]
        pred = Doc(eg.reference.vocab, words=words)
        pred.from_array([SENT_START], np.asarray(
            [1 if i == 0 or words[i - 1] in ".!?" else -1 for i in range(len(words))],
            dtype=np.int64).astype(np.uint64))
        out.append(Example(pred, eg.reference))
    return out


def test_a_short_training_on_the_sample_beats_a_start_after_every_period():
    nlp = spacy.blank("en")
    # the config's templates, with a smaller table
    templates = load_config(ROOT / "configs" / "ewt_senter.cfg")["components"]["crf_tagger"][
        "model"]["templates"]
    nlp.add_pipe("crf_tagger", config={"target": "sent_starts",
                                       "model": {"n_buckets": 65536, "templates": templates}})
    train, dev = sample_examples(nlp, "train"), sample_examples(nlp, "dev")
    assert len(train) == 60 and all(len(list(eg.reference.sents)) > 1 for eg in train[:-1])
    optimizer = nlp.initialize(lambda: train)
    for _ in range(5):
        for i in range(0, len(train), 4):
            nlp.update(train[i:i + 4], sgd=optimizer)
    baseline = senter_score(after_punctuation(dev))["sents_f"]
    scores = nlp.evaluate(dev)
    # (measured: baseline 0.72, crf 0.77)
    assert scores["sents_f"] > baseline + 0.03


def test_the_shipped_config_builds_a_whole_doc_senter():
    import yaml

    root = ROOT
    config = load_config(root / "configs" / "ewt_senter.cfg")
    nlp = load_model_from_config(config, auto_fill=True)
    pipe = nlp.get_pipe("crf_tagger")
    assert pipe.target.name == "sent_starts" and pipe.cfg["sequence"] == "doc"
    assert dict(config["training"]["score_weights"]) == default_score_weights("sent_starts")
    project = yaml.safe_load((root / "project.yml").read_text(encoding="utf8"))
    commands = {c["name"]: c for c in project["commands"]}
    # the sample is converted with several sentences a doc, and kept out of `all`
    assert all("-n 10" in line for line in commands["convert-sample-sents"]["script"])
    assert "configs/ewt_senter.cfg" in commands["train-sample-sents"]["deps"]
    assert project["workflows"]["sents-sample"] == ["convert-sample-sents", "train-sample-sents"]
    assert not set(project["workflows"]["sents-sample"]) & set(project["workflows"]["all"])


def test_a_start_the_tokenizer_split_is_a_start_at_its_first_piece_only():
    """Gold "Don't" starting a sentence, predicted "Do" "n't": only "Do" is a
    start, as spaCy's Example.get_aligned_sent_starts reads it; a predicted
    token made of two reference tokens starts one where the first does."""
    nlp = spacy.blank("en")
    target = make_target("sent_starts")
    target.set_labels(target.order_labels([]), nlp.vocab)
    s, i = target._labels.index("S"), target._labels.index("I")
    gold = Doc(nlp.vocab, words=["He", "left", ".", "Don't", "go", "."],
               spaces=[True, False, True, True, False, False],
               sent_starts=[True, False, False, True, False, False])
    split = Doc(nlp.vocab, words=["He", "left", ".", "Do", "n't", "go", "."],
                spaces=[True, False, True, False, True, False, False])
    example = Example(split, gold)
    assert target.gold_ids(example).tolist() == [s, i, i, s, i, i, i]
    assert [bool(v) for v in example.get_aligned_sent_starts()] == [
        ids == s for ids in target.gold_ids(example).tolist()]
    merged = Doc(nlp.vocab, words=["He", "left", ".", "Don't", "go."],
                 spaces=[True, False, True, True, False])
    assert target.gold_ids(Example(merged, gold)).tolist() == [s, i, i, s, i]


def test_crf_acc_counts_the_no_starts_whether_or_not_the_tokens_differ():
    nlp = spacy.blank("en")
    words, spaces = ["He", "left", ".", "She", "stays", "."], [True, False, True, True, False, False]
    gold = Doc(nlp.vocab, words=words, spaces=spaces,
               sent_starts=[True, False, False, True, False, False])
    pred = Doc(nlp.vocab, words=words, spaces=spaces, sent_starts=[True] + [False] * 5)
    same = score_crf([Example(pred, gold)], target="sent_starts")["crf_acc"]
    assert same == pytest.approx(5 / 6)
    # one token merged: 4 of the 5 predicted tokens align one to one, 3 right
    merged = Doc(nlp.vocab, words=words[:4] + ["stays."], spaces=spaces[:4] + [False],
                 sent_starts=[True] + [False] * 4)
    precision, recall = 3 / 4, 3 / 6
    assert score_crf([Example(merged, gold)], target="sent_starts")["crf_acc"] == pytest.approx(
        2 * precision * recall / (precision + recall))


def test_a_corpus_of_single_sentence_docs_warns_w056():
    """crf-convert uner writes a sentence a doc: the senter had no boundary to
    learn, and scored sents_f 100 on such a dev corpus, in silence."""
    import warnings as w

    nlp = sents_nlp()
    one = [Doc(nlp.vocab, words=["Ada", "ran", "."], sent_starts=[True, False, False])] * 3
    examples = [Example(Doc(nlp.vocab, words=[t.text for t in d]), d) for d in one]
    with pytest.warns(UserWarning, match="W056"):
        nlp.initialize(lambda: examples)
    two = [Doc(nlp.vocab, words=["Ada", "ran", ".", "Bo", "sat", "."],
               sent_starts=[True, False, False, True, False, False])]
    examples = [Example(Doc(nlp.vocab, words=[t.text for t in d]), d) for d in two]
    with w.catch_warnings(record=True) as record:
        w.simplefilter("always")
        sents_nlp().initialize(lambda: examples)
    assert not any("W056" in str(r.message) for r in record)
