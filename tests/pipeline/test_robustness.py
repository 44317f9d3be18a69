"""Property-based and robustness tests of the ``crf_tagger`` component.

1. random docs (emoji, mixed scripts, very long and whitespace tokens, random
   sentence boundaries, empty docs, batches) through pipelines whose every
   parameter was replaced by random normal values at scales up to 1e3: the
   decode is a valid (for span targets well-formed) labelling, confidences are
   the marginals of the predicted labels, marginals are distributions, the
   Viterbi score is the score of the returned path, and to_bytes/from_bytes
   is lossless;
2. random, partially annotated training corpora with Adam at large learning
   rates: finite losses and finite parameters;
3. four threads sharing one ``nlp`` give the sequential results;
4. a read-only / uncreatable / fresh-and-shared numba cache directory in
   subprocesses;
5. a 100,000-token doc, as one chain and split into many sentences.
"""

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional

import numpy as np
import pytest
import spacy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spacy.tokens import Doc, Span
from spacy.training import Example
from thinc.api import Adam

from spacy_crf import inference
from conftest import SPELLING_ONLY, TOY_NER, ner_examples, train
from kernels.oracle import moves_through_kept_pairs

SETTINGS = dict(deadline=None, derandomize=True, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

TAG_MODEL = {
    "@architectures": "spacy-crf.FeatureCRF.v2",
    "templates": ["NORM[-1..1]", "NORM[-1]|NORM[0]", "SUFFIX2", "PREFIX1", "SHAPE[-1..1]",
                  "IS_TITLE", "LIKE_NUM"],
    "n_buckets": 4096,
    **SPELLING_ONLY,
}

KINDS = ["tag", "ents-BIO", "ents-BILUO"]


# ------------------------------------------------------------------ helpers

def stored_confidences(doc):
    """The confidences a component stored on ``doc``, one a token."""
    return [token._.crf_confidence for token in doc]


def build_nlp(kind: str, **config) -> "spacy.Language":
    nlp = spacy.blank("en")
    if kind == "tag":
        cfg = {"target": "tag"}
    else:
        cfg = {"target": "ents", "scheme": kind.split("-")[1]}
    nlp.add_pipe("crf_tagger", config={"model": dict(TAG_MODEL), **cfg, **config})
    return nlp


def toy_examples(nlp, kind: str, toy) -> List[Example]:
    if kind == "tag":
        return toy.toy_examples(nlp, "tag")
    return ner_examples(nlp, TOY_NER[:5])


def trained(kind: str, toy, n_iter: int = 15, **config):
    nlp = build_nlp(kind, store_confidence=True, **config)
    train(nlp, toy_examples(nlp, kind, toy), n_iter)
    return nlp


def well_formed(tags: List[str], scheme: str) -> bool:
    """Independent definition of a well-formed BIO / BILUO tag sequence."""
    inside: Optional[str] = None  # the type of the open span (BILUO) / previous span (BIO)
    for tag in tags:
        prefix, _, kind = tag.partition("-")
        if scheme == "BIO":
            if prefix == "I" and inside != kind:
                return False
            inside = kind if prefix in ("B", "I") else None
        else:
            if prefix in ("B", "U", "O") and inside is not None:
                return False
            if prefix in ("I", "L") and inside != kind:
                return False
            inside = kind if prefix in ("B", "I") else None
    return scheme == "BIO" or inside is None


def decoded_tags(pipe, docs) -> List[List[str]]:
    """The labels the component wrote, read back as tag strings per doc."""
    out = []
    for doc in docs:
        if pipe.cfg["target"] == "tag":
            out.append([t.tag_ for t in doc])
        else:
            out.append([f"{t.ent_iob_}-{t.ent_type_}" if t.ent_type_ else "O" for t in doc])
    return out


def path_scores(scores, lengths: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Score of ``labels`` under ``scores`` per chain, and the sum of |terms|
    (with the label triples of a second-order chain, the default for ``ents``:
    ``triples[L, y0, y1]`` for the first two labels, ``triples[a, b, c]`` after)."""
    triples = (None if scores.triples is None
               else np.asarray(scores.triples, dtype=np.float64))
    em = np.asarray(scores.emissions, dtype=np.float64)
    tr = np.asarray(scores.transitions, dtype=np.float64)
    st_ = np.asarray(scores.start, dtype=np.float64)
    en = np.asarray(scores.end, dtype=np.float64)
    out, mags = [], []
    start = 0
    for n in lengths:
        n = int(n)
        if n == 0:
            out.append(0.0)
            mags.append(0.0)
            continue
        y = labels[start:start + n]
        terms = np.concatenate([em[np.arange(start, start + n), y], [st_[y[0]], en[y[-1]]],
                                tr[y[:-1], y[1:]]])
        if triples is not None and n > 1:
            L = triples.shape[1]
            before = np.concatenate([[L], y[:-2]])  # "START" before the first pair
            terms = np.concatenate([terms, triples[before, y[:-1], y[1:]]])
        with np.errstate(invalid="ignore"):
            out.append(float(terms.sum()))
            mags.append(float(np.abs(terms).sum()))
        start += n
    return np.asarray(out), np.asarray(mags)


def kept_pairs_only(pipe, lengths: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per chain, whether ``labels`` moves only through label pairs a
    second-order chain kept (``cfg["label_pairs"]``, START as -1): another
    path is not one it can decode. Always true for other structures."""
    pairs = pipe.cfg.get("label_pairs")
    out = np.ones(len(lengths), dtype=bool)
    if not pairs:
        return out
    kept = {tuple(pair) for pair in pairs}
    start = 0
    for s, n in enumerate(lengths):
        out[s] = moves_through_kept_pairs(labels[start:start + int(n)].tolist(), kept)
        start += int(n)
    return out


def randomize_weights(pipe, seed: int, scales: Dict[str, float]) -> None:
    rng = np.random.default_rng(seed)
    n_set = 0
    for node in pipe.model.walk():
        for name in node.param_names:
            if node.has_param(name) and node.get_param(name) is not None:
                old = node.get_param(name)
                new = rng.standard_normal(old.shape) * scales.get(name, 1.0)
                node.set_param(name, new.astype(old.dtype))
                n_set += 1
    # W, b and the structure's own (a chain's transitions, start, end)
    assert n_set >= 2 + len(pipe.crf_structure.params)


def check_prediction(pipe, docs) -> None:
    """Every invariant of a decoded batch (docs already processed by ``pipe``)."""
    labels = pipe.tags
    tags = decoded_tags(pipe, docs)
    for doc, doc_tags in zip(docs, tags):
        assert len(doc_tags) == len(doc)
        if pipe.cfg["target"] == "tag":
            assert all(t in labels for t in doc_tags), (doc_tags, labels)
    n_tokens = sum(len(d) for d in docs)
    if not n_tokens:
        return
    # (the target's constraints with the labels it allows each token: no span
    # starts on whitespace)
    scores = pipe.constrain_target(pipe.model.predict(docs), docs)
    structure = pipe.batch_layout(docs)
    assert int(structure.lengths.sum()) == n_tokens
    ids, best = inference.viterbi(scores, structure)
    assert ids.shape == (n_tokens,)
    assert ids.min() >= 0 and ids.max() < len(labels)
    pred = pipe.predict(docs)
    np.testing.assert_array_equal(pred.label_ids, ids)
    names = [labels[i] for i in ids]
    if pipe.target.is_span_target:
        scheme = pipe.cfg["scheme"]
        start = 0
        for n in structure.lengths:
            seq = names[start:start + int(n)]
            assert well_formed(seq, scheme), seq
            start += int(n)
        # the entities written are exactly the spans of the decoded tags
        flat = [t for doc_tags in tags for t in doc_tags]
        as_bio = []
        for name in names:
            p, _, k = name.partition("-")
            as_bio.append("O" if p == "O" else k)
        assert [t if t == "O" else t.split("-", 1)[1] for t in flat] == as_bio
    else:
        assert [t for doc_tags in tags for t in doc_tags] == names
    # Viterbi score == score of the returned path; it beats the greedy path
    got, mag = path_scores(scores, structure.lengths, ids)
    assert np.all(np.isfinite(best)), best
    np.testing.assert_allclose(got, best, rtol=0, atol=1e-9 * (mag.max() + 1.0))
    greedy = np.asarray(scores.emissions, dtype=np.float64).argmax(axis=1)
    greedy_score, _ = path_scores(scores, structure.lengths, greedy)
    feasible = kept_pairs_only(pipe, structure.lengths, greedy)
    assert np.all((best >= greedy_score - 1e-9 * (mag + 1.0)) | ~feasible)
    # marginals are distributions and log Z bounds the best score
    probs, log_z = inference.marginals(scores, structure)
    assert np.all(np.isfinite(probs)) and np.all(np.isfinite(log_z))
    assert probs.min() >= -1e-12 and probs.max() <= 1 + 1e-9
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-6)
    slack = 1e-9 * (mag + np.abs(log_z) + 1.0)
    assert np.all(log_z >= best - slack)
    assert np.all(log_z <= best + structure.lengths * np.log(len(labels)) + slack)
    # the predicted label of every token has positive probability
    assert np.all(probs[np.arange(n_tokens), ids] > 0)
    # stored confidences are the marginals of the predicted labels
    conf = np.asarray([c for doc in docs for c in stored_confidences(doc)], dtype=np.float64)
    assert conf.shape == (n_tokens,)
    assert np.all(np.isfinite(conf)) and conf.min() >= 0.0 and conf.max() <= 1.0
    np.testing.assert_allclose(conf, probs[np.arange(n_tokens), ids], rtol=1e-6, atol=1e-7)
    for doc in docs:
        for tok in doc:
            assert tok._.crf_confidence == stored_confidences(doc)[tok.i]


# ------------------------------------------------------------ 1. random docs

SPECIAL_WORDS = [
    "the", "cat", "dog", "Alice", "Paris", "New", "York", ".", ",", "ran", "big",
    "😀", "👩‍👩‍👧‍👦", "🇫🇷", "日本語", "中文", "مرحبا", "שלום", "Ελληνικά", "Привет", "हिन्दी",
    "ñandú", "e\u0301", "ﬁ", "\u200b", "\u00a0", "\ufeff", " ", "  ", "\n", "\t", "\r\n",
    "1,000", "3.14", "NaN", "-inf", "A" * 300, "x😀y" * 700, "ب" * 5000,
]
WORD = st.one_of(
    st.sampled_from(SPECIAL_WORDS),
    st.text(min_size=1, max_size=8),
    st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=3), st.integers(100, 3000)),
)


@st.composite
def random_doc_spec(draw):
    n = draw(st.integers(0, 60))
    words = draw(st.lists(WORD, min_size=n, max_size=n))
    spaces = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    sents = draw(st.one_of(st.none(), st.lists(st.booleans(), min_size=n, max_size=n)))
    if sents is not None and n:
        sents[0] = True
    return words, spaces, (sents if n else None)


SCALE = st.one_of(st.sampled_from([0.0, 1e-3, 1.0, 1e3]), st.floats(0.0, 1e3))
PARAM_SCALES = st.fixed_dictionaries(
    {name: SCALE for name in ("W", "b", "transitions", "start", "end", "pair", "root")})

_random_weight_nlps: Dict[str, object] = {}


def random_weight_nlp(kind: str, toy):
    if kind not in _random_weight_nlps:
        _random_weight_nlps[kind] = trained(kind, toy, n_iter=3)
    return _random_weight_nlps[kind]


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=25, **SETTINGS)
@given(specs=st.lists(random_doc_spec(), min_size=1, max_size=3),
       seed=st.integers(0, 2**32 - 1), scales=PARAM_SCALES)
def test_random_docs_and_random_weights_decode_validly(toy, kind, specs, seed, scales):
    nlp = random_weight_nlp(kind, toy)
    pipe = nlp.get_pipe("crf_tagger")
    randomize_weights(pipe, seed, scales)
    docs = [Doc(nlp.vocab, words=w, spaces=s, sent_starts=ss) for w, s, ss in specs]
    docs = list(nlp.pipe(docs, batch_size=len(docs)))
    check_prediction(pipe, docs)
    # single-doc calls agree with the batch
    for doc in docs:
        alone = nlp(Doc(nlp.vocab, words=[t.text for t in doc],
                        spaces=[bool(t.whitespace_) for t in doc],
                        sent_starts=[t.is_sent_start for t in doc] if doc.has_annotation("SENT_START") else None))
        assert decoded_tags(pipe, [alone]) == decoded_tags(pipe, [doc])
    # to_bytes / from_bytes is lossless: same scores, same labels, same confidences
    clone = build_nlp(kind, store_confidence=True)
    clone.get_pipe("crf_tagger").from_bytes(pipe.to_bytes())
    cpipe = clone.get_pipe("crf_tagger")
    assert cpipe.labels == pipe.labels
    fresh = [Doc(clone.vocab, words=[t.text for t in d]) for d in docs]
    again = [Doc(nlp.vocab, words=[t.text for t in d]) for d in docs]
    fresh = list(clone.pipe(fresh))
    again = list(nlp.pipe(again))
    assert decoded_tags(cpipe, fresh) == decoded_tags(pipe, again)
    assert [stored_confidences(d) for d in fresh] == \
        [stored_confidences(d) for d in again]
    if sum(len(d) for d in docs):
        a, b = pipe.model.predict(again), cpipe.model.predict(fresh)
        for name in ("emissions", "transitions", "start", "end", "pair", "root"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


# ------------------------------------------------------- 2. random corpora

TRAIN_WORD = st.one_of(st.sampled_from(["the", "cat", "Bob", "Paris", ".", "😀", " ", "日本"]),
                       st.text(min_size=1, max_size=6))


@st.composite
def random_corpus(draw, kind):
    docs = []
    for _ in range(draw(st.integers(1, 6))):
        n = draw(st.integers(0, 12))
        words = draw(st.lists(TRAIN_WORD, min_size=n, max_size=n))
        sents = draw(st.one_of(st.none(), st.lists(st.booleans(), min_size=n, max_size=n)))
        if sents is not None and n:
            sents[0] = True
        if kind == "tag":
            ann = draw(st.lists(st.one_of(st.none(), st.sampled_from(["A", "B", "NN", "X"])),
                                min_size=n, max_size=n))
        else:
            # random non-overlapping spans; None = doc without entity annotation
            ann = None
            if draw(st.booleans()):
                raw = draw(st.lists(st.tuples(st.integers(0, max(n - 1, 0)), st.integers(1, 3),
                                              st.sampled_from(["PER", "LOC"])), max_size=4))
                taken, ann = set(), []
                for a, length, label in raw:
                    b = min(a + length, n)
                    if n and not taken & set(range(a, b)):
                        taken |= set(range(a, b))
                        ann.append((a, b, label))
                ann = (ann, draw(st.sampled_from(["outside", "missing"])))
        docs.append((words, (sents if n else None), ann))
    return docs


def corpus_examples(nlp, kind, corpus) -> List[Example]:
    examples = []
    for words, sents, ann in corpus:
        ref = Doc(nlp.vocab, words=words, sent_starts=sents)
        if kind == "tag":
            for tok, lab in zip(ref, ann):
                tok.tag_ = lab or ""
        elif ann is not None:
            spans, default = ann
            ref.set_ents([Span(ref, a, b, label=k) for a, b, k in spans], default=default)
        examples.append(Example(Doc(nlp.vocab, words=words, sent_starts=sents), ref))
    return examples


def has_gold(kind, corpus) -> bool:
    if kind == "tag":
        return any(lab for _, _, ann in corpus for lab in ann)
    # at least one entity: a corpus of "O" tokens only has no span type to
    # learn, and initialize() says so (E008), as it does for tags
    return any(ann is not None and ann[0] for words, _, ann in corpus)


def all_params_finite(pipe) -> bool:
    for node in pipe.model.walk():
        for name in node.param_names:
            if node.has_param(name) and node.get_param(name) is not None:
                if not np.all(np.isfinite(node.get_param(name))):
                    return False
    return True


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=20, **SETTINGS)
@given(data=st.data(), learn_rate=st.one_of(st.just(1.0), st.floats(1e-4, 1.0)),
       n_steps=st.integers(1, 4))
def test_random_corpora_train_to_finite_losses_and_weights(toy, kind, data, learn_rate, n_steps):
    corpus = data.draw(random_corpus(kind))
    nlp = build_nlp(kind, store_confidence=True)
    examples = corpus_examples(nlp, kind, corpus)
    if not has_gold(kind, corpus):
        with pytest.raises(ValueError, match="initialize|label"):
            nlp.initialize(lambda: examples)
        return
    nlp.initialize(lambda: examples)
    pipe = nlp.get_pipe("crf_tagger")
    opt = Adam(learn_rate)
    for _ in range(n_steps):
        losses: Dict[str, float] = {}
        nlp.update(examples, sgd=opt, losses=losses)
        assert np.isfinite(losses["crf_tagger"]) and losses["crf_tagger"] >= -1e-6, losses
        assert all_params_finite(pipe)
    docs = list(nlp.pipe([Doc(nlp.vocab, words=w, sent_starts=s) for w, s, _ in corpus]))
    check_prediction(pipe, docs)


@pytest.mark.parametrize("scheme", ["BIO", "BILUO"])
def test_span_target_without_any_gold_is_a_clear_error(scheme):
    nlp = build_nlp(f"ents-{scheme}")
    # no doc.ents annotation at all (ENT_IOB unset): like a corpus without NER
    examples = [Example(nlp.make_doc("the cat sat"), nlp.make_doc("the cat sat"))]
    with pytest.raises(ValueError, match="No labels found"):
        nlp.initialize(lambda: examples)


# ------------------------------------------------------------ 3. threads

def summary(doc):
    return ([t.tag_ for t in doc], [(e.start, e.end, e.label_) for e in doc.ents],
            stored_confidences(doc))


@pytest.mark.parametrize("kind", ["tag", "ents-BILUO"])
def test_four_threads_give_the_sequential_results(toy, kind):
    nlp = trained(kind, toy, n_iter=10)
    rng = np.random.default_rng(0)
    vocab = ["the", "cat", "Alice", "met", "Bob", "in", "Paris", ".", "New", "York", "😀", "ran"]
    texts = [" ".join(rng.choice(vocab, size=int(rng.integers(0, 400)))) for _ in range(48)]
    expected = [summary(nlp(t)) for t in texts]
    for _ in range(3):
        with ThreadPoolExecutor(max_workers=4) as pool:
            got = list(pool.map(lambda t: summary(nlp(t)), texts))
        assert got == expected
        with ThreadPoolExecutor(max_workers=4) as pool:
            chunks = [texts[i::4] for i in range(4)]
            piped = list(pool.map(lambda ch: [summary(d) for d in nlp.pipe(ch, batch_size=5)],
                                  chunks))
        for i, chunk in enumerate(piped):
            assert chunk == expected[i::4]
    assert any(len(e[0]) > 100 for e in expected)


# ------------------------------------------------------------ 4. numba cache

CHILD = textwrap.dedent("""
    import json, sys, spacy
    from numba.core import event
    with event.install_recorder("numba:compile") as compiled:
        nlp = spacy.load(sys.argv[1])
        texts = json.loads(sys.argv[2])
        out = [[t.tag_ for t in nlp(x)] + [round(c, 5) for c in (t._.crf_confidence for t in nlp(x))
        if c is not None] for x in texts]
    print(json.dumps(out))
    # how many of our kernels this process compiled (none when the cache serves them)
    ours = [e for _, e in compiled.buffer if e.is_start
            and e.data["dispatcher"].py_func.__module__.startswith("spacy_crf.")]
    print(f"compiled {len(ours)}", file=sys.stderr)
""")
CACHE_TEXTS = ["the cat sat .", "a big dog ran home .", "", "the old man walked slowly ."]


@pytest.fixture(scope="module")
def saved_toy(toy, tmp_path_factory):
    nlp = trained("tag", toy, n_iter=15)
    path = tmp_path_factory.mktemp("robust") / "pipe"
    nlp.to_disk(path)
    script = path.parent / "child.py"
    script.write_text(CHILD)
    expected = [[t.tag_ for t in nlp(x)] + [round(c, 5) for c in stored_confidences(nlp(x))
        if c is not None] for x in CACHE_TEXTS]
    return path, script, expected


def run_child(saved, cache_dir, wait=True):
    path, script, _ = saved
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    proc = subprocess.Popen([sys.executable, str(script), str(path), json.dumps(CACHE_TEXTS)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not wait:
        return proc
    out, err = proc.communicate(timeout=240)
    return proc.returncode, out, err


def test_read_only_numba_cache_dir(saved_toy, tmp_path):
    ro = tmp_path / "ro_cache"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as root: a 0o555 directory is still writable")
        rc, out, err = run_child(saved_toy, ro)
        assert rc == 0, err
        assert json.loads(out) == saved_toy[2]
        assert list(ro.iterdir()) == []
    finally:
        ro.chmod(0o755)


def test_uncreatable_numba_cache_dir(saved_toy, tmp_path):
    # unwritable even for root: the cache dir would have to live inside a file
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    rc, out, err = run_child(saved_toy, blocker / "cache")
    assert rc == 0, err
    assert json.loads(out) == saved_toy[2]
    assert blocker.read_text() == "not a directory"


@pytest.mark.slow
def test_two_processes_share_a_fresh_numba_cache_dir(saved_toy, tmp_path):
    cache = tmp_path / "fresh_cache"
    cache.mkdir()
    procs = [run_child(saved_toy, cache, wait=False) for _ in range(2)]
    results = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    for out, err, rc in results:
        assert rc == 0, err
        assert json.loads(out) == saved_toy[2]
    assert results[0][0] == results[1][0]
    # the kernels really were compiled into (and cached in) the fresh directory
    assert any(p.suffix in (".nbi", ".nbc") for p in cache.rglob("*"))
    # and a third process reading the now-populated cache agrees, without
    # compiling anything (nor saying it does: the notice is for compiling only)
    rc, out, err = run_child(saved_toy, cache)
    assert rc == 0, err
    assert out == results[0][0]
    assert "compiled 0" in err and "compiling its CRF kernels" not in err, err
    # while the first two compiled (tests/kernels/test_compile_notice.py: the notice)
    assert all("compiled 0" not in r[1] for r in results)


# ------------------------------------------------------------ 5. long docs

@pytest.fixture(scope="module")
def long_nlp(toy):
    # a chain per sentence, so the split docs are many sequences
    return trained("tag", toy, n_iter=15, sequence="sentence")


@pytest.mark.parametrize("split", [None, "every_7", "random"])
def test_100k_token_doc_decodes(long_nlp, split):
    nlp = long_nlp
    pipe = nlp.get_pipe("crf_tagger")
    rng = np.random.default_rng(1)
    vocab = ["the", "cat", "sat", "a", "dog", "ran", "big", "bird", "on", ".", "😀", "日本"]
    n = 100_000
    words = rng.choice(vocab, size=n).tolist()
    if split is None:
        sents = None
    elif split == "every_7":
        sents = [i % 7 == 0 for i in range(n)]
    else:
        sents = (rng.random(n) < 0.2).tolist()
        sents[0] = True
    doc = Doc(nlp.vocab, words=words, sent_starts=sents)
    t0 = time.perf_counter()
    doc = nlp(doc)
    elapsed = time.perf_counter() - t0
    assert elapsed < 60, elapsed
    assert len(doc) == n
    assert all(t.tag_ in pipe.labels for t in doc)
    conf = np.asarray(stored_confidences(doc), dtype=np.float64)
    assert conf.shape == (n,)
    assert np.all(np.isfinite(conf)) and conf.min() > 0.0 and conf.max() <= 1.0
    scores = pipe.target.constrain(pipe.model.predict([doc]))
    structure = pipe.batch_layout([doc])
    expected_seqs = 1 if sents is None else int(np.sum(sents))
    assert structure.lengths.shape == (expected_seqs,)
    ids, best = inference.viterbi(scores, structure)
    got, mag = path_scores(scores, structure.lengths, ids)
    np.testing.assert_allclose(got, best, rtol=0, atol=1e-9 * (mag.max() + 1.0))
    probs, log_z = inference.marginals(scores, structure)
    assert np.all(np.isfinite(log_z))
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(conf, probs[np.arange(n), ids], rtol=1e-6, atol=1e-7)
