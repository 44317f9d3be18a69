"""Growing a trained model (issue 31): ``add_label`` after training, new labels
learned by more updates, ``initialize(keep_weights=True)``, ``fit --init-from``
and ``spacy train`` sourcing a trained component with new labels.

The central promise: right after ``add_label`` every structure and every
architecture predicts exactly what it predicted before (labels, confidences,
span confidences, n-best lists: ``array_equal``, not ``allclose``).
"""

import copy
import json

import numpy as np
import pytest
import spacy
from spacy.cli.init_config import fill_config
from spacy.tokens import Doc, DocBin
from spacy.training import Example

from conftest import (SMALL_MODEL, TOY_NER, chain, ewt_sample_docs, ner_examples, spacy_train,
                      tiny_tok2vec, train)
from spacy_crf.models.grow import grow_array

from conftest import ROOT

# the toy sentences with a parse: each token's head is the next token, the last is the root
TAGGED = [
    ("the cat sat .", ["DT", "NN", "VBD", "."]),
    ("a dog ran quickly .", ["DT", "NN", "VBD", "RB", "."]),
    ("the big dog slept .", ["DT", "JJ", "NN", "VBD", "."]),
    ("a small cat ran home .", ["DT", "JJ", "NN", "VBD", "RB", "."]),
    ("the bird sang in the tree .", ["DT", "NN", "VBD", "IN", "DT", "NN", "."]),
    ("the old man walked slowly .", ["DT", "JJ", "NN", "VBD", "RB", "."]),
]
TEXTS = ["the dog sat home .", "a big bird ran in the tree quickly .", "the old cat slept ."]


def parsed_doc(vocab, words):
    n = len(words)
    return Doc(vocab, words=words, heads=[min(i + 1, n - 1) for i in range(n)],
               deps=["dep"] * (n - 1) + ["ROOT"])


def tag_examples(nlp, drop=()):
    """The tagged toy corpus; tags in ``drop`` are left unannotated."""
    out = []
    for text, tags in TAGGED:
        words = text.split()
        ref = parsed_doc(nlp.vocab, words)
        for tok, tag in zip(ref, tags):
            tok.tag_ = "" if tag in drop else tag
        out.append(Example(parsed_doc(nlp.vocab, words), ref))
    return out


def neural(version):
    model = {"@architectures": f"spacy-crf.NeuralCRF.{version}", "tok2vec": tiny_tok2vec(),
             "n_buckets": 4096}
    if version == "v3":
        model.update(templates=["NORM", "SUFFIX2"], cluster_templates=None, boost_updates=0)
    return model


#: (id, target, component settings, model) of every structure and architecture
CASES = [
    ("chain", "tag", {}, SMALL_MODEL),
    ("order2", "tag", {"structure": chain(2)}, SMALL_MODEL),
    ("transitions", "tag", {"structure": {"@structures": "spacy-crf.Chain.v1",
                                          "transition_templates": ["NORM[-1]|NORM[0]"],
                                          "transition_buckets": 1024}}, SMALL_MODEL),
    ("tree", "tag", {"structure": {"@structures": "spacy-crf.Tree.v1",
                                   "tree_templates": ["head:NORM"]}}, SMALL_MODEL),
    ("chain_tree", "tag", {"structure": {"@structures": "spacy-crf.ChainTree.v1",
                                         "tree_templates": ["head:NORM"]}}, SMALL_MODEL),
    ("hmm", "tag", {}, {"@architectures": "spacy-crf.HMM.v1", "n_buckets": 4096}),
    ("neural_v1", "tag", {}, neural("v1")),
    ("neural_v3", "tag", {}, neural("v3")),
    ("ents", "ents", {}, SMALL_MODEL),
    ("ents_bio_order2", "ents", {"scheme": "BIO", "structure": chain(2)}, SMALL_MODEL),
    ("semi_markov", "ents", {"structure": "semi_markov"}, SMALL_MODEL),
]
NBEST = {"chain", "order2", "ents", "ents_bio_order2", "semi_markov", "hmm",
         "neural_v1", "neural_v3"}


def build(target, settings, model, drop, case):
    nlp = spacy.blank("en")
    config = {"model": copy.deepcopy(model), "target": target, "store_confidence": True, **settings}
    if case in NBEST:
        config["n_best"] = 3
    nlp.add_pipe("crf_tagger", config=config)
    examples = (tag_examples(nlp, drop) if target == "tag" else ner_examples(nlp, drop=drop))
    optimizer = nlp.initialize(lambda: examples)
    optimizer.learn_rate = 0.05
    train(nlp, examples, 8, optimizer=optimizer, initialize=False)
    return nlp, examples, optimizer


def probe_docs(nlp, target):
    if target == "tag":
        return [parsed_doc(nlp.vocab, text.split()) for text in TEXTS]
    return [nlp.make_doc(text) for text, _ in TOY_NER] + [nlp.make_doc("Paris met Alice .")]


def assert_same_prediction(a, b):
    assert np.array_equal(a.label_ids, b.label_ids)
    assert np.array_equal(a.doc_lengths, b.doc_lengths)
    assert (a.confidence is None) == (b.confidence is None)
    if a.confidence is not None:
        assert np.array_equal(a.confidence, b.confidence)
    if a.span_confidence is not None:
        for x, y in zip(a.span_confidence, b.span_confidence):
            assert np.array_equal(x, y, equal_nan=True)
    assert a.n_best == b.n_best


@pytest.mark.parametrize("case,target,settings,model", CASES, ids=[c[0] for c in CASES])
def test_add_label_leaves_every_prediction_bit_identical(case, target, settings, model, tmp_path):
    drop = {"JJ"} if target == "tag" else {"LOC"}
    nlp, _, _ = build(target, settings, model, drop, case)
    pipe = nlp.get_pipe("crf_tagger")
    docs = probe_docs(nlp, target)
    before = pipe.predict(docs)
    n_before = len(pipe.tags)
    assert pipe.add_label("JJ" if target == "tag" else "LOC") == 1
    assert len(pipe.tags) == n_before + (1 if target == "tag" else (2 if "BIO" in
                                                                      settings.values() else 4))
    assert_same_prediction(before, pipe.predict(docs))
    # and after a save and load
    nlp.to_disk(tmp_path / "grown")
    nlp2 = spacy.load(tmp_path / "grown")
    assert nlp2.get_pipe("crf_tagger").cfg["unseen_labels"] == pipe.cfg["unseen_labels"]
    assert_same_prediction(before, nlp2.get_pipe("crf_tagger").predict(probe_docs(nlp2, target)))


@pytest.mark.parametrize("predict_first", [True, False])
def test_add_label_after_minibatch_updates_with_the_l1_penalty_and_averages_predicts_as_before(
        predict_first, tmp_path):
    """The factory's l1_penalty and average_weights, one example per update:
    the rows an update skips owe the penalty, which the averaged weights that
    replace the iterate at add_label must not take (issue 48.6)."""
    nlp = spacy.blank("en")
    model = {**SMALL_MODEL, "l1_penalty": 0.01, "boost_updates": 300}  # a penalty that shows
    nlp.add_pipe("crf_tagger", config={"model": model, "target": "ents", "store_confidence": True})
    examples = ner_examples(nlp, drop={"LOC"})
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(4):
        for eg in examples:  # each update skips the rows of the other sentences
            nlp.update([eg], sgd=optimizer)
    pipe = nlp.get_pipe("crf_tagger")
    docs = probe_docs(nlp, "ents")
    nlp.to_disk(tmp_path / "before")  # what a save and load predicts
    before = (pipe.predict(docs) if predict_first
              else spacy.load(tmp_path / "before").get_pipe("crf_tagger").predict(docs))
    pipe.add_label("LOC")
    assert_same_prediction(before, pipe.predict(docs))


def test_grow_array_keeps_every_old_entry_in_place():
    rng = np.random.default_rng(0)
    K, K2 = 3, 5
    trans = rng.normal(size=(K, K))
    grown = grow_array(trans, ("out", "out"), K, K2)
    assert np.array_equal(grown[:K, :K], trans) and not grown[K:].any() and not grown[:, K:].any()
    triples = rng.normal(size=(K + 1, K, K))
    grown = grow_array(triples, ("start", "out", "out"), K, K2)
    assert grown.shape == (K2 + 1, K2, K2)
    assert np.array_equal(grown[:K, :K, :K], triples[:K])
    assert np.array_equal(grown[K2, :K, :K], triples[K])  # START moves to the end
    pairs = rng.normal(size=(7, K * K))  # one column per label pair
    grown = grow_array(pairs, (None, "out"), K, K2, pair_sized=True)
    assert np.array_equal(grown.reshape(7, K2, K2)[:, :K, :K], pairs.reshape(7, K, K))
    assert np.abs(grown).sum() == pytest.approx(np.abs(pairs).sum())


def tag_accuracy(nlp, examples, only=None, exclude=()):
    right = total = 0
    for eg in examples:
        doc = nlp(Doc(nlp.vocab, words=[t.text for t in eg.reference]))
        for got, gold in zip(doc, eg.reference):
            if not gold.tag_ or gold.tag_ in exclude or (only and gold.tag_ not in only):
                continue
            right += got.tag_ == gold.tag_
            total += 1
    return right / total


def test_a_new_tag_is_learned_and_the_old_ones_kept():
    nlp, _, _ = build("tag", {}, SMALL_MODEL, {"JJ"}, "chain")
    full = tag_examples(nlp)
    old_accuracy = tag_accuracy(nlp, full, exclude={"JJ"})
    pipe = nlp.get_pipe("crf_tagger")
    pipe.add_label("JJ")
    assert tag_accuracy(nlp, full, only={"JJ"}) == 0.0  # not predicted until learned
    optimizer = nlp.resume_training()
    optimizer.learn_rate = 0.05
    train(nlp, full, 10, optimizer=optimizer, initialize=False)
    assert pipe.cfg["unseen_labels"] == []
    assert tag_accuracy(nlp, full, only={"JJ"}) == 1.0
    assert tag_accuracy(nlp, full, exclude={"JJ"}) >= old_accuracy - 1e-9


def entities(nlp, texts):
    return [[(e.text, e.label_) for e in nlp(t).ents] for t in texts]


def test_a_new_entity_type_is_learned_with_an_optimizer_kept_across_add_label():
    nlp, examples, optimizer = build("ents", {}, SMALL_MODEL, {"LOC"}, "ents")
    texts = [text for text, _ in TOY_NER]
    before = entities(nlp, texts)
    assert not any(label == "LOC" for doc in before for _, label in doc)
    pipe = nlp.get_pipe("crf_tagger")
    assert pipe.add_label("LOC") == 1  # a type: every LOC tag
    assert {"B-LOC", "I-LOC", "L-LOC", "U-LOC"} <= set(pipe.tags) and "LOC" in pipe.labels
    assert pipe.add_label("B-LOC") == 0
    full = ner_examples(nlp)
    # the optimizer's moments (dense and row-sparse) grow with the weights
    train(nlp, full, 15, optimizer=optimizer, initialize=False)
    assert pipe.cfg["unseen_labels"] == []
    got = entities(nlp, texts)
    gold = [[(" ".join(text.split()[a:b]), label) for a, b, label in spans]
            for text, spans in TOY_NER]
    assert got == gold
    for key, moments in optimizer.mom1.items():  # every moment array matches its weights now
        node = next(n for n in pipe.model.walk() if n.id == key[0])
        param = node.get_param(key[1].split(":")[0])
        assert moments.size % param.shape[-1] == 0


def test_initialize_keep_weights_adds_the_new_labels_only():
    nlp, _, _ = build("tag", {}, SMALL_MODEL, {"JJ"}, "chain")
    pipe = nlp.get_pipe("crf_tagger")
    docs = probe_docs(nlp, "tag")
    before = pipe.predict(docs)
    with pytest.raises(ValueError, match=r"\[CRF-E167\]"):
        pipe.initialize(lambda: tag_examples(nlp), nlp=nlp, labels=["JJ", "NN"], keep_weights=True)
    assert "JJ" not in pipe.labels  # the refused call changed nothing
    pipe.initialize(lambda: tag_examples(nlp), nlp=nlp, keep_weights=True)
    assert pipe.labels[-1] == "JJ" and pipe.cfg["unseen_labels"] == ["JJ"]
    assert_same_prediction(before, pipe.predict(docs))
    pipe.initialize(lambda: tag_examples(nlp), nlp=nlp)  # without it: from scratch
    assert pipe.cfg["unseen_labels"] == [] and list(pipe.labels) == sorted(pipe.labels)


def test_a_second_order_model_grows_its_label_pairs():
    nlp, _, _ = build("tag", {"structure": chain(2)}, SMALL_MODEL, {"JJ"}, "order2")
    pipe = nlp.get_pipe("crf_tagger")
    n_pairs = len(pipe.cfg["label_pairs"])
    pipe.add_label("JJ")
    jj = pipe.labels.index("JJ")
    pairs = np.asarray(pipe.cfg["label_pairs"])
    assert len(pairs) == n_pairs + 2 * len(pipe.labels)  # (a, JJ) with START, (JJ, b) but (JJ, JJ) once
    assert ((pairs[:, 0] == -1) & (pairs[:, 1] == jj)).any()
    optimizer = nlp.resume_training()
    optimizer.learn_rate = 0.05
    full = tag_examples(nlp)
    train(nlp, full, 10, optimizer=optimizer, initialize=False)
    assert tag_accuracy(nlp, full, only={"JJ"}) == 1.0


# ---------------------------------------------------------------- fit --init-from, spacy train


@pytest.fixture(scope="module")
def upos_corpora(tmp_path_factory):
    """The EWT sample's train and dev; ``train-nonum`` without its NUM tags."""
    out = tmp_path_factory.mktemp("grow_corpus")
    paths = {}
    for split in ("train", "dev"):
        docs = ewt_sample_docs(split)
        paths[split] = out / f"{split}.spacy"
        DocBin(docs=docs).to_disk(paths[split])
        if split == "train":
            for doc in docs:
                for tok in doc:
                    if tok.pos_ == "NUM":
                        tok.pos_ = ""
            paths["train-nonum"] = out / "train-nonum.spacy"
            DocBin(docs=docs).to_disk(paths["train-nonum"])
    return paths


def fit_overrides(paths, train):
    return {"paths.train": str(paths[train]), "paths.dev": str(paths["dev"]),
            "components.crf_tagger.model.n_buckets": 65536}


def first_loss(log):
    return float(next(line.split()[1] for line in log.splitlines()
                      if line.split() and line.split()[0] == "1"))


@pytest.mark.slow
def test_fit_init_from_adds_a_label_and_starts_from_the_trained_weights(upos_corpora, tmp_path):
    from io import StringIO
    from spacy_crf.training.fit import fit

    config = ROOT / "configs" / "ewt_upos.cfg"
    fit(config, tmp_path / "a", overrides=fit_overrides(upos_corpora, "train-nonum"),
        max_iterations=30, eval_frequency=30, stdout=StringIO())
    assert "NUM" not in spacy.load(tmp_path / "a" / "model-last").get_pipe("crf_tagger").labels
    warm, cold = StringIO(), StringIO()
    nlp = fit(config, tmp_path / "b", overrides=fit_overrides(upos_corpora, "train"),
              max_iterations=10, eval_frequency=10, init_from=tmp_path / "a" / "model-last",
              stdout=warm)
    fit(config, None, overrides=fit_overrides(upos_corpora, "train"), max_iterations=1,
        eval_frequency=1, stdout=cold)
    pipe = nlp.get_pipe("crf_tagger")
    assert "NUM" in pipe.labels and pipe.cfg["unseen_labels"] == []
    assert first_loss(warm.getvalue()) < 0.5 * first_loss(cold.getvalue())
    dev = list(DocBin().from_disk(upos_corpora["dev"]).get_docs(nlp.vocab))
    nums = [(got.pos_, gold.pos_) for d in dev
            for got, gold in zip(nlp(Doc(nlp.vocab, words=[t.text for t in d])), d)
            if gold.pos_ == "NUM"]
    assert sum(a == b for a, b in nums) / len(nums) > 0.5


@pytest.mark.slow
def test_spacy_train_sources_a_trained_component_and_adds_its_new_labels(upos_corpora, tmp_path):
    # a trained pipeline without NUM
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos", "model": SMALL_MODEL})
    train = list(DocBin().from_disk(upos_corpora["train-nonum"]).get_docs(nlp.vocab))
    examples = [Example(Doc(nlp.vocab, words=[t.text for t in d]), d) for d in train]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    assert "NUM" not in nlp.get_pipe("crf_tagger").labels
    nlp.to_disk(tmp_path / "trained")
    config = f"""
[paths]
train = "{upos_corpora['train']}"
dev = "{upos_corpora['dev']}"

[nlp]
lang = "en"
pipeline = ["crf_tagger"]

[components]

[components.crf_tagger]
source = "{tmp_path / 'trained'}"

[corpora]

[corpora.train]
@readers = "spacy.Corpus.v1"
path = ${{paths.train}}

[corpora.dev]
@readers = "spacy.Corpus.v1"
path = ${{paths.dev}}

[training]
max_steps = 20
eval_frequency = 10

[initialize]

[initialize.after_init]
@callbacks = "spacy-crf.add_labels.v1"
component = "crf_tagger"
"""
    (tmp_path / "partial.cfg").write_text(config, encoding="utf8")
    # spacy init fill-config, then spacy train: the commands' functions, in process
    fill_config(tmp_path / "grow.cfg", tmp_path / "partial.cfg", silent=True)
    spacy_train(tmp_path / "grow.cfg", tmp_path / "out", cwd=tmp_path)
    grown = spacy.load(tmp_path / "out" / "model-last")
    pipe = grown.get_pipe("crf_tagger")
    assert "NUM" in pipe.labels and pipe.cfg["unseen_labels"] == []
    meta = json.loads((tmp_path / "out" / "model-last" / "meta.json").read_text())
    assert meta["performance"]["pos_acc"] > 0.5


def test_a_load_takes_the_saved_unseen_labels_and_checks_them(tmp_path):
    nlp, _, _ = build("tag", {}, SMALL_MODEL, {"JJ"}, "chain")
    pipe = nlp.get_pipe("crf_tagger")
    pipe.to_disk(tmp_path / "old")  # saved before add_label: no label waits
    pipe.add_label("JJ")
    pipe.from_disk(tmp_path / "old")
    assert "JJ" not in pipe.labels and pipe.cfg["unseen_labels"] == []
    cfg = json.loads((tmp_path / "old" / "cfg").read_text())
    for bad in (["NOPE"], "JJ", [["DT"]]):
        (tmp_path / "old" / "cfg").write_text(json.dumps({**cfg, "unseen_labels": bad}))
        with pytest.raises(ValueError, match=r"\[CRF-E162\].*unseen_labels"):
            pipe.from_disk(tmp_path / "old")


def test_the_hmm_learns_a_new_tag_from_counts_not_from_updates():
    hmm = {"@architectures": "spacy-crf.HMM.v1", "n_buckets": 4096}
    nlp, _, _ = build("tag", {}, hmm, {"JJ"}, "hmm")
    pipe = nlp.get_pipe("crf_tagger")
    docs = probe_docs(nlp, "tag")
    before = pipe.predict(docs)
    pipe.add_label("JJ")
    full = tag_examples(nlp)
    nlp.update(full, sgd=nlp.resume_training())  # the HMM's counts do not move with updates
    assert pipe.cfg["unseen_labels"] == ["JJ"]
    assert_same_prediction(before, pipe.predict(docs))
    pipe.initialize(lambda: full, nlp=nlp, keep_weights=True)  # counts refitted, JJ with them
    assert pipe.cfg["unseen_labels"] == []
    assert tag_accuracy(nlp, full, only={"JJ"}) == 1.0


def _trained_tagger():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "tag", "model": SMALL_MODEL})
    words = ["the", "dog", "ran"]
    example = Example(Doc(nlp.vocab, words=words), Doc(nlp.vocab, words=words,
                                                       tags=["DT", "NN", "VBD"]))
    nlp.initialize(lambda: [example])
    return nlp, words


def test_add_labels_reads_a_streamed_corpus_s_first_examples_only():
    """A corpus of spacy train's max_epochs = -1 may never end: the callback
    read it all (a hang); it reads the first 100 examples, as spaCy's
    initialize reads one."""
    from spacy.util import registry

    from spacy_crf.training.add_labels import STREAMED_SAMPLE, create_add_labels

    nlp, words = _trained_tagger()
    read = []

    @registry.readers("test.endless_tags.v1")
    def endless():
        def stream(nlp):
            while True:
                read.append(1)
                tags = ["DT", "NN", "JJ" if len(read) == 3 else "VBD"]
                yield Example(Doc(nlp.vocab, words=words), Doc(nlp.vocab, words=words, tags=tags))
        return stream

    nlp.config["corpora"] = {"train": {"@readers": "test.endless_tags.v1"}}
    nlp.config["training"]["train_corpus"] = "corpora.train"
    nlp.config["training"]["max_epochs"] = -1
    create_add_labels()(nlp)
    assert len(read) == STREAMED_SAMPLE
    assert "JJ" in nlp.get_pipe("crf_tagger").labels


def test_add_labels_refuses_a_frozen_component_e266():
    from spacy_crf.training.add_labels import create_add_labels

    nlp, _ = _trained_tagger()
    nlp.config["training"]["frozen_components"] = ["crf_tagger"]
    before = nlp.get_pipe("crf_tagger").labels
    with pytest.raises(ValueError, match=r"E266.*'crf_tagger'.*frozen_components"):
        create_add_labels(labels=["JJ"], from_corpus=False)(nlp)
    assert nlp.get_pipe("crf_tagger").labels == before
