"""One main score per component, keyed by its target (``pos_acc``, ``ents_f``,
...; ``crf_score`` repeats it): the scorer, the default weights, two components
in one pipeline, and ``spacy init fill-config`` + ``spacy train`` picking
model-best by it."""

import json

import numpy as np
import pytest
import spacy
import srsly
from spacy.cli.init_config import fill_config
from spacy.tokens import Doc, DocBin, Span
from spacy.training import Corpus, Example
from conftest import FROM_INITIALIZE, spacy_train, train

from spacy_crf import set_doc_labels
from spacy_crf.scoring import MAIN_SCORE, default_score_weights, main_score_key, score_crf

# ------------------------------------------------------------------ the scorer


def _tagged(nlp, words, gold, pred, attr="tag"):
    predicted, reference = Doc(nlp.vocab, words=words), Doc(nlp.vocab, words=words)
    if attr == "tag":
        for t, g, p in zip(reference, gold, pred):
            t.tag_ = g
            predicted[t.i].tag_ = p
    else:
        set_doc_labels(reference, attr, gold)
        set_doc_labels(predicted, attr, pred)
    return Example(predicted, reference)


def test_tag_targets_main_score_is_token_accuracy():
    nlp = spacy.blank("en")
    eg = _tagged(nlp, ["a", "b", "c", "d"], ["X", "Y", "X", "Y"], ["X", "Y", "Y", "Y"])
    scores = score_crf([eg], target="tag")
    assert scores[MAIN_SCORE] == scores["tag_acc"] == scores["crf_acc"] == 0.75


def test_iob_extension_targets_main_score_is_chunk_f1():
    nlp = spacy.blank("en")
    gold = ["B-NP", "I-NP", "O", "B-NP", "I-NP", "I-NP"]
    pred = ["B-NP", "I-NP", "O", "B-NP", "I-NP", "O"]  # 5 of 6 tokens, 1 of 2 chunks
    scores = score_crf([_tagged(nlp, list("abcdef"), gold, pred, "chunk")], target="_.chunk")
    assert scores["chunk_acc"] == pytest.approx(5 / 6)
    assert scores["chunk_f"] == pytest.approx(0.5)
    assert scores[MAIN_SCORE] == scores["chunk_f"] == scores["chunk_score"]
    assert scores["crf_acc"] == scores["chunk_acc"]
    # labels that are not IOB tags: token accuracy
    other = _tagged(nlp, list("abc"), ["x", "y", "x"], ["x", "y", "y"], "chunk")
    scores = score_crf([other], target="_.chunk")
    assert "chunk_f" not in scores and scores[MAIN_SCORE] == pytest.approx(2 / 3)
    assert scores["chunk_score"] == scores["chunk_acc"] == scores[MAIN_SCORE]


def _with_spans(nlp, words, gold, pred, key=None):
    """An example whose entities (or spans[key]) are ``(start, end, label)``."""
    docs = [Doc(nlp.vocab, words=words) for _ in range(2)]
    for doc, spans in zip(docs, (pred, gold)):
        spans = [Span(doc, s, e, label=lab) for s, e, lab in spans]
        if key is None:
            doc.set_ents(spans, default="outside")
        else:
            doc.spans[key] = spans
    return Example(*docs)


@pytest.mark.parametrize("key", [None, "chunks"])
def test_span_targets_main_score_is_span_f1(key):
    nlp = spacy.blank("en")
    words = ["Alice", "met", "Bob", "Smith", "in", "Paris", "today", "."]
    gold = [(0, 1, "PER"), (2, 4, "PER"), (5, 6, "LOC")]
    pred = [(0, 1, "PER"), (2, 3, "PER"), (5, 6, "LOC")]  # 7 of 8 tokens, 2 of 3 spans
    target = "ents" if key is None else f"spans:{key}"
    scores = score_crf([_with_spans(nlp, words, gold, pred, key)], target=target)
    f_key = "ents_f" if key is None else f"spans_{key}_f"
    assert scores[f_key] == pytest.approx(2 / 3)
    assert scores[MAIN_SCORE] == scores[f_key]
    if key is None:
        assert scores["crf_acc"] == pytest.approx(7 / 8)  # the IOB tags, beside it


@pytest.mark.parametrize("target", ["tag", "pos", "dep", "ents", "spans:sc", "_.chunk"])
def test_default_weights_put_everything_on_the_main_score(target):
    weights = default_score_weights(target)
    main = main_score_key(target)
    assert weights[main] == 1.0 and MAIN_SCORE not in weights
    assert all(v == 0.0 for k, v in weights.items() if k != main)
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": target})
    assert nlp.config["training"]["score_weights"] == weights
    assert nlp.get_pipe_meta("crf_tagger").default_score_weights == weights


def test_factory_default_weight_is_the_main_score():
    meta = spacy.language.Language.get_factory_meta("crf_tagger")
    assert meta.default_score_weights == {"tag_acc": 1.0}  # the default target's


@pytest.mark.parametrize("target, key", [("tag", "tag_acc"), ("pos", "pos_acc"),
                                         ("dep", "dep_acc"), ("ents", "ents_f"),
                                         ("spans:sc", "spans_sc_f"), ("_.chunk", "chunk_score")])
def test_main_score_is_keyed_by_the_target(target, key):
    assert main_score_key(target) == key


def test_two_components_keep_their_own_main_scores():
    """A pos tagger and an entity recogniser in one pipeline: each weighs its own
    main score in the config (half each, as spaCy combines them), and
    nlp.evaluate reports both."""
    nlp = spacy.blank("en")
    words = ["Alice", "met", "Bob", "in", "Paris", "."]
    pos = ["PROPN", "VERB", "PROPN", "ADP", "PROPN", "PUNCT"]
    ents = ["B-PER", "O", "B-PER", "O", "B-LOC", "O"]
    nlp.add_pipe("crf_tagger", name="tagger", config={"target": "pos"})
    nlp.add_pipe("crf_tagger", name="ner", config={"target": "ents"})
    weights = nlp.config["training"]["score_weights"]
    assert weights["pos_acc"] == weights["ents_f"] == 0.5
    reference = Doc(nlp.vocab, words=words, pos=pos, ents=ents)
    examples = [Example(Doc(nlp.vocab, words=words), reference)]
    train(nlp, examples, 30, optimizer=FROM_INITIALIZE, component=None)  # tagger and ner
    scores = nlp.evaluate(examples)
    assert scores["pos_acc"] == 1.0 and scores["ents_f"] == 1.0


# ------------------------------------------- fill-config + spacy train, end to end

PEOPLE = ["Alice Smith", "Bob", "Carol White", "David", "Eve Black", "Frank Moore", "Grace",
          "Heidi Klum", "Ivan", "Judy Hall"]
ORGS = ["Acme Corp", "Globex", "Initech", "Umbrella Inc", "Hooli", "Stark Industries"]
PLACES = ["Paris", "London", "New York", "Berlin", "Madrid", "Rome", "Tokyo"]
PATTERNS = [
    "{PER} works for {ORG} in {LOC} .",
    "{PER} visited {LOC} last week .",
    "Yesterday {ORG} hired {PER} .",
    "The office of {ORG} is in {LOC} .",
    "{PER} and {PER} flew to {LOC} .",
    "we met {PER} at the {ORG} party .",
]
POOLS = {"PER": PEOPLE, "ORG": ORGS, "LOC": PLACES}


def _make_docs(nlp, n, seed, key, unseen):
    """Sentences with entities (``key=None``) or the same spans in ``doc.spans[key]``;
    the last two names of each kind only if ``unseen`` (so dev is not a copy of train)."""
    rng = np.random.default_rng(seed)
    pools = {kind: names if unseen else names[:-2] for kind, names in POOLS.items()}
    docs = []
    for _ in range(n):
        words, spans = [], []
        for part in PATTERNS[rng.integers(len(PATTERNS))].split():
            if part.startswith("{"):
                label = part[1:-1]
                name = pools[label][rng.integers(len(pools[label]))].split()
                spans.append((len(words), len(words) + len(name), label))
                words += name
            else:
                words.append(part)
        doc = Doc(nlp.vocab, words=words)
        spans = [Span(doc, s, e, label=lab) for s, e, lab in spans]
        if key is None:
            doc.ents = spans
        else:
            doc.spans[key] = spans
        docs.append(doc)
    return docs


BASE_CONFIG = """
[paths]
train = null
dev = null

[nlp]
lang = "en"
pipeline = ["crf_tagger"]

[components]

[components.crf_tagger]
factory = "crf_tagger"
target = "{target}"

[training]

[training.logger]
@loggers = "spacy.ConsoleLogger.v3"
progress_bar = null
output_file = "train_log.jsonl"
"""


@pytest.fixture(scope="module", params=["ents", "spans:chunks"])
def filled_run(request, tmp_path_factory):
    target = request.param
    key = None if target == "ents" else target.split(":", 1)[1]
    work = tmp_path_factory.mktemp(target.replace(":", "_"))
    nlp = spacy.blank("en")
    for split, n, seed in (("train", 60, 0), ("dev", 30, 1)):
        docs = _make_docs(nlp, n, seed, key, unseen=split == "dev")
        DocBin(docs=docs).to_disk(work / f"{split}.spacy")
    (work / "base.cfg").write_text(BASE_CONFIG.replace("{target}", target), encoding="utf8")
    fill_config(work / "filled.cfg", work / "base.cfg", silent=True)  # spacy init fill-config
    out = work / "output"
    # a small table and a learning rate that gets somewhere in 60 steps; the score
    # weights are the filled ones
    # in work: the config's train_log.jsonl is a path relative to it
    spacy_train(work / "filled.cfg", out,
                "--paths.train", work / "train.spacy", "--paths.dev", work / "dev.spacy",
                "--training.max_steps", "60", "--training.eval_frequency", "10",
                "--training.optimizer.learn_rate", "0.05",
                "--components.crf_tagger.model.n_buckets", "4096", cwd=work)
    return {"target": target, "key": key, "work": work, "out": out}


def test_filled_config_weights_only_the_main_score(filled_run):
    cfg = spacy.util.load_config(filled_run["work"] / "filled.cfg")
    weights = dict(cfg["training"]["score_weights"])
    assert weights == default_score_weights(filled_run["target"])


def test_model_best_is_picked_by_the_f1(filled_run):
    target, key, out = filled_run["target"], filled_run["key"], filled_run["out"]
    f_key = "ents_f" if key is None else f"spans_{key}_f"
    records = [json.loads(line) for line in
               (filled_run["work"] / "train_log.jsonl").read_text(encoding="utf8").splitlines()]
    assert len(records) >= 5
    # every evaluation's score (the one model-best is chosen by) is the F1 alone,
    # with precision and recall beside it
    for record in records:
        assert record["score"] == pytest.approx(record["scores"][f_key] / 100)
        assert set(record["scores"]) == {f_key, f_key[:-1] + "p", f_key[:-1] + "r"}
    best = max(record["score"] for record in records)
    assert best > 0.2
    perf = srsly.read_json(out / "model-best" / "meta.json")["performance"]
    assert perf[f_key] == pytest.approx(best)
    # and it is the F1, re-computed from the saved model (crf_score repeats it)
    nlp = spacy.load(out / "model-best")
    scores = nlp.evaluate(list(Corpus(str(filled_run["work"] / "dev.spacy"))(nlp)))
    assert scores[MAIN_SCORE] == pytest.approx(scores[f_key])
    assert scores[f_key] == pytest.approx(perf[f_key], abs=1e-6)
