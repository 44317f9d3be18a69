"""The row-sparse optimizer step of the hashed weight table against thinc's dense one,
and a finite-difference check of the full FeatureCRF gradient."""


import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import SGD, Adam, Optimizer

import spacy_crf.models.sparse_table as sparse_table
from conftest import NO_WORD_TABLES
from finite_differences import central_difference
from spacy_crf.models.hashed_linear import hashed_linear
from spacy_crf.models.sparse_table import LR_SCALE, ATTR, apply_sparse_updates, sync_averages

N_BUCKETS, N_LABELS = 48, 3
DENSE_KEY = (987654, "W")


def make_layer(seed=0, n_buckets=N_BUCKETS):
    layer = hashed_linear(n_buckets, nO=N_LABELS)
    layer.initialize()
    rng = np.random.default_rng(seed)
    layer.set_param("W", rng.normal(size=(n_buckets, N_LABELS)).astype("float32"))
    return layer


def dense_grad(features, d_scores):
    """The dense gradient of gather_sum w.r.t. W (numpy, independent of the kernels)."""
    grad = np.zeros((N_BUCKETS, N_LABELS), dtype="float32")
    rows = (features % np.uint64(N_BUCKETS)).astype(np.int64)
    np.add.at(grad, rows, np.broadcast_to(d_scores[:, None, :], rows.shape + (N_LABELS,)))
    return grad


def batches(n_steps, seed=1, always=()):
    """Feature-id batches touching different rows each step (plus ``always`` every step).

    Ids are large uint64 hashes, to exercise the modulo mapping to rows.
    """
    rng = np.random.default_rng(seed)
    out = []
    for step in range(n_steps):
        # alternate halves of the table, so most rows are left alone for a while
        lo = 8 + (step % 3) * 12
        rows = rng.integers(lo, lo + 12, size=(5, 2))
        rows = np.vstack([rows, np.asarray(always, dtype=np.int64).reshape(-1, 2)]) if len(always) else rows
        ids = rows.astype(np.uint64) + np.uint64(N_BUCKETS) * rng.integers(0, 2**40, size=rows.shape).astype(np.uint64)
        d_scores = rng.normal(size=(rows.shape[0], N_LABELS)).astype("float32")
        out.append((ids, d_scores))
    return out


def run_sparse(layer, optimizer, steps, accumulate=1):
    for ids, d_scores in steps:
        for part_ids, part_d in zip(np.array_split(ids, accumulate), np.array_split(d_scores, accumulate)):
            _, backprop = layer(part_ids, is_train=True)
            backprop(part_d)
        apply_sparse_updates(layer, optimizer)


def run_dense(W, optimizer, steps):
    W = W.copy()
    for ids, d_scores in steps:
        W, _ = optimizer(DENSE_KEY, W, dense_grad(ids, d_scores))
    return W


def numpy_sgd_with_averages(W, steps, learn_rate):
    """thinc's SGD + parameter averaging, re-implemented in float64."""
    W = W.astype(np.float64)
    ema = np.zeros_like(W)
    for t, (ids, d_scores) in enumerate(steps, start=1):
        W = W - learn_rate * dense_grad(ids, d_scores)
        decay = min((1.0 + t) / (10.0 + t), 0.9999)
        ema -= (1 - decay) * (ema - W)
    return W, ema


# ---------------------------------------------------------------- SGD: all rows exact


def test_sgd_with_averages_matches_dense():
    layer = make_layer()
    W0 = layer.get_param("W").copy()
    steps = batches(7)
    sparse_opt, dense_opt = SGD(0.1, grad_clip=0.0), SGD(0.1, grad_clip=0.0)
    run_sparse(layer, sparse_opt, steps)
    W_dense = run_dense(W0, dense_opt, steps)
    W_np, ema_np = numpy_sgd_with_averages(W0, steps, 0.1)
    W = layer.get_param("W")
    # some rows were never touched, and several were touched then left alone
    assert np.array_equal(W[:8], W0[:8])
    assert np.allclose(W, W_dense, atol=1e-6)
    assert np.allclose(W, W_np, atol=1e-6)
    sync_averages(layer, sparse_opt.averages)
    avg = sparse_opt.averages[(layer.id, "W")]
    assert np.allclose(avg, dense_opt.averages[DENSE_KEY], atol=1e-6)
    assert np.allclose(avg, ema_np, atol=1e-6)
    assert sparse_opt.nr_update[(layer.id, "W")] == dense_opt.nr_update[DENSE_KEY] == len(steps)


def test_averages_stay_exact_across_repeated_syncs():
    """Syncing mid-training (evaluation in spacy train) must not disturb later steps."""
    layer = make_layer()
    W0 = layer.get_param("W").copy()
    steps = batches(9, seed=3)
    sparse_opt, dense_opt = SGD(0.05, grad_clip=0.0), SGD(0.05, grad_clip=0.0)
    W_dense = W0.copy()
    for i, step in enumerate(steps):
        run_sparse(layer, sparse_opt, [step])
        W_dense = run_dense(W_dense, dense_opt, [step])
        if i in (2, 3, 6, 8):
            sync_averages(layer, sparse_opt.averages)
            assert np.allclose(sparse_opt.averages[(layer.id, "W")], dense_opt.averages[DENSE_KEY],
                               atol=1e-6), f"after step {i}"
    assert np.allclose(layer.get_param("W"), W_dense, atol=1e-6)


def test_sgd_without_averages_matches_dense():
    layer = make_layer()
    W0 = layer.get_param("W").copy()
    steps = batches(5, seed=4)
    sparse_opt, dense_opt = (SGD(0.1, grad_clip=0.0, use_averages=False),
                             SGD(0.1, grad_clip=0.0, use_averages=False))
    run_sparse(layer, sparse_opt, steps)
    assert np.allclose(layer.get_param("W"), run_dense(W0, dense_opt, steps), atol=1e-6)
    assert sparse_opt.averages is None


def test_accumulated_backprops_are_one_step():
    """Several backprops before one step (accumulate_gradient) sum their rows."""
    layer = make_layer()
    W0 = layer.get_param("W").copy()
    steps = batches(4, seed=5)
    sparse_opt, dense_opt = SGD(0.1, grad_clip=0.0), SGD(0.1, grad_clip=0.0)
    run_sparse(layer, sparse_opt, steps, accumulate=3)
    assert sparse_opt.nr_update[(layer.id, "W")] == len(steps)
    assert np.allclose(layer.get_param("W"), run_dense(W0, dense_opt, steps), atol=1e-6)


def test_gradient_clipping_scales_like_dense():
    layer = make_layer()
    W0 = layer.get_param("W").copy()
    steps = batches(6, seed=6)
    clip = 0.5
    assert all(np.linalg.norm(dense_grad(*s)) > clip for s in steps)  # clipping is active
    sparse_opt, dense_opt = SGD(0.1, grad_clip=clip), SGD(0.1, grad_clip=clip)
    run_sparse(layer, sparse_opt, steps)
    W_dense = run_dense(W0, dense_opt, steps)
    assert np.allclose(layer.get_param("W"), W_dense, atol=1e-6)
    sync_averages(layer, sparse_opt.averages)
    assert np.allclose(sparse_opt.averages[(layer.id, "W")], dense_opt.averages[DENSE_KEY], atol=1e-6)
    # and it made a difference
    assert not np.allclose(W_dense, run_dense(W0, SGD(0.1, grad_clip=0.0), steps), atol=1e-3)


# ---------------------------------------------------------------- Adam: rows touched every step


ALWAYS = [0, 1, 2, 3, 4, 5]  # rows touched at every step


@pytest.mark.parametrize(
    "make_optimizer,make_reference",
    [
        (lambda: Adam(0.05, grad_clip=0.0), None),
        # the hashed table takes no weight decay: the reference is the same Adam without it
        (lambda: Adam(0.05, grad_clip=0.0, L2=0.01, L2_is_weight_decay=True),
         lambda: Adam(0.05, grad_clip=0.0, L2=0.0)),
        (lambda: Adam(0.05, grad_clip=0.0, L2=0.01, L2_is_weight_decay=False), None),
        (lambda: Adam(0.05, grad_clip=0.5), None),
        (lambda: Adam(0.05, grad_clip=0.5, L2=0.01, L2_is_weight_decay=True),
         lambda: Adam(0.05, grad_clip=0.5, L2=0.0)),
        (lambda: Adam(0.05, grad_clip=0.0, beta1=0.8, beta2=0.99, eps=1e-6), None),
    ],
    ids=["plain", "decoupled-L2", "L2", "grad-clip", "grad-clip-decoupled-L2", "other-betas"],
)
def test_adam_rows_touched_every_step_match_dense(make_optimizer, make_reference):
    layer = make_layer()
    W0 = layer.get_param("W").copy()
    steps = batches(8, seed=7, always=ALWAYS)
    sparse_opt, dense_opt = make_optimizer(), (make_reference or make_optimizer)()
    run_sparse(layer, sparse_opt, steps)
    W_dense = run_dense(W0, dense_opt, steps)
    W = layer.get_param("W")
    assert np.allclose(W[:6], W_dense[:6], rtol=1e-5, atol=1e-5)
    assert not np.allclose(W[:6], W0[:6], atol=1e-3)
    # rows never touched are never moved (dense Adam moves them only by their zero gradient)
    untouched = sorted(set(range(N_BUCKETS)) - {int(r) for ids, _ in steps for r in ids.ravel() % np.uint64(N_BUCKETS)})
    assert untouched
    assert np.array_equal(W[untouched], W0[untouched])
    sync_averages(layer, sparse_opt.averages)
    avg = sparse_opt.averages[(layer.id, "W")]
    assert np.allclose(avg[:6], dense_opt.averages[DENSE_KEY][:6], rtol=1e-5, atol=1e-5)


def test_adam_with_default_gradient_clipping_matches_dense_on_rows_touched_every_step():
    """thinc's Adam clips at 1.0 by default; the norm is over the whole (dense) gradient,
    which is the norm of the touched rows."""
    layer = make_layer()
    W0 = layer.get_param("W").copy()
    steps = batches(8, seed=8, always=ALWAYS)
    sparse_opt, dense_opt = Adam(0.05), Adam(0.05)
    assert dense_opt.grad_clip == 1.0
    run_sparse(layer, sparse_opt, steps)
    W_dense = run_dense(W0, dense_opt, steps)
    assert np.allclose(layer.get_param("W")[:6], W_dense[:6], rtol=1e-5, atol=1e-5)


def test_coupled_l2_with_clipping_matches_dense_when_every_row_is_touched():
    layer = make_layer()
    W0 = layer.get_param("W").copy()
    rng = np.random.default_rng(9)
    every_row = np.arange(N_BUCKETS, dtype=np.uint64).reshape(-1, 2)
    steps = [(every_row, rng.normal(size=(every_row.shape[0], N_LABELS)).astype("float32"))
             for _ in range(4)]

    def make():
        return Adam(0.05, L2=0.1, L2_is_weight_decay=False, grad_clip=1.0)

    sparse_opt, dense_opt = make(), make()
    run_sparse(layer, sparse_opt, steps)
    assert np.allclose(layer.get_param("W"), run_dense(W0, dense_opt, steps), rtol=1e-5, atol=1e-5)


def test_adam_moments_live_in_the_optimizer():
    layer = make_layer()
    opt = Adam(0.05, grad_clip=0.0)
    run_sparse(layer, opt, batches(2, always=ALWAYS))
    key = (layer.id, "W")
    assert np.any(opt.mom1[key] != 0) and np.any(opt.mom2[key] != 0)
    assert opt.nr_update[key] == 2


def test_adam_moments_exist_only_for_touched_rows():
    """Optimizer state grows with the rows training touches, not with n_buckets."""
    layer = make_layer(n_buckets=2**16)
    opt = Adam(0.05, grad_clip=0.0)
    steps = batches(5, seed=4, always=ALWAYS)
    run_sparse(layer, opt, steps)
    key = (layer.id, "W")
    touched = {int(r) for ids, _ in steps for r in ids.ravel() % np.uint64(2**16)}
    table = layer.attrs[ATTR]
    assert table.n_moment_rows == len(touched)
    assert opt.mom1[key].size < 2**16 * N_LABELS / 10
    assert np.array_equal(np.flatnonzero(table.moment_row >= 0), sorted(touched))


# ---------------------------------------------------------------- through the component


TEXTS = [
    "the cat sat", "a dog ran home", "birds sang in trees", "my old man walked slowly",
    "she reads long books", "farmers plant corn", "the river runs north", "we ate bread today",
]


def _pipeline(n_buckets=64):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": {
        "@architectures": "spacy-crf.FeatureCRF.v2", "templates": ["NORM", "SUFFIX2"],
        # spelling only: the paths are compared to float32 rounding (atol 1e-6),
        # which the factory's cluster features, with their larger weights here, exceed
        # no L1 penalty: the dense fallback (thinc's step) has none
        "n_buckets": n_buckets, "cluster_templates": None, "l1_penalty": 0.0}})
    # (nor the word tables the tag target reads by default, for the same reason)
    nlp.config["initialize"]["components"]["crf_tagger"] = dict(NO_WORD_TABLES)
    return nlp


def _examples(nlp):
    examples = []
    for i, text in enumerate(TEXTS):
        words = text.split()
        tags = ["A" if (j + i) % 2 else "B" for j in range(len(words))]
        tags[-1] = "C"
        examples.append(Example.from_dict(Doc(nlp.vocab, words=words), {"tags": tags}))
    return examples


def _params(nlp):
    tagger = nlp.get_pipe("crf_tagger")
    return {f"{node.name}.{name}": node.get_param(name).copy()
            for node in tagger.model.walk() for name in node.param_names if node.has_param(name)}


def test_component_sparse_steps_and_averages_match_dense_fallback(monkeypatch):
    """Same updates through CRFTagger.finish_update: row-sparse vs thinc's dense path."""
    sparse_nlp, dense_nlp = _pipeline(), _pipeline()
    sparse_egs, dense_egs = _examples(sparse_nlp), _examples(dense_nlp)
    sparse_nlp.initialize(lambda: sparse_egs)
    dense_nlp.initialize(lambda: dense_egs)
    assert all(np.array_equal(a, b) for a, b in zip(_params(sparse_nlp).values(), _params(dense_nlp).values()))
    sparse_opt, dense_opt = SGD(0.1, grad_clip=0.0), SGD(0.1, grad_clip=0.0)
    order = [[0, 1], [2, 3], [4, 5], [6, 7], [0, 5], [3], [7, 1]]
    for step, idx in enumerate(order):
        sparse_nlp.update([sparse_egs[i] for i in idx], sgd=sparse_opt)
        with monkeypatch.context() as m:
            m.setattr(sparse_table, "_supports", lambda sgd: False)  # force the dense fallback
            dense_nlp.update([dense_egs[i] for i in idx], sgd=dense_opt)
        if step == 3:  # an evaluation mid-training syncs the averages
            with sparse_nlp.use_params(sparse_opt.averages):
                pass
    sparse_params, dense_params = _params(sparse_nlp), _params(dense_nlp)
    for name in dense_params:
        assert np.allclose(sparse_params[name], dense_params[name], atol=1e-6), name
    # the averages, as swapped in by CRFTagger.use_params
    with sparse_nlp.use_params(sparse_opt.averages):
        sparse_avg = _params(sparse_nlp)
    with dense_nlp.use_params(dense_opt.averages):
        dense_avg = _params(dense_nlp)
    for name in dense_avg:
        assert np.allclose(sparse_avg[name], dense_avg[name], atol=1e-6), name
    assert not np.allclose(sparse_avg["crf_hashed_linear.W"], sparse_params["crf_hashed_linear.W"])
    # use_params restores the trained weights afterwards
    for name, value in _params(sparse_nlp).items():
        assert np.array_equal(value, sparse_params[name]), name


def test_radam_falls_back_to_the_dense_path():
    nlp = _pipeline()
    examples = _examples(nlp)
    nlp.initialize(lambda: examples)
    W0 = _params(nlp)["crf_hashed_linear.W"]
    opt = Optimizer(0.05, use_radam=True)
    history = []
    for _ in range(10):
        losses = {}
        nlp.update(examples, sgd=opt, losses=losses)
        history.append(losses["crf_tagger"])
    assert history[-1] < history[0]
    assert not np.allclose(_params(nlp)["crf_hashed_linear.W"], W0)
    table = [n for n in nlp.get_pipe("crf_tagger").model.walk() if ATTR in n.attrs][0].attrs[ATTR]
    assert table.n_rows == 0  # pending rows were handed to thinc


# ---------------------------------------------------------------- finite differences


def test_full_model_gradient_matches_finite_differences():
    nlp = spacy.blank("en")
    tagger = nlp.add_pipe("crf_tagger", config={"model": {
        "@architectures": "spacy-crf.FeatureCRF.v2",
        "templates": ["NORM[-1..1]", "SUFFIX2"], "n_buckets": 16}})
    words = [["the", "cat", "sat", "down"], ["a", "dog", "ran"], ["birds", "sang"]]
    tags = [["DT", "NN", "VBD", "RB"], ["DT", "NN", "VBD"], ["NN", "VBD"]]
    examples = [Example.from_dict(Doc(nlp.vocab, words=w), {"tags": t}) for w, t in zip(words, tags)]
    examples[1].reference[1].tag_ = ""  # a partially annotated sequence too
    examples.append(Example.from_dict(
        Doc(nlp.vocab, words=["the", "dog", "ran", "a", "cat"], sent_starts=[1, 0, 0, 1, 0]),
        {"tags": ["DT", "NN", "VBD", "DT", "NN"]}))
    nlp.initialize(lambda: examples)
    nodes = {node.name: node for node in tagger.model.walk()}
    linear, potentials = nodes["crf_hashed_linear"], nodes["crf_potentials"]
    checked = [(linear, "W"), (linear, "b"), (potentials, "transitions"), (potentials, "start"),
               (potentials, "end")]
    rng = np.random.default_rng(0)
    for node, name in checked:
        shape = node.get_param(name).shape
        # float64 parameters, so that the differences are not float32 rounding
        node.set_param(name, rng.normal(scale=0.5, size=shape).astype(np.float64))
    docs = [eg.predicted for eg in examples]

    def loss():
        return tagger.get_loss(examples, tagger.model.predict(docs))[0]

    scores, backprop = tagger.model.begin_update(docs)
    base_loss, d_scores = tagger.get_loss(examples, scores)
    assert base_loss == pytest.approx(loss())
    backprop(d_scores)
    table = linear.attrs[ATTR]
    assert 0 < table.n_rows <= 16
    grad_W = np.zeros(linear.get_param("W").shape)
    np.add.at(grad_W, table.rows[: table.n_rows], table.grads[: table.n_rows])
    analytic = {"W": grad_W, "b": linear.get_grad("b")}
    for name in ("transitions", "start", "end"):
        analytic[name] = potentials.get_grad(name)
    eps = 1e-5
    for node, name in checked:
        param = node.get_param(name)
        numeric = central_difference(loss, param, eps)
        assert np.abs(numeric).max() > 1e-3, name  # not vacuous
        assert np.allclose(analytic[name], numeric, rtol=1e-4, atol=1e-5), (
            name, np.abs(analytic[name] - numeric).max())


# ------------------------------------------------- learning-rate scale, weight decay


def test_learn_rate_scale_multiplies_the_optimizer_rate():
    """A layer's LR_SCALE is thinc's lr_scale: Adam(0.01) on a layer scaled by 5
    takes the steps of Adam(0.05)."""
    layer = make_layer()
    layer.attrs[LR_SCALE] = 5.0
    W0 = layer.get_param("W").copy()
    steps = batches(6, seed=11, always=ALWAYS)
    run_sparse(layer, Adam(0.01, grad_clip=0.0), steps)
    W_dense = run_dense(W0, Adam(0.05, grad_clip=0.0), steps)
    assert np.allclose(layer.get_param("W")[:6], W_dense[:6], rtol=1e-5, atol=1e-5)


def test_weight_decay_leaves_the_table_and_decays_the_potentials():
    """Decoupled L2 (spaCy's default) is not applied to the hashed table, touched
    or not, while the dense CRF parameters get thinc's decay with their scale."""
    from spacy_crf.models.sparse_table import step_model
    from thinc.api import chain
    from spacy_crf.models.potentials import crf_potentials

    layer = make_layer()
    potentials = crf_potentials(nO=N_LABELS)
    potentials.initialize()
    potentials.attrs[LR_SCALE] = 2.0
    transitions = np.full((N_LABELS, N_LABELS), 1.0, dtype="float32")
    potentials.set_param("transitions", transitions)
    model = chain(layer, potentials)
    W = layer.get_param("W")
    W[:] = 1.0
    ids, d_scores = batches(1, seed=3)[0]
    _, backprop = layer(ids, is_train=True)
    backprop(d_scores)
    potentials.set_grad("transitions", np.zeros_like(transitions))
    step_model(model, SGD(0.1, L2=0.5, L2_is_weight_decay=True, grad_clip=0.0))
    touched = np.unique((ids % np.uint64(N_BUCKETS)).astype(np.int64))
    untouched = np.setdiff1d(np.arange(N_BUCKETS), touched)
    expected = 1.0 - 0.1 * dense_grad(ids, d_scores)[touched]
    assert np.allclose(W[touched], expected, rtol=1e-6)  # the step, no decay
    assert np.all(W[untouched] == 1.0)
    # thinc's decoupled decay with lr_scale 2: w -= 2 * 0.1 * 0.5 * w
    assert np.allclose(potentials.get_param("transitions"), 0.9)


def test_adam_moments_never_outgrow_the_table():
    """Grown by half again past the rows touched, the moments reserved up to
    1.34 dense copies of a wide table on a long run (1,024 rows at least)."""
    layer = make_layer()
    opt = Adam(0.05, grad_clip=0.0)
    run_sparse(layer, opt, batches(12, seed=5, always=ALWAYS))
    key = (layer.id, "W")
    assert opt.mom1[key].size <= N_BUCKETS * N_LABELS
    assert opt.mom2[key].size <= N_BUCKETS * N_LABELS
