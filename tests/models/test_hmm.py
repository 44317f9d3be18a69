"""spacy-crf.HMM.v1: counts by hand, the HMM's own Viterbi and posteriors by
enumeration, save/load, spacy train and nlp.update, and the config errors."""

import itertools

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from spacy_crf.converters import read_conllu_upos
from conftest import chain, ewt_sample_corpus, spacy_train

from conftest import ROOT
SAMPLE = ROOT / "assets" / "ewt_sample"
HMM = {"@architectures": "spacy-crf.HMM.v1", "n_buckets": 4096, "smoothing": 0.5}

CORPUS = [("the dog runs".split(), ["DET", "NOUN", "VERB"]),
          ("a dog sleeps".split(), ["DET", "NOUN", "VERB"]),
          ("the cat runs fast".split(), ["DET", "NOUN", "VERB", "ADV"]),
          ("dogs run".split(), ["NOUN", "VERB"])]


def hmm_pipeline(corpus=CORPUS, model=HMM, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos", "model": dict(model), **config})
    examples = [Example.from_dict(Doc(nlp.vocab, words=w), {"pos": t}) for w, t in corpus]
    nlp.initialize(lambda: examples)
    return nlp, examples


def hmm_layer(nlp):
    return next(node for node in nlp.get_pipe("crf_tagger").model.walk() if node.name == "hmm")


def test_transitions_start_and_end_are_smoothed_relative_frequencies():
    nlp, _ = hmm_pipeline()
    labels = nlp.get_pipe("crf_tagger").labels
    ix = {tag: i for i, tag in enumerate(labels)}
    layer = hmm_layer(nlp)
    L, d = len(labels), HMM["smoothing"]
    # by hand: out of NOUN: NOUN->VERB 4 times, nothing else, no END
    noun_out = 4
    expected = np.log((4 + d) / (noun_out + d * (L + 1)))
    assert layer.get_param("transitions")[ix["NOUN"], ix["VERB"]] == pytest.approx(expected, rel=1e-5)
    assert layer.get_param("transitions")[ix["NOUN"], ix["DET"]] == pytest.approx(
        np.log(d / (noun_out + d * (L + 1))), rel=1e-5)
    # START -> DET 3 of 4 sentences; VERB -> END 2 (runs, sleeps... and run): 3 of VERB's 4 moves
    assert layer.get_param("start")[ix["DET"]] == pytest.approx(np.log((3 + d) / (4 + d * (L + 1))),
                                                                 rel=1e-5)
    assert layer.get_param("end")[ix["VERB"]] == pytest.approx(np.log((3 + d) / (4 + d * (L + 1))),
                                                               rel=1e-5)
    # every row a distribution over the L tags and END
    rows = np.exp(np.concatenate([layer.get_param("transitions"),
                                  layer.get_param("end")[:, None]], axis=1)).sum(axis=1)
    np.testing.assert_allclose(rows, 1.0, rtol=1e-5)


def test_known_word_emissions_are_the_hmm_lexicon_up_to_a_per_word_constant():
    nlp, _ = hmm_pipeline()
    pipe = nlp.get_pipe("crf_tagger")
    labels = pipe.labels
    d = HMM["smoothing"]
    doc = Doc(nlp.vocab, words=["dog", "runs"])
    emissions = np.asarray(pipe.model.predict([doc]).emissions, dtype=np.float64)
    # P(w | y) from the counts with the same smoothing of P(y | w) towards P(y)
    tag_count = np.array([sum(t.count(y) for _, t in CORPUS) for y in labels], dtype=float)
    p_tag = (tag_count + d) / (tag_count.sum() + d * len(labels))
    for row, word in zip(emissions, ["dog", "runs"]):
        word_tag = np.array([sum(1 for w, t in CORPUS for a, b in zip(w, t) if a == word and b == y)
                             for y in labels], dtype=float)
        p_y_given_w = (word_tag + d * p_tag) / (word_tag.sum() + d)
        log_p_w_given_y = np.log(p_y_given_w) - np.log(p_tag)  # + log P(w), the same for all y
        np.testing.assert_allclose(row - row[0], log_p_w_given_y - log_p_w_given_y[0],
                                   rtol=1e-5, atol=1e-6)


def test_with_little_smoothing_the_lexicon_is_the_maximum_likelihood_hmms():
    """log c(w, y) / c(y), the textbook HMM emission, up to the word's constant."""
    nlp, _ = hmm_pipeline(model={**HMM, "smoothing": 1e-6})
    pipe = nlp.get_pipe("crf_tagger")
    labels = pipe.labels
    words = ["run", "runs", "dog"]
    emissions = np.asarray(pipe.model.predict([Doc(nlp.vocab, words=words)]).emissions)
    tokens = [(a, b) for w, t in CORPUS for a, b in zip(w, t)]
    for row, word in zip(emissions, words):
        seen = [y for y in labels if (word, y) in tokens]
        mle = {y: np.log(tokens.count((word, y)) / sum(1 for _, b in tokens if b == y)) for y in seen}
        ref = seen[0]
        for y in seen:
            assert row[labels.index(y)] - row[labels.index(ref)] == pytest.approx(
                mle[y] - mle[ref], abs=1e-4)
        for y in set(labels) - set(seen):  # a tag never seen with the word: nearly impossible
            assert row[labels.index(y)] < row[labels.index(ref)] - 10


def test_unknown_words_fall_back_to_their_longest_seen_suffix():
    nlp, _ = hmm_pipeline()
    pipe = nlp.get_pipe("crf_tagger")
    ix = {tag: i for i, tag in enumerate(pipe.labels)}
    doc = Doc(nlp.vocab, words=["the", "walks", "cats"])  # unseen: ends like runs / dogs
    emissions = np.asarray(pipe.model.predict([doc]).emissions)
    assert emissions[1].argmax() in (ix["VERB"], ix["NOUN"])
    assert np.isfinite(emissions).all()
    never = Doc(nlp.vocab, words=["Qzxj"])  # no suffix seen, capitalised: level 0 or nothing
    assert np.isfinite(np.asarray(pipe.model.predict([never]).emissions)).all()


def brute_force(scores, n):
    """Every tag sequence's joint log probability (the HMM's, up to a constant)."""
    E = np.asarray(scores.emissions, dtype=np.float64)
    T, S, F = (np.asarray(x, dtype=np.float64) for x in (scores.transitions, scores.start,
                                                          scores.end))
    L = E.shape[1]
    paths = list(itertools.product(range(L), repeat=n))
    joint = np.array([S[p[0]] + F[p[-1]] + sum(E[t, p[t]] for t in range(n))
                      + sum(T[p[t - 1], p[t]] for t in range(1, n)) for p in paths])
    return paths, joint


def test_viterbi_and_confidences_are_the_hmms_by_enumeration():
    nlp, _ = hmm_pipeline(store_confidence=True)
    pipe = nlp.get_pipe("crf_tagger")
    words = ["a", "cat", "walks", "fast"]
    scores = pipe.model.predict([Doc(nlp.vocab, words=words)])
    paths, joint = brute_force(scores, len(words))
    doc = nlp(Doc(nlp.vocab, words=words))
    best = paths[int(joint.argmax())]
    assert [t.pos_ for t in doc] == [pipe.labels[i] for i in best]
    posterior = np.exp(joint - np.logaddexp.reduce(joint))
    for t, token in enumerate(doc):
        expected = posterior[[p[t] == best[t] for p in paths]].sum()
        assert token._.crf_confidence == pytest.approx(expected, rel=1e-4)


def test_update_changes_nothing_and_reports_the_loss():
    nlp, examples = hmm_pipeline()
    layer = hmm_layer(nlp)
    before = {name: layer.get_param(name).copy() for name in layer.param_names}
    optimizer = nlp.create_optimizer()  # spaCy's default: Adam with weight decay
    losses = {}
    for _ in range(3):
        nlp.update(examples, sgd=optimizer, losses=losses)
    assert losses["crf_tagger"] > 0
    for name, value in before.items():
        np.testing.assert_array_equal(layer.get_param(name), value)


def test_save_and_load_give_the_same_tags(tmp_path):
    nlp, _ = hmm_pipeline()
    nlp.to_disk(tmp_path / "hmm")
    loaded = spacy.load(tmp_path / "hmm")
    words = ["the", "cat", "sleeps", "fast"]
    assert [t.pos_ for t in loaded(Doc(loaded.vocab, words=words))] == \
        [t.pos_ for t in nlp(Doc(nlp.vocab, words=words))]


def test_the_hmm_tags_the_ewt_sample():
    train = read_conllu_upos(SAMPLE / "en_ewt-train.conllu")
    test = read_conllu_upos(SAMPLE / "en_ewt-test.conllu")
    nlp, _ = hmm_pipeline(train, {"@architectures": "spacy-crf.HMM.v1"})
    examples = [Example.from_dict(Doc(nlp.vocab, words=w), {"pos": t}) for w, t in test]
    # a bigram HMM from 600 sentences: well above the majority tag (about 0.2)
    assert nlp.evaluate(examples)["pos_acc"] > 0.8


@pytest.mark.parametrize("config, code", [
    ({"structure": "tree"}, "E103.*a first-order chain"),
    ({"structure": chain(2)}, "E103.*a first-order chain"),
    # input-dependent transitions need a FeatureCRF: E183 says so, not E103's
    # "use a first-order chain", which the user already has
    ({"structure": {"@structures": "spacy-crf.Chain.v1", "order": 1,
                    "transition_templates": ["NORM[-1]|NORM[0]"]}}, "E183"),
])
def test_structures_the_hmm_does_not_score_are_refused(config, code):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=code):
        nlp.add_pipe("crf_tagger", config={"target": "pos", "model": dict(HMM), **config})


@pytest.mark.parametrize("value", [0, -1.0, True, "x"])
def test_smoothing_must_be_positive(value):
    nlp = spacy.blank("en")
    with pytest.raises(Exception, match="E104|smoothing"):  # ours, or the config check
        nlp.add_pipe("crf_tagger", config={"target": "pos",
                                           "model": {**HMM, "smoothing": value}})


def test_spacy_train_trains_the_hmm_config(tmp_path):
    ewt_sample_corpus(tmp_path)
    spacy_train(ROOT / "configs" / "ewt_upos_hmm.cfg", tmp_path / "out",
                "--paths.train", tmp_path / "train.spacy", "--paths.dev", tmp_path / "dev.spacy")
    nlp = spacy.load(tmp_path / "out" / "model-best")
    assert nlp.meta["performance"]["pos_acc"] > 0.8


def test_initialize_without_gold_of_its_target_says_the_tables_stay_uniform():
    """The HMM learns from the counts initialize reads: examples without the
    target's gold (or only empty docs, which crashed numpy) leave it uniform
    for good, and W052 says so; the FeatureCRF takes the same call silently."""
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("crf_tagger", config={"target": "tag", "model": dict(HMM)})
    no_tags = [Example.from_dict(Doc(nlp.vocab, words=w), {"pos": t}) for w, t in CORPUS]
    with pytest.warns(UserWarning, match=r"W052.*HMM.*target 'tag'.*uniform"):
        pipe.initialize(lambda: no_tags, nlp=nlp, labels=["DT", "NN"])
    empty = Doc(nlp.vocab, words=[])
    with pytest.warns(UserWarning, match=r"W052"):
        pipe.initialize(lambda: [Example(empty, empty)], nlp=nlp, labels=["DT", "NN"])
    assert [t.tag_ for t in nlp("a dog")] == ["DT", "DT"]  # (uniform: the first label)
    trained, _ = hmm_pipeline()  # with gold: no W052
    assert [t.pos_ for t in trained("the dog runs")] == ["DET", "NOUN", "VERB"]


def test_spacy_trains_log_does_not_call_an_hmms_model_best_untrained():
    """W010 (model-best evaluated after one update) is not for a pipeline whose
    every trained component learned from counts at initialize."""
    from spacy_crf.training.train_logger import learned_at_initialize

    nlp, _ = hmm_pipeline()
    assert learned_at_initialize(nlp)
    nlp.add_pipe("crf_tagger", name="other", config={"target": "tag"})
    assert not learned_at_initialize(nlp)
