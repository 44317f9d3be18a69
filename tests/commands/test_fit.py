"""The batch trainer (``spacy_crf.fit``): its objective, its optimizer, and the command.

* The corpus objective against brute-force enumeration of every labelling
  (chains) and against the brute-force-tested kernels (trees), its gradient
  against central finite differences, sharded against one shard.
* Our L-BFGS against scipy's L-BFGS-B; OWL-QN against the closed-form L1
  solution of a separable problem; CRFsuite's stopping rule.
* ``fit`` end to end on the shipped sample: model-best and model-last that
  ``spacy.load`` reads in a fresh process and that predict what the trainer's
  pipeline predicts; the command line; clear errors.
"""

import io
import itertools
import json
import subprocess
import sys

import numpy as np
import pytest
import spacy
from spacy.tokens import DocBin

from conftest import ewt_sample_corpus, run_main
from kernels.oracle import logsumexp
from spacy_crf import inference
from spacy_crf._kernels import lbfgs as vectors
from spacy_crf._kernels.tree import check_forest
from spacy_crf.training.fit import fit
from spacy_crf.structures import ChainLayout, TreeLayout
from spacy_crf.models.potentials import CRFScores
from spacy_crf.training.objective import FeaturizedShard, ParameterLayout, ShardedObjective
from spacy_crf.training.optimize import StoppingRule, minimize
from spacy_crf.training.owlqn import Iteration

from conftest import ROOT



# ---------------------------------------------------------------- random featurized corpora


def random_chain_shard(rng, lengths, L=3, n_rows=6, K=2, partial=False):
    N = int(sum(lengths))
    layout = ParameterLayout(n_rows, L)
    rows = rng.integers(0, n_rows, size=(N, K)).astype(np.int64)
    gold = rng.integers(0, L, size=N).astype(np.int64)
    if partial:
        gold[rng.random(N) < 0.3] = -1
    return FeaturizedShard(layout, rows, gold, ChainLayout(np.asarray(lengths)))


def random_tree_shard(rng, lengths, L=3, R=2, n_rows=6, K=2, partial=False):
    N = int(sum(lengths))
    heads = np.full(N, -1, dtype=np.int64)
    o = 0
    for n in lengths:
        for t in range(1, n):  # a head earlier in the segment: a tree rooted at its first token
            heads[o + t] = o + int(rng.integers(0, t))
        o += n
    order = np.empty(N, dtype=np.int64)
    assert check_forest(heads, np.asarray(lengths, dtype=np.int64), order) == 0
    rel = rng.integers(0, R, size=N).astype(np.int64)
    layout = ParameterLayout(n_rows, L, structure="tree", n_relations=R)
    rows = rng.integers(0, n_rows, size=(N, K)).astype(np.int64)
    gold = rng.integers(0, L, size=N).astype(np.int64)
    if partial:
        gold[rng.random(N) < 0.3] = -1
    return FeaturizedShard(layout, rows, gold,
                           TreeLayout(np.asarray(lengths), heads, order, rel))


def emissions_of(shard, params):
    return params["b"] + params["W"][shard.rows].sum(axis=1)


def brute_chain_nll(shard, theta):
    """sum over sequences of log Z - log Z(labellings that agree with the known gold)."""
    p = shard.layout.split(theta)
    em = emissions_of(shard, p)
    L = shard.layout.n_labels
    total, o = 0.0, 0
    for n in shard.structure.lengths:
        ys = np.asarray(list(itertools.product(range(L), repeat=int(n))))
        score = em[o + np.arange(n), ys].sum(axis=1) + p["start"][ys[:, 0]] + p["end"][ys[:, -1]]
        for t in range(1, n):
            score += p["transitions"][ys[:, t - 1], ys[:, t]]
        gold = shard.gold[o:o + n]
        agrees = np.all((gold < 0) | (ys == gold), axis=1)
        total += logsumexp(score) - logsumexp(score[agrees])
        o += n
    return total


def kernel_reference_nll(shard, theta):
    """The same corpus through ``inference.nll_and_gradient`` (the tested kernels)."""
    p = shard.layout.split(theta)
    L = shard.layout.n_labels
    zeros = np.zeros(L)
    if shard.layout.structure == "tree":
        scores = CRFScores.of(emissions_of(shard, p), transitions=np.zeros((L, L)), start=zeros, end=zeros,
                              pair=p["pair"].copy(), root=p["root"].copy())
    else:
        scores = CRFScores.of(emissions_of(shard, p), transitions=p["transitions"].copy(),
                              start=p["start"].copy(), end=p["end"].copy(),
                              pair=np.zeros((1, L, L)), root=zeros)
    nll, _ = inference.nll_and_gradient(scores, shard.structure, shard.gold)
    return float(nll.sum())


def finite_difference_gradient(f, theta, eps=1e-6):
    grad = np.zeros_like(theta)
    for i in range(theta.shape[0]):
        step = np.zeros_like(theta)
        step[i] = eps
        grad[i] = (f(theta + step) - f(theta - step)) / (2 * eps)
    return grad


@pytest.mark.parametrize("partial", [False, True], ids=["full", "partial"])
@pytest.mark.parametrize("seed", range(3))
def test_chain_objective_matches_brute_force_and_finite_differences(seed, partial):
    rng = np.random.default_rng(seed)
    shard = random_chain_shard(rng, [1, 3, 2, 4], partial=partial)
    theta = rng.normal(size=shard.layout.size)
    c2 = 0.3
    objective = ShardedObjective([shard], c2=c2, n_threads=1)
    loss, grad = objective(theta, np.empty_like(theta))
    expected = brute_chain_nll(shard, theta) + c2 * float(theta @ theta)
    assert loss == pytest.approx(expected, rel=1e-10)
    fd = finite_difference_gradient(lambda x: objective(x)[0], theta)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)
    assert np.abs(grad).max() > 1e-3  # a gradient that is all zeros would pass nothing


@pytest.mark.parametrize("partial", [False, True], ids=["full", "partial"])
@pytest.mark.parametrize("seed", range(3))
def test_tree_objective_matches_kernels_and_finite_differences(seed, partial):
    rng = np.random.default_rng(10 + seed)
    shard = random_tree_shard(rng, [1, 4, 3], partial=partial)
    theta = rng.normal(size=shard.layout.size)
    objective = ShardedObjective([shard], c2=0.0, n_threads=1)
    loss, grad = objective(theta, np.empty_like(theta))
    assert loss == pytest.approx(kernel_reference_nll(shard, theta), rel=1e-10)
    fd = finite_difference_gradient(lambda x: objective(x)[0], theta)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)
    p = shard.layout.split(grad)
    assert np.abs(p["pair"]).max() > 1e-3 and np.abs(p["W"]).max() > 1e-3


def test_two_shards_on_two_threads_equal_one_shard():
    rng = np.random.default_rng(7)
    lengths = [3, 1, 4, 2, 5]
    whole = random_chain_shard(rng, lengths, partial=True)
    cut = 3  # sequences [0, 3) and [3, 5)
    n_first = sum(lengths[:cut])
    parts = [FeaturizedShard(whole.layout, whole.rows[:n_first], whole.gold[:n_first],
                             ChainLayout(np.asarray(lengths[:cut]))),
             FeaturizedShard(whole.layout, whole.rows[n_first:], whole.gold[n_first:],
                             ChainLayout(np.asarray(lengths[cut:])))]
    theta = rng.normal(size=whole.layout.size)
    one = ShardedObjective([whole], c2=0.1, n_threads=1)
    two = ShardedObjective(parts, c2=0.1, n_threads=2)
    loss1, g1 = one(theta)
    for _ in range(2):  # twice: the second call reuses the threads and the workspaces
        loss2, g2 = two(theta, np.full_like(theta, np.nan))
        assert loss2 == pytest.approx(loss1, rel=1e-12)
        np.testing.assert_allclose(g2, g1, rtol=1e-12, atol=1e-12)
    two.close()


# ---------------------------------------------------------------- vector kernels and optimizers


def test_vector_kernels_match_numpy():
    rng = np.random.default_rng(0)
    n, m = 1000, 4
    x, g = rng.normal(size=n), rng.normal(size=n)
    x[rng.random(n) < 0.3] = 0.0
    c1 = 0.5
    pg = np.empty(n)
    pg_sq, x_sq, x_abs, active = vectors.pseudo_gradient(x, g, c1, pg)
    expected = np.where(x > 0, g + c1, np.where(x < 0, g - c1,
                        np.where(g + c1 < 0, g + c1, np.where(g - c1 > 0, g - c1, 0.0))))
    np.testing.assert_allclose(pg, expected)
    assert pg_sq == pytest.approx(expected @ expected) and x_sq == pytest.approx(x @ x)
    assert x_abs == pytest.approx(np.abs(x).sum()) and active == np.count_nonzero(x)
    # the two-loop recursion against its textbook form (float32 pairs)
    S = rng.normal(size=(m, n)).astype(np.float32)
    Y = (S + 0.1 * rng.normal(size=(m, n))).astype(np.float32)
    rho = 1.0 / np.einsum("ij,ij->i", S.astype(np.float64), Y.astype(np.float64))
    slots = np.array([2, 0, 3, 1], dtype=np.int64)  # oldest first, a ring buffer's order
    gamma = 0.7
    d = np.empty(n, dtype=np.float32)
    descent = vectors.direction(g, S, Y, rho, slots, gamma, 0.0, d)
    q = -g.copy()
    alphas = {}
    for k in slots[::-1]:
        alphas[k] = rho[k] * (S[k] @ q)
        q -= alphas[k] * Y[k]
    q *= gamma
    for k in slots:
        q += (alphas[k] - rho[k] * (Y[k] @ q)) * S[k]
    np.testing.assert_allclose(d, q, rtol=1e-4, atol=1e-4)
    assert descent == pytest.approx(g @ d.astype(np.float64), rel=1e-6)


def quadratic(A, b):
    def fun(x, out=None):
        grad = A @ x - b
        if out is not None:
            out[...] = grad
            grad = out
        return 0.5 * x @ A @ x - b @ x, grad
    return fun


def test_lbfgs_reaches_scipys_optimum():
    scipy_optimize = pytest.importorskip("scipy.optimize")
    rng = np.random.default_rng(1)
    M = rng.normal(size=(30, 30))
    A = M @ M.T + 0.5 * np.eye(30)
    b = rng.normal(size=30)
    fun = quadratic(A, b)
    exact = np.linalg.solve(A, b)
    ours, k, message = minimize(fun, np.zeros(30), max_iterations=500,
                                rule=StoppingRule(period=0, epsilon=1e-6))
    theirs = scipy_optimize.minimize(lambda x: fun(x), np.zeros(30), jac=True, method="L-BFGS-B",
                                     options={"gtol": 1e-12, "ftol": 0, "maxiter": 500}).x
    via_scipy, _, _ = minimize(fun, np.zeros(30), max_iterations=500, optimizer="scipy",
                               rule=StoppingRule(period=0, epsilon=1e-10))
    np.testing.assert_allclose(ours, exact, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(theirs, exact, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(via_scipy, exact, rtol=1e-5, atol=1e-6)
    assert "converged" in message and k < 500


def test_owlqn_finds_the_soft_thresholded_solution():
    rng = np.random.default_rng(2)
    n = 50
    a = rng.uniform(0.5, 3.0, size=n)
    m = rng.normal(scale=2.0, size=n)
    c1 = 1.0

    def fun(x, out):
        out[...] = a * (x - m)
        return 0.5 * float(a @ (x - m) ** 2), out

    x, _, _ = minimize(fun, np.zeros(n), c1=c1, max_iterations=300,
                       rule=StoppingRule(period=0, epsilon=1e-9))
    expected = np.sign(m) * np.maximum(np.abs(m) - c1 / a, 0.0)
    assert np.count_nonzero(expected == 0) >= 5
    np.testing.assert_array_equal(x == 0.0, expected == 0.0)  # exact zeros, no more, no fewer
    np.testing.assert_allclose(x, expected, atol=1e-6)


def test_stopping_rule_is_crfsuites():
    rule = StoppingRule(period=3, delta=0.01, epsilon=0.0)
    rule.start(100.0)
    losses = [50.0, 40.0, 39.9, 39.8, 39.7]
    stops = [rule.check(Iteration(k + 1, f, 1.0, 1.0, 1)) for k, f in enumerate(losses)]
    # (f[k-3] - f[k]) / f[k]: iteration 4: (50 - 39.8) / 39.8 > 0.01; iteration 5: (40 - 39.7) / 39.7 < 0.01
    assert stops[:4] == [None] * 4 and stops[4] is not None and "delta" in stops[4]
    tiny_gradient = StoppingRule(period=0, epsilon=1e-3)
    tiny_gradient.start(1.0)
    assert tiny_gradient.check(Iteration(1, 1.0, 1e-2, 1.0, 1)) is None
    assert "epsilon" in tiny_gradient.check(Iteration(2, 1.0, 1e-4, 1.0, 1))


# ---------------------------------------------------------------- fit end to end


@pytest.fixture(scope="module")
def sample_corpus(tmp_path_factory):
    return ewt_sample_corpus(tmp_path_factory.mktemp("fit_corpus"))


def overrides(paths, **extra):
    return {"paths.train": str(paths["train"]), "paths.dev": str(paths["dev"]),
            "components.crf_tagger.model.n_buckets": 65536, **extra}


@pytest.fixture(scope="module")
def fitted(sample_corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("fit_out")
    log = out / "log.txt"
    with log.open("w") as stream:
        nlp = fit(ROOT / "configs" / "ewt_upos.cfg", out, overrides=overrides(sample_corpus),
                  max_iterations=25, eval_frequency=10, stdout=stream)
    return nlp, out, log.read_text()


def tags_of(nlp, paths):
    docs = list(DocBin().from_disk(paths["dev"]).get_docs(nlp.vocab))
    return [[t.pos_ for t in doc] for doc in nlp.pipe(spacy.tokens.Doc(nlp.vocab, words=[t.text for t in d]) for d in docs)]


def test_fit_writes_models_that_load_in_a_fresh_process(fitted, sample_corpus):
    nlp, out, log = fitted
    for name in ("model-best", "model-last"):
        meta = json.loads((out / name / "meta.json").read_text())
        # the config weighs the main score of its target alone
        scores = {k for k in meta["performance"] if not k.endswith("_loss")}
        assert scores == {"pos_acc"}, meta["performance"]
        assert meta["performance"]["pos_acc"] > 0.8, meta["performance"]
    # a fresh interpreter, no import of spacy_crf: the entry points find the component
    script = ("import json, sys, spacy\n"
              "from spacy.tokens import DocBin, Doc\n"
              "nlp = spacy.load(sys.argv[1])\n"
              "docs = list(DocBin().from_disk(sys.argv[2]).get_docs(nlp.vocab))\n"
              "out = [[t.pos_ for t in d] for d in nlp.pipe(Doc(nlp.vocab, words=[t.text for t in x]) for x in docs)]\n"
              "print(json.dumps(out))\n")
    run = subprocess.run([sys.executable, "-c", script, str(out / "model-last"), str(sample_corpus["dev"])],
                         capture_output=True, text=True, check=True)
    assert json.loads(run.stdout) == tags_of(nlp, sample_corpus)


def test_fit_prints_one_line_per_iteration_with_dev_scores(fitted):
    _, _, log = fitted
    lines = [line.split() for line in log.splitlines() if line.strip() and line.split()[0].isdigit()]
    assert [int(cols[0]) for cols in lines if len(cols) >= 6][:25] == list(range(1, 26))
    scored = {int(cols[0]): float(cols[4]) for cols in lines if len(cols) == 7}
    assert {10, 20} <= set(scored) and all(0.5 < s <= 1.0 for s in scored.values())
    losses = [float(cols[1]) for cols in lines if len(cols) >= 6]
    assert losses[-1] < 0.5 * losses[0]


def test_l1_makes_the_model_sparse(sample_corpus, tmp_path):
    with open(tmp_path / "log", "w") as stream:
        fit(ROOT / "configs" / "ewt_upos.cfg", None, overrides=overrides(sample_corpus),
            max_iterations=25, c1=1.0, c2=0.01, eval_frequency=100, stdout=stream)
    rows = [line.split() for line in (tmp_path / "log").read_text().splitlines()
            if len(line.split()) >= 6 and line.split()[0].isdigit()]
    weights = int(next(line for line in (tmp_path / "log").read_text().splitlines()
                       if line.startswith("Fitting")).split(" weights")[0].split()[-1])
    active = int(rows[-1][3])
    assert 0 < active < 0.5 * weights


def test_the_command_line_takes_spacys_overrides(sample_corpus, tmp_path):
    from spacy_crf.commands.fit import main

    # python -m spacy_crf.fit, in process
    run = run_main(main, [ROOT / "configs" / "ewt_upos.cfg", "--output", tmp_path / "out",
                          "--paths.train", sample_corpus["train"],
                          "--paths.dev", sample_corpus["dev"],
                          "--components.crf_tagger.model.n_buckets", "4096",
                          "--max-iterations", "3", "--c2", "0.5"])
    assert run.returncode == 0, run.stderr
    assert "c2=0.5" in run.stdout and "reached max_iterations" in run.stdout
    assert (tmp_path / "out" / "model-last" / "meta.json").exists()
    config = (tmp_path / "out" / "model-last" / "config.cfg").read_text()
    assert "n_buckets = 4096" in config


@pytest.mark.parametrize("kwargs, code", [({"c1": -1.0}, "E032"), ({"c2": -0.1}, "E032"),
                                          ({"max_iterations": -1}, "E032"),
                                          ({"eval_frequency": 0}, "E032")])
def test_bad_options_are_named(sample_corpus, kwargs, code):
    with pytest.raises(ValueError, match=rf"\[CRF-{code}\]"):
        fit(ROOT / "configs" / "ewt_upos.cfg", None, overrides=overrides(sample_corpus), **kwargs)


def test_a_neural_model_is_refused_with_the_fix(sample_corpus):
    with pytest.raises(ValueError, match=r"\[CRF-E031\].*FeatureCRF"):
        fit(ROOT / "configs" / "ewt_upos_neural.cfg", None,
            overrides={"paths.train": str(sample_corpus["train"]),
                       "paths.dev": str(sample_corpus["dev"])}, max_iterations=1)


@pytest.mark.parametrize("loss", ["perceptron", "hinge"])
def test_a_loss_the_batch_trainer_cannot_minimise_is_refused_as_the_loss_says(sample_corpus,
                                                                              loss):
    # (the refusal is the loss's own supports_batch_fit, naming those it supports)
    with pytest.raises(ValueError, match=rf"\[CRF-E036\].*loss = '{loss}'.*supports, 'nll'"):
        fit(ROOT / "configs" / "ewt_upos.cfg", None, max_iterations=1,
            overrides=overrides(sample_corpus, **{"components.crf_tagger.loss": loss}))


def test_a_missing_corpus_is_named(sample_corpus, tmp_path):
    with pytest.raises(ValueError, match=r"\[CRF-E037\].*nowhere.spacy.*--paths.train"):
        fit(ROOT / "configs" / "ewt_upos.cfg", None,
            overrides=overrides(sample_corpus, **{"paths.train": str(tmp_path / "nowhere.spacy")}))


def test_fit_holds_a_training_gazetteer_out_as_updates_do(tmp_path):
    """fit featurizes its corpus in training mode: a gazetteer drawn from that
    corpus (gazetteer_from_training) holds each document's own entities out, and
    the check that the shards give the model's own emissions compares like with
    like (it raised E035 before)."""
    from spacy_crf.converters import convert_uner

    sample = ROOT / "assets" / "ewt_sample"
    paths = {}
    for split in ("train", "dev"):
        docs = convert_uner((sample / f"en_ewt-{split}.iob2").read_text(encoding="utf8"),
                            spacy.blank("en").vocab)
        paths[split] = tmp_path / f"{split}.spacy"
        DocBin(docs=docs).to_disk(paths[split])
    stream = io.StringIO()
    nlp = fit(ROOT / "configs" / "uner_ner.cfg", tmp_path / "out", max_iterations=3,
              overrides={"paths.train": str(paths["train"]), "paths.dev": str(paths["dev"]),
                         "components.crf_tagger.model.n_buckets": 65536,
                         "components.crf_tagger.model.templates": ["NORM", "GAZETTEER[-1..1]"],
                         "initialize.components.crf_tagger": {"gazetteer_from_training": True}},
              stdout=stream)
    featurize = next(n for n in nlp.get_pipe("crf_tagger").model.walk()
                     if n.name == "crf_featurize")
    assert featurize.attrs["crf_lexicon"]["gazetteer"].gazetteer.from_training


def test_tree_structure_fits(sample_corpus, tmp_path):
    with open(tmp_path / "log", "w") as stream:
        nlp = fit(ROOT / "configs" / "ewt_upos_tree.cfg", tmp_path / "out",
                  overrides=overrides(sample_corpus), max_iterations=15, eval_frequency=15,
                  stdout=stream)
    meta = json.loads((tmp_path / "out" / "model-last" / "meta.json").read_text())
    assert nlp.get_pipe("crf_tagger").cfg["structure"] == "tree"
    assert meta["performance"]["pos_acc"] > 0.8


def random_order2_shard(rng, lengths, L=3, n_rows=6, K=2, partial=False, pruned=False):
    from spacy_crf.structures.second_order import SecondOrderLayout, all_pairs

    N = int(sum(lengths))
    layout = ParameterLayout(n_rows, L, structure="chain_order2")
    rows = rng.integers(0, n_rows, size=(N, K)).astype(np.int64)
    gold = rng.integers(0, L, size=N).astype(np.int64)
    pairs = all_pairs(L)
    if pruned:  # the gold's pairs and a few others, as initialize keeps them
        from spacy_crf.structures.second_order import seen_pairs

        seen = seen_pairs(gold, np.asarray(lengths))
        extra = pairs[rng.random(len(pairs)) < 0.3]
        pairs = np.unique(np.concatenate([seen, extra]), axis=0)
    if partial:
        gold[rng.random(N) < 0.3] = -1
    return FeaturizedShard(layout, rows, gold, SecondOrderLayout(np.asarray(lengths), pairs))


@pytest.mark.parametrize("kind", ["chain", "tree", "order2", "order2 pruned",
                                  "order2 gold outside the pairs", "order2 beyond scaling"])
@pytest.mark.parametrize("partial", [False, True])
def test_the_generic_shard_likelihood_equals_each_structures_fused_kernel(kind, partial):
    """CRFStructure.shard_nll (gather, the structure's nll_and_gradient, scatter),
    which any new structure inherits, against the chain's and the tree's own kernels."""
    from spacy_crf.structures import CRFStructure

    rng = np.random.default_rng(31)
    lengths = [3, 1, 4, 0, 2]
    if kind.startswith("order2"):
        shard = random_order2_shard(rng, lengths, partial=partial, pruned=kind != "order2")
        if kind == "order2 gold outside the pairs":  # the first gold pair is not kept
            shard.gold[:2] = shard.gold[:2].clip(0)
            keep = ~((shard.structure.pairs[:, 0] == shard.gold[0])
                     & (shard.structure.pairs[:, 1] == shard.gold[1]))
            shard.structure.pairs = shard.structure.pairs[keep]
    else:
        make = random_chain_shard if kind == "chain" else random_tree_shard
        shard = make(rng, lengths, partial=partial)
    theta = rng.normal(size=shard.layout.size)
    if kind == "order2 beyond scaling":  # scores the scaled passes cannot hold: the exact ones
        theta *= 400.0
    structure = shard.structure.structure
    results = []
    for shard_nll in (structure.shard_nll, lambda *a: CRFStructure.shard_nll(structure, *a)):
        gradient = np.zeros(shard.layout.size)
        N, L = shard.n_tokens, shard.layout.n_labels
        workspace = (np.empty((N, L)), np.empty((N, L)), np.empty(len(shard.structure.lengths)))
        for _ in range(2):  # twice: the kept work arrays must start each evaluation clean
            gradient[:] = 0.0
            loss = shard_nll(shard.rows, shard.structure, shard.gold,
                             shard.layout.split(theta), shard.layout.split(gradient), workspace)
        results.append((loss, gradient))
    (fused, g_fused), (generic, g_generic) = results
    assert np.isfinite(fused)
    assert generic == pytest.approx(fused, rel=1e-10)
    np.testing.assert_allclose(g_generic, g_fused, rtol=1e-9, atol=1e-10)
