"""The ``crf_tagger`` component: training, scoring, serialization, bad inputs."""

import math
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
import spacy
import srsly
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import Adam

from spacy_crf import CRFTagger

TARGETS = ["tag", "pos", "_.chunk"]
SCORE_KEY = {"tag": "tag_acc", "pos": "pos_acc", "_.chunk": "chunk_acc"}
UNSEEN_TEXTS = ["the red cat sat on a box .", "a dog slept .", "the small bird ran slowly ."]


# ------------------------------------------------------------------ training


@pytest.mark.parametrize("target", TARGETS)
def test_learns_toy_pattern(toy, target):
    nlp = toy.make_nlp(target)
    examples = toy.toy_examples(nlp, target)
    losses = toy.train(nlp, examples, n_iter=30)
    assert losses[-1] < losses[0] / 10
    assert all(math.isfinite(x) for x in losses)
    scores = nlp.evaluate(examples)
    assert scores["crf_acc"] == 1.0
    assert scores[SCORE_KEY[target]] == 1.0
    if target == "_.chunk":
        assert scores["chunk_f"] == 1.0
        assert scores["chunk_p"] == 1.0 and scores["chunk_r"] == 1.0
        assert set(scores["chunk_per_type"]) == {"NP", "VP", "ADVP", "PP"}
    # predictions land on the docs
    for eg in examples:
        doc = nlp(eg.reference.text)
        assert toy.doc_labels(doc, target) == toy.doc_labels(eg.reference, target)


def test_add_pipe_in_blank_pipeline_and_labels(toy):
    nlp = spacy.blank("en")
    tagger = nlp.add_pipe("crf_tagger", config={"model": toy.SMALL_MODEL})
    assert isinstance(tagger, CRFTagger)
    assert nlp.pipe_names == ["crf_tagger"]
    assert tagger.labels == ()
    examples = toy.toy_examples(nlp, "tag")
    nlp.initialize(lambda: examples)
    assert set(tagger.labels) == {"DT", "NN", "VBD", "RB", "IN", "JJ", "."}
    assert tagger.label_data == list(tagger.labels)


def test_tags_that_are_spacy_symbols(toy):
    """Tag strings such as 'NOUN' or 'X' are also spaCy symbols (their key is not their hash)."""
    nlp = toy.make_nlp("tag")
    examples = []
    for line in toy.TOY_TEXT:
        words, ptb = toy.parse(line)
        tags = [{"DT": "DET", "NN": "NOUN", "JJ": "X", ".": "PUNCT"}.get(t, t) for t in ptb]
        examples.append(toy.make_example(nlp, words, tags, "tag"))
    toy.train(nlp, examples, n_iter=30)
    assert {"NOUN", "X", "PUNCT"} <= set(nlp.get_pipe("crf_tagger").labels)
    assert nlp.evaluate(examples)["tag_acc"] == 1.0


def test_initialize_with_explicit_labels(toy):
    nlp = toy.make_nlp("tag")
    examples = toy.toy_examples(nlp, "tag")
    labels = ["DT", "NN", "VBD", "RB", "IN", "JJ", ".", "EXTRA"]
    nlp.get_pipe("crf_tagger").initialize(lambda: examples, nlp=nlp, labels=labels)
    assert set(nlp.get_pipe("crf_tagger").labels) == set(labels)
    nlp("the cat sat")


def test_add_label_before_initialize(toy):
    nlp = toy.make_nlp("tag")
    tagger = nlp.get_pipe("crf_tagger")
    assert tagger.add_label("ZZ") == 1
    assert tagger.add_label("ZZ") == 0
    nlp.initialize(lambda: toy.toy_examples(nlp, "tag"))
    assert "ZZ" in tagger.labels and "NN" in tagger.labels


def test_initialize_without_any_gold_labels_is_a_clear_error(toy):
    nlp = toy.make_nlp("_.chunk")
    examples = [Example(nlp.make_doc("the cat sat"), nlp.make_doc("the cat sat"))]
    with pytest.raises(ValueError, match="No labels found"):
        nlp.initialize(lambda: examples)


# ------------------------------------------------------------------ scoring & confidence


@pytest.mark.parametrize("target", ["tag", "_.chunk"])
def test_store_confidence(toy, target):
    nlp, _ = toy.trained_nlp(target, store_confidence=True)
    for doc in nlp.pipe(UNSEEN_TEXTS + ["the cat sat ."]):
        conf = [t._.crf_confidence for t in doc]
        assert all(c is not None and 0.0 < c <= 1.0 + 1e-6 for c in conf), conf
    # confident on the training pattern
    doc = nlp("the cat sat .")
    assert min(t._.crf_confidence for t in doc) > 0.5


def test_confidence_is_the_marginal_of_the_predicted_label(toy):
    """With a single token, P(label) is softmax(emission + start + end)."""
    nlp, _ = toy.trained_nlp("tag", n_iter=3, store_confidence=True)
    tagger = nlp.get_pipe("crf_tagger")
    doc = nlp("cat")
    s = tagger.model.predict([nlp.make_doc("cat")])
    logits = s.emissions[0] + s.start + s.end
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    best = int(np.argmax(probs))
    assert doc[0].tag_ == tagger.labels[best]
    assert doc[0]._.crf_confidence == pytest.approx(float(probs[best]), rel=1e-4)


def test_no_confidence_when_not_stored(toy):
    nlp, _ = toy.trained_nlp("tag", n_iter=3)
    assert all(t._.crf_confidence is None for t in nlp("the cat sat"))


# ------------------------------------------------------------------ serialization


def _labels(doc, target):
    if target == "tag":
        return [t.tag_ for t in doc]
    if target == "pos":
        return [t.pos_ for t in doc]
    return [t._.get(target[2:]) for t in doc]


def _raw_scores(nlp):
    """Every score of the CRF for a fixed batch (to check that weights did not change)."""
    tagger = nlp.get_pipe("crf_tagger")
    scores = tagger.model.predict([nlp.make_doc(t) for t in UNSEEN_TEXTS])
    return [np.array(scores.emissions, copy=True), np.array(scores.transitions, copy=True),
            np.array(scores.start, copy=True), np.array(scores.end, copy=True)]


def _same_scores(a, b):
    return all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(a, b))


def _pipeline_outputs(nlp, target="tag"):
    docs = list(nlp.pipe(UNSEEN_TEXTS + ["the cat sat ."]))
    return [(_labels(d, target), [t._.crf_confidence for t in d]) for d in docs]


@pytest.mark.parametrize("target", ["tag", "_.chunk"])
def test_to_disk_and_spacy_load(toy, tmp_path, target):
    nlp, _ = toy.trained_nlp(target, n_iter=8, store_confidence=True)
    before = _pipeline_outputs(nlp, target)
    nlp.to_disk(tmp_path / "pipe")
    assert sorted(p.name for p in (tmp_path / "pipe" / "crf_tagger").iterdir()) == ["cfg", "model"]
    loaded = spacy.load(tmp_path / "pipe")
    assert loaded.get_pipe("crf_tagger").labels == nlp.get_pipe("crf_tagger").labels
    assert _pipeline_outputs(loaded, target) == before
    assert _same_scores(_raw_scores(loaded), _raw_scores(nlp))


def test_nlp_to_bytes_from_bytes(toy):
    nlp, _ = toy.trained_nlp("tag", n_iter=8, store_confidence=True)
    before = _pipeline_outputs(nlp)
    fresh = toy.make_nlp("tag", store_confidence=True)
    fresh.from_bytes(nlp.to_bytes())
    assert _pipeline_outputs(fresh) == before
    assert _same_scores(_raw_scores(fresh), _raw_scores(nlp))


def test_component_to_bytes_from_bytes(toy):
    nlp, _ = toy.trained_nlp("pos", n_iter=8, store_confidence=True)
    before = _pipeline_outputs(nlp, "pos")
    fresh = toy.make_nlp("pos", store_confidence=True)
    fresh.get_pipe("crf_tagger").from_bytes(nlp.get_pipe("crf_tagger").to_bytes())
    assert _pipeline_outputs(fresh, "pos") == before
    assert _same_scores(_raw_scores(fresh), _raw_scores(nlp))


# regression: CRFTagger once overrode __setstate__ for a dict state, but the
# Cython TrainablePipe pickles a tuple; it now rebuilds through __reduce__
def test_pickle_round_trip(toy):
    nlp, _ = toy.trained_nlp("_.chunk", n_iter=8)
    before = _pipeline_outputs(nlp, "_.chunk")
    assert _pipeline_outputs(pickle.loads(pickle.dumps(nlp)), "_.chunk") == before


SPAWN_SCRIPT = """
import multiprocessing, json, sys, spacy
if __name__ == "__main__":
    multiprocessing.set_start_method("spawn")
    nlp = spacy.load(sys.argv[1])
    texts = ["the big dog ran .", "a cat sat ."] * 3
    one = [[t._.chunk for t in d] for d in nlp.pipe(texts)]
    two = [[t._.chunk for t in d] for d in nlp.pipe(texts, n_process=2, batch_size=2)]
    print(json.dumps([one, two]))
"""


@pytest.mark.slow
def test_pipe_with_two_spawned_processes(toy, tmp_path):
    nlp, _ = toy.trained_nlp("_.chunk", n_iter=10)
    nlp.to_disk(tmp_path / "pipe")
    script = tmp_path / "spawn_pipe.py"
    script.write_text(SPAWN_SCRIPT, encoding="utf8")
    try:
        proc = subprocess.run([sys.executable, str(script), str(tmp_path / "pipe")],
                              capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    except subprocess.TimeoutExpired:
        pytest.fail("nlp.pipe(n_process=2) with spawn hung")
    assert proc.returncode == 0, proc.stderr[-2000:]
    one, two = srsly.json_loads(proc.stdout.strip().splitlines()[-1])
    assert two == one and one[0][0] == "B-NP"


def test_spacy_load_in_fresh_process_uses_entry_points(toy, tmp_path):
    nlp, _ = toy.trained_nlp("_.chunk", n_iter=10)
    nlp.to_disk(tmp_path / "pipe")
    text = "the big dog ran ."
    expected = [t._.chunk for t in nlp(text)]
    code = (
        "import sys, json, spacy\n"
        "assert 'spacy_crf' not in sys.modules\n"
        f"nlp = spacy.load({str(tmp_path / 'pipe')!r})\n"
        f"print(json.dumps([t._.chunk for t in nlp({text!r})]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert srsly.json_loads(proc.stdout.strip().splitlines()[-1]) == expected


@pytest.mark.parametrize("target", ["tag", "_.chunk"])
def test_pipe_with_two_processes(toy, target):
    nlp, _ = toy.trained_nlp(target, n_iter=10, store_confidence=True)
    texts = (UNSEEN_TEXTS + ["", "the cat sat ."]) * 4
    one = [(toy.doc_labels(d, target), [t._.crf_confidence for t in d])
           for d in nlp.pipe(texts, n_process=1, batch_size=3)]
    two = [(toy.doc_labels(d, target), [t._.crf_confidence for t in d])
           for d in nlp.pipe(texts, n_process=2, batch_size=3)]
    assert two == one
    assert all(labels for labels, _ in one if labels)  # predictions were set


# ------------------------------------------------------------------ corrupt model directories


def _corrupt(path, how, saved):
    comp = path / "crf_tagger"
    if how == "model-missing":
        (comp / "model").unlink()
    elif how == "model-truncated":
        data = (comp / "model").read_bytes()
        (comp / "model").write_bytes(data[: len(data) // 2])
    elif how == "model-empty":
        (comp / "model").write_bytes(b"")
    elif how == "model-garbage":
        (comp / "model").write_bytes(b"\x00not a model\xff" * 50)
    elif how == "model-other-config":
        # weights of a model with the same labels and table size but another config: the
        # hashed table loads, then the potentials' dims clash
        (comp / "model").write_bytes((saved.parent / "other_model").read_bytes())
    elif how == "cfg-missing":
        (comp / "cfg").unlink()
    elif how == "cfg-not-json":
        (comp / "cfg").write_text("{labels: [", encoding="utf8")
    elif how == "cfg-null":  # valid JSON, but no settings: it was taken for a cfg left out
        (comp / "cfg").write_text("null", encoding="utf8")
    elif how == "cfg-no-labels":
        (comp / "cfg").write_text('{"target": "tag"}', encoding="utf8")
    elif how == "cfg-other-target":
        cfg = srsly.read_json(comp / "cfg")
        cfg["target"] = "pos"
        srsly.write_json(comp / "cfg", cfg)
    elif how == "cfg-label-count":
        cfg = srsly.read_json(comp / "cfg")
        cfg["labels"] = cfg["labels"][:2]
        srsly.write_json(comp / "cfg", cfg)
    else:
        raise AssertionError(how)


CORRUPTIONS = ["model-missing", "model-truncated", "model-empty", "model-garbage",
               "model-other-config", "cfg-missing",
               "cfg-not-json", "cfg-null", "cfg-no-labels", "cfg-other-target",
               "cfg-label-count"]
MENTIONS = {"model-missing": "model", "cfg-missing": "cfg", "cfg-no-labels": "label",
            "cfg-null": "E010",
            "cfg-other-target": "target"}


@pytest.fixture(scope="module")
def saved_pipeline(tmp_path_factory, toy):
    nlp, _ = toy.trained_nlp("tag", n_iter=8)
    path = tmp_path_factory.mktemp("saved") / "pipe"
    nlp.to_disk(path)
    # (the earlier architecture, which took a tree's relation groups, on a chain)
    other, _ = toy.trained_nlp("tag", n_iter=2, model=dict(
        toy.SMALL_MODEL, n_relations=2, **{"@architectures": "spacy-crf.FeatureCRF.v1"}))
    assert other.get_pipe("crf_tagger").labels == nlp.get_pipe("crf_tagger").labels
    (path.parent / "other_model").write_bytes(other.get_pipe("crf_tagger").model.to_bytes())
    return path


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_spacy_load_of_a_corrupt_directory_names_the_problem(saved_pipeline, tmp_path, how):
    import shutil

    path = tmp_path / "pipe"
    shutil.copytree(saved_pipeline, path)
    _corrupt(path, how, saved_pipeline)
    with pytest.raises(ValueError) as excinfo:
        spacy.load(path)
    message = str(excinfo.value)
    # our own error (not a bare msgpack / numba / thinc traceback), naming the component and place
    # (without its cfg the component keeps the config's, which has no labels: E186)
    assert any(code in message for code in ("E010", "E011", "E186", "E252")), message
    assert "crf_tagger" in message
    assert str(path / "crf_tagger") in message
    if how in MENTIONS:
        assert MENTIONS[how] in message, message


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_failed_from_disk_leaves_the_component_usable(toy, saved_pipeline, tmp_path, how):
    import shutil

    nlp = spacy.load(saved_pipeline)
    tagger = nlp.get_pipe("crf_tagger")
    before, raw = _pipeline_outputs(nlp), _raw_scores(nlp)
    labels = tagger.labels
    path = tmp_path / "pipe"
    shutil.copytree(saved_pipeline, path)
    _corrupt(path, how, saved_pipeline)
    if how == "cfg-missing":
        # as spaCy's pipes: the component keeps its own cfg, which its weights fit
        tagger.from_disk(path / "crf_tagger")
    else:
        with pytest.raises(ValueError):
            tagger.from_disk(path / "crf_tagger")
    assert tagger.labels == labels
    assert _same_scores(_raw_scores(nlp), raw)
    assert _pipeline_outputs(nlp) == before
    # and it still trains
    examples = toy.toy_examples(nlp, "tag")
    losses = {}
    nlp.update(examples, sgd=Adam(0.1), losses=losses)
    assert math.isfinite(losses["crf_tagger"])


@pytest.mark.parametrize("data", [b"", b"junk", None, "other", "cfg-null"],
                         ids=["empty", "junk", "truncated", "other-config", "cfg-null"])
def test_failed_from_bytes_leaves_the_component_usable(saved_pipeline, data):
    nlp = spacy.load(saved_pipeline)
    tagger = nlp.get_pipe("crf_tagger")
    before, raw = _pipeline_outputs(nlp), _raw_scores(nlp)
    if data is None:
        good = tagger.to_bytes()
        data = good[: len(good) - 7]
    elif data == "other":
        other = srsly.msgpack_loads(tagger.to_bytes())
        other["model"] = (saved_pipeline.parent / "other_model").read_bytes()
        data = srsly.msgpack_dumps(other)
    elif data == "cfg-null":  # a cfg of null was taken for one left out
        data = srsly.msgpack_dumps({**srsly.msgpack_loads(tagger.to_bytes()), "cfg": None})
    with pytest.raises(ValueError, match="E010"):
        tagger.from_bytes(data)
    assert _same_scores(_raw_scores(nlp), raw)
    assert _pipeline_outputs(nlp) == before


# ------------------------------------------------------------------ bad inputs


def test_empty_doc_before_and_after_training(toy):
    nlp = toy.make_nlp("_.chunk", store_confidence=True)
    assert len(nlp("")) == 0  # not initialized: nothing to do, no error
    nlp, _ = toy.trained_nlp("_.chunk", n_iter=3, store_confidence=True)
    doc = nlp("")
    assert len(doc) == 0
    assert not any(isinstance(k, tuple) and k and k[0] == "spacy_crf" for k in doc.user_data)
    docs = list(nlp.pipe(["", "the cat", "", "sat"]))
    assert [len(d) for d in docs] == [0, 2, 0, 1]
    assert all(t._.chunk is not None for d in docs for t in d)


def test_one_token_and_whitespace_docs(toy):
    nlp, _ = toy.trained_nlp("tag", n_iter=10, store_confidence=True)
    one = nlp("cat")
    assert one[0].tag_ == "NN"
    for text in ["   ", "\n", " the  cat \n sat "]:
        doc = nlp(text)
        assert all(t.tag_ in nlp.get_pipe("crf_tagger").labels for t in doc)
        assert all(0 < t._.crf_confidence <= 1 + 1e-6 for t in doc)


def _random_params(tagger, seed=0):
    rng = np.random.default_rng(seed)
    for node in tagger.model.walk():
        for name in node.param_names:
            if node.has_param(name):
                p = node.get_param(name)
                node.set_param(name, rng.normal(scale=1.0, size=p.shape).astype(p.dtype))


def test_sentence_boundaries_split_the_chain(toy):
    nlp = toy.make_nlp("tag", sequence="sentence")
    examples = toy.toy_examples(nlp, "tag")
    nlp.initialize(lambda: examples)
    tagger = nlp.get_pipe("crf_tagger")
    _random_params(tagger)
    w1, w2 = ["the", "big", "dog", "sat"], ["a", "cat", "ran", "home", "."]
    with_bounds = Doc(nlp.vocab, words=w1 + w2, sent_starts=[True] + [False] * 3 + [True] + [False] * 4)
    without = Doc(nlp.vocab, words=w1 + w2)
    separate = [Doc(nlp.vocab, words=w1), Doc(nlp.vocab, words=w2)]
    pred = tagger.predict([with_bounds])
    sep = tagger.predict(separate)
    assert pred.label_ids.tolist() == sep.label_ids.tolist()
    # the loss of a doc with boundaries is the sum over its sentences; without, it is not
    tags = ["DT", "JJ", "NN", "VBD", "DT", "NN", "VBD", "RB", "."]
    def loss(docs, tag_lists):
        egs = [Example.from_dict(d, {"tags": t}) for d, t in zip(docs, tag_lists)]
        return tagger.get_loss(egs, tagger.model.predict([eg.predicted for eg in egs]))[0]
    split_loss = loss(separate, [tags[:4], tags[4:]])
    assert loss([with_bounds], [tags]) == pytest.approx(split_loss, rel=1e-6)
    assert loss([without], [tags]) != pytest.approx(split_loss, rel=1e-3)
    # a doc without boundaries still gets a label for every token
    assert len(tagger.predict([without]).label_ids) == 9


def test_get_loss_given_what_predict_returns_names_the_scores_it_takes(toy):
    """spaCy's get_loss takes the model's scores; pipe.predict's decoded labels
    gave an AttributeError from inside the package."""
    nlp = toy.make_nlp("tag")
    examples = toy.toy_examples(nlp, "tag")
    nlp.initialize(lambda: examples)
    tagger = nlp.get_pipe("crf_tagger")
    docs = [eg.predicted for eg in examples]
    loss, _ = tagger.get_loss(examples, tagger.model.predict(docs))
    assert np.isfinite(loss)
    with pytest.raises(ValueError, match=r"E260.*CRFPrediction.*pipe\.model\.predict\(docs\)"):
        tagger.get_loss(examples, tagger.predict(docs))


def test_predict_before_initialize_names_initialize(toy):
    nlp = toy.make_nlp("tag")
    with pytest.raises(ValueError, match="initialize"):
        nlp("the cat sat")


@pytest.mark.parametrize("target", ["lemmas", "TAG", "_.", "_.1bad", "_.a-b", "", "ent"])
def test_wrong_target_is_a_clear_error_at_add_pipe(toy, target):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError) as excinfo:
        nlp.add_pipe("crf_tagger", config={"model": toy.SMALL_MODEL, "target": target})
    message = str(excinfo.value)
    assert f"'{target}'" in message and "_.NAME" in message


@pytest.mark.parametrize("structure", ["linear", "CHAIN", "semi-markov"])
def test_wrong_structure_is_a_clear_error_at_add_pipe(toy, structure):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError) as excinfo:
        nlp.add_pipe("crf_tagger", config={"model": toy.SMALL_MODEL, "structure": structure})
    message = str(excinfo.value)
    assert structure in message and "chain" in message


@pytest.mark.parametrize("n_buckets", [0, -5])
def test_bad_n_buckets_is_a_clear_error(toy, n_buckets):
    nlp = spacy.blank("en")
    model = dict(toy.SMALL_MODEL, n_buckets=n_buckets)
    with pytest.raises(ValueError) as excinfo:
        nlp.add_pipe("crf_tagger", config={"model": model})
    assert "n_buckets" in str(excinfo.value) and str(n_buckets) in str(excinfo.value)


def test_add_label_after_initialize_grows_the_model(toy):
    # (tests/models/test_grow.py tests growth in every structure and architecture)
    nlp, _ = toy.trained_nlp("tag", n_iter=2)
    tagger = nlp.get_pipe("crf_tagger")
    before = [t.tag_ for t in nlp("the cat sat")]
    assert tagger.add_label("NEWTAG") == 1
    assert tagger.labels[-1] == "NEWTAG" and tagger.cfg["unseen_labels"] == ["NEWTAG"]
    assert tagger.add_label("NN") == 0  # an existing label is fine
    assert [t.tag_ for t in nlp("the cat sat")] == before


def _loss_of(tagger, examples):
    scores = tagger.model.predict([eg.predicted for eg in examples])
    return tagger.get_loss(examples, scores)


def test_unseen_gold_label_is_treated_as_unannotated(toy):
    nlp, _ = toy.trained_nlp("tag", n_iter=5)
    tagger = nlp.get_pipe("crf_tagger")
    words = ["the", "cat", "sat", "."]
    unseen = toy.make_example(nlp, words, ["DT", "NEVERSEEN", "VBD", "."], "tag")
    missing = toy.make_example(nlp, words, ["DT", None, "VBD", "."], "tag")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loss_unseen, grad_unseen = _loss_of(tagger, [unseen])
    assert any("NEVERSEEN" in str(w.message) for w in caught)  # told, once
    loss_missing, grad_missing = _loss_of(tagger, [missing])
    assert math.isfinite(loss_unseen)
    assert loss_unseen == pytest.approx(loss_missing, rel=1e-9, abs=1e-9)
    # marginalising the token out beats fixing it to any known label
    for label in tagger.labels:
        labelled = toy.make_example(nlp, words, ["DT", label, "VBD", "."], "tag")
        assert loss_unseen < _loss_of(tagger, [labelled])[0]
    assert np.allclose(grad_unseen.emissions, grad_missing.emissions)
    losses = {}
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        nlp.update([unseen], sgd=Adam(0.1), losses=losses)
    assert math.isfinite(losses["crf_tagger"])
    assert "NEVERSEEN" not in tagger.labels


def test_partially_annotated_examples_train(toy):
    nlp = toy.make_nlp("tag")
    full = toy.toy_examples(nlp, "tag")
    nlp.initialize(lambda: full)
    tagger = nlp.get_pipe("crf_tagger")
    _random_params(tagger, seed=1)
    partial = []
    for i, eg in enumerate(full):
        tags = [t.tag_ if (j + i) % 3 else None for j, t in enumerate(eg.reference)]
        partial.append(toy.make_example(nlp, [t.text for t in eg.reference], tags, "tag"))
    # marginalising the unannotated tokens can only raise the likelihood
    assert _loss_of(tagger, partial)[0] < _loss_of(tagger, full)[0]
    # a doc with no annotation at all has zero loss and zero gradient
    empty_gold = [toy.make_example(nlp, ["the", "cat"], [None, None], "tag")]
    loss, grad = _loss_of(tagger, empty_gold)
    assert loss == pytest.approx(0.0, abs=1e-6)
    assert np.allclose(grad.emissions, 0.0, atol=1e-6)
    history = toy.train(nlp, partial, 15, initialize=False)  # Adam(0.1)
    assert all(math.isfinite(x) for x in history)
    assert history[-1] < history[0]


def test_update_with_only_empty_docs(toy):
    nlp, _ = toy.trained_nlp("tag", n_iter=2)
    losses = nlp.update([Example.from_dict(nlp.make_doc(""), {})], sgd=Adam(0.1), losses={})
    assert losses["crf_tagger"] == 0.0


# ------------------------------------------------------------------ NeuralCRF


def test_neural_crf_trains_and_round_trips(toy, tmp_path):
    model = {"@architectures": "spacy-crf.NeuralCRF.v1", "tok2vec": toy.tiny_tok2vec()}
    nlp = toy.make_nlp("tag", model=model)
    examples = toy.toy_examples(nlp, "tag")
    history = toy.train(nlp, examples, 40, learn_rate=0.01)
    assert history[-1] < history[0] / 4
    assert nlp.evaluate(examples)["tag_acc"] > 0.9
    before = _pipeline_outputs(nlp)
    nlp.to_disk(tmp_path / "neural")
    loaded = spacy.load(tmp_path / "neural")
    assert _pipeline_outputs(loaded) == before
    assert _same_scores(_raw_scores(loaded), _raw_scores(nlp))


def test_neural_crf_with_hashed_features(toy):
    model = {"@architectures": "spacy-crf.NeuralCRF.v1", "tok2vec": toy.tiny_tok2vec(),
             "templates": ["NORM[-1..1]", "SUFFIX2"], "n_buckets": 2048}
    nlp = toy.make_nlp("pos", model=model)
    examples = toy.toy_examples(nlp, "pos")
    history = toy.train(nlp, examples, n_iter=25, learn_rate=0.05)
    assert history[-1] < history[0] / 4
    assert nlp.evaluate(examples)["pos_acc"] == 1.0
    assert list(nlp.pipe(["", "cat"]))[1][0].pos_


def test_empty_training_corpus_is_a_clear_error(tmp_path):
    """No examples at all: E020 naming the corpus file when the config has it;
    without a configured corpus, E160 naming the component (a TypeError, as
    spaCy's E930 for a bad get_examples)."""
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger")
    with pytest.raises(TypeError, match=r"\[CRF-E160\] 'crf_tagger'.*no examples"):
        nlp.initialize(lambda: [])
    nlp.config["paths"]["train"] = str(tmp_path / "train.spacy")
    with pytest.raises(ValueError, match=r"\[CRF-E020\].*train\.spacy"):
        nlp.initialize(lambda: [])


def test_an_input_the_docs_lack_is_named_once():
    """A model that reads TAG, given docs without tags (spacy evaluate on a corpus
    whose tags its training copied): W005 names TAG, once per component."""
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos", "model": {
        "@architectures": "spacy-crf.FeatureCRF.v2", "templates": ["NORM", "TAG"],
        "n_buckets": 1024}})
    words, tags, pos = ["the", "cat", "sat"], ["DT", "NN", "VBD"], ["DET", "NOUN", "VERB"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # training docs carry TAG: no warning
        examples = [Example(Doc(nlp.vocab, words=words, tags=tags),
                            Doc(nlp.vocab, words=words, tags=tags, pos=pos))]
        optimizer = nlp.initialize(lambda: examples)
        nlp.update(examples, sgd=optimizer)
        nlp(Doc(nlp.vocab, words=words, tags=tags))
    fresh = nlp.get_pipe("crf_tagger")
    fresh._inputs_checked = False  # as a freshly loaded pipeline
    with pytest.warns(UserWarning, match=r"W005.*'crf_tagger' reads TAG \(its feature templates\)"):
        nlp("the cat sat")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nlp("the dog sat")  # said once
    assert fresh.input_attrs() == [("TAG", "feature templates")]
