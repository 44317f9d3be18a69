"""The training losses beside the likelihood (``spacy_crf.losses``).

1. feature counts of a labelling against plain loops and the path-score kernels;
2. hinge loss and subgradient, perceptron loss and gradient, against brute-force
   enumeration of every labelling of tiny random chains and forests (full and
   partial gold, forbidden moves), and against finite differences;
3. the component: ``loss`` setting, E040, serialization, the perceptron
   separating the toy corpus, hinge on span targets, the shipped configs under
   ``spacy debug config`` and ``spacy train``.
"""

import pickle

import numpy as np
import pytest
import spacy
import srsly
from thinc.api import SGD, Adam

from spacy_crf import inference, losses
from spacy_crf._kernels import tree
from spacy_crf.structures import ChainLayout, TreeLayout
from spacy_crf.models.potentials import CRFScores
from spacy_crf.pipeline.crf_tagger import CRFTagger

from kernels.oracle import all_labellings, labelling_score, path_score  # noqa: E402
from kernels.test_tree_kernels import random_problem as random_forest_problem  # noqa: E402
from conftest import TOY_NER, convert_ewt_sample, ner_examples, spacy_train, train  # noqa: E402

from conftest import ROOT
CONFIGS = ROOT / "configs"
NEG_INF = -np.inf
PARAMS = ("emissions", "transitions", "start", "end", "pair", "root")
SEEDS = range(12)


# --------------------------------------------------------------------------- problems


def chain_problem(rng, L, ninf_frac=0.0):
    """Random chain scores; some sequences empty; a fraction of forbidden moves."""
    lengths = np.asarray([int(x) for x in rng.integers(0, 5, size=3)] + [1], dtype=np.int64)
    N = int(lengths.sum())
    T = rng.normal(size=(L, L))
    start, end = rng.normal(size=L), rng.normal(size=L)
    if ninf_frac:
        T[rng.random((L, L)) < ninf_frac] = NEG_INF
        np.fill_diagonal(T, 0.0)  # keep every sequence feasible: repeating a label is allowed
        start[1:][rng.random(L - 1) < ninf_frac] = NEG_INF
        end[1:][rng.random(L - 1) < ninf_frac] = NEG_INF
    scores = CRFScores.of(rng.normal(size=(N, L)), transitions=T, start=start, end=end,
                          pair=np.zeros((1, L, L)), root=np.zeros(L))
    return scores, ChainLayout(lengths)


def tree_problem(rng, L, R=2):
    p = random_forest_problem(rng, [int(x) for x in rng.integers(1, 5, size=2)] + [1], L, R)
    order = np.zeros(len(p["heads"]), dtype=np.int64)
    assert tree.check_forest(p["heads"], p["lengths"], order) == 0
    relations = np.where(p["heads"] < 0, 0, p["rel"])
    scores = CRFScores.of(p["e"], transitions=np.zeros((L, L)), start=np.zeros(L), end=np.zeros(L),
                          pair=p["pair"], root=p["root"])
    return scores, TreeLayout(p["lengths"], p["heads"], order, relations)


def problem(kind, seed, L=3, ninf_frac=0.0):
    rng = np.random.default_rng(seed)
    return chain_problem(rng, L, ninf_frac) if kind == "chain" else tree_problem(rng, L)


def random_gold(rng, scores, structure, partial):
    """Gold labels that some labelling allowed by the scores agrees with."""
    N, L = scores.emissions.shape
    # a random feasible labelling: Viterbi under random scores with the same -inf entries
    noisy = CRFScores.of(rng.normal(size=(N, L)),
                         **{name: np.where(np.isfinite(a), rng.normal(size=np.shape(a)), a)
                            for name, a in scores.named().items()})
    gold, _ = inference.viterbi(noisy, structure)
    if partial:
        gold[rng.random(N) < 0.4] = -1
    return gold


# --------------------------------------------------------------------------- oracle


def loop_counts(scores, structure, labels, rows):
    """Feature counts of ``labels`` on ``rows`` (one sequence), with plain loops."""
    N, L = scores.emissions.shape
    c = {name: np.zeros(np.shape(getattr(scores, name))) for name in PARAMS}
    for t in rows:
        c["emissions"][t, labels[t]] += 1
        if (structure.structure_name == "tree"):
            h = structure.heads[t]
            if h < 0:
                c["root"][labels[t]] += 1
            else:
                c["pair"][structure.relations[t], labels[t], labels[h]] += 1
        elif t == rows[0]:
            c["start"][labels[t]] += 1
        else:
            c["transitions"][labels[t - 1], labels[t]] += 1
    if not (structure.structure_name == "tree") and len(rows):
        c["end"][labels[rows[-1]]] += 1
    return c


def dot(scores, counts):
    """Score of a labelling from its counts (``-inf`` entries count only where used)."""
    total = 0.0
    for name in PARAMS:
        used = counts[name] != 0
        total += float(np.sum(np.asarray(getattr(scores, name))[used] * counts[name][used]))
    return total


def brute_force(scores, structure, gold, cost):
    """Per sequence: best augmented labelling (score + cost * Hamming) and best
    gold-consistent labelling, by enumeration; their scores, counts and margins."""
    N, L = scores.emissions.shape
    out = []
    offset = 0
    for n in structure.lengths:
        rows = np.arange(offset, offset + n)
        offset += n
        labels = np.zeros(N, dtype=np.int64)
        best = {"aug": (NEG_INF, None), "gold": (NEG_INF, None)}
        second = {"aug": NEG_INF, "gold": NEG_INF}
        for y in all_labellings(int(n), L) if n else ():
            labels[rows] = y
            counts = loop_counts(scores, structure, labels, rows)
            s = dot(scores, counts)
            known = gold[rows] >= 0
            wrong = int(np.sum(y[known] != gold[rows][known]))
            for key, value in (("aug", s + cost * wrong), ("gold", s if not wrong else NEG_INF)):
                if value > best[key][0]:
                    second[key] = best[key][0]
                    best[key] = (value, counts)
                elif value > second[key]:
                    second[key] = value
        if n == 0:
            zero = {name: np.zeros(np.shape(getattr(scores, name))) for name in PARAMS}
            best = {"aug": (0.0, zero), "gold": (0.0, zero)}
        out.append(dict(aug=best["aug"][0], gold=best["gold"][0], aug_counts=best["aug"][1],
                        gold_counts=best["gold"][1],
                        margin=min(best["aug"][0] - second["aug"], best["gold"][0] - second["gold"])))
    return out


def expected_gradient(scores, brute, update):
    total = {name: np.zeros(np.shape(getattr(scores, name))) for name in PARAMS}
    for seq, on in zip(brute, update):
        if on:
            for name in PARAMS:
                total[name] += seq["aug_counts"][name] - seq["gold_counts"][name]
    return total


def assert_gradient(gradient, expected, structure):
    used = ("emissions", "pair", "root") if (structure.structure_name == "tree") else (
        "emissions", "transitions", "start", "end")
    for name in PARAMS:
        got = getattr(gradient, name)
        if name not in used:
            assert got is None, name
            continue
        np.testing.assert_allclose(got, expected[name], atol=1e-12, err_msg=name)


# --------------------------------------------------------------------------- 1. counts


@pytest.mark.parametrize("kind", ["chain", "tree"])
@pytest.mark.parametrize("seed", SEEDS)
def test_labelling_counts_match_loops_and_path_score(kind, seed):
    scores, structure = problem(kind, seed, L=4)
    rng = np.random.default_rng(100 + seed)
    N, L = scores.emissions.shape
    labels = rng.integers(0, L, size=N)
    weights = rng.normal(size=structure.lengths.shape[0])
    out = losses.zero_gradient(scores, structure)
    losses.labelling_counts(structure, labels, weights, out)
    expected = {name: np.zeros(np.shape(getattr(scores, name))) for name in PARAMS}
    path = np.zeros(structure.lengths.shape[0])
    if (structure.structure_name == "tree"):
        labelling_score(scores.emissions, structure.lengths, structure.heads, scores.pair,
                        structure.relations, scores.root, labels, path)
    else:
        path_score(scores.emissions, structure.lengths, scores.transitions, scores.start,
                   scores.end, labels, path)
    offset = 0
    for s, n in enumerate(structure.lengths):
        counts = loop_counts(scores, structure, labels, np.arange(offset, offset + n))
        # the counts are the gradient of the labelling's score: counts . params = score
        assert dot(scores, counts) == pytest.approx(path[s], abs=1e-12)
        for name in PARAMS:
            expected[name] += weights[s] * counts[name]
        offset += n
    assert_gradient(out, expected, structure)


# --------------------------------------------------------------------------- 2. against brute force


@pytest.mark.parametrize("loss", ["hinge", "perceptron"])
@pytest.mark.parametrize("kind,ninf", [("chain", 0.0), ("chain", 0.4), ("tree", 0.0)])
@pytest.mark.parametrize("partial", [False, True], ids=["full", "partial"])
@pytest.mark.parametrize("seed", SEEDS)
def test_margin_losses_match_brute_force(loss, kind, ninf, partial, seed):
    """hinge: max(0, max_y [s(y) + Hamming(y, gold)] - s(gold side)), subgradient zero
    where the loss is; perceptron: max_y s(y) - s(gold side), always updated. The gold
    side is the best labelling that agrees with the known gold labels."""
    scores, structure = problem(kind, seed, ninf_frac=ninf)
    gold = random_gold(np.random.default_rng(200 + seed), scores, structure, partial)
    got, gradient = losses.get_loss(loss)(scores, structure, gold)
    brute = brute_force(scores, structure, gold, cost=1.0 if loss == "hinge" else 0.0)
    expected = np.asarray([max(0.0, b["aug"] - b["gold"]) for b in brute])
    np.testing.assert_allclose(got, expected, atol=1e-10)
    assert np.all(got >= 0) and np.all(np.isfinite(got))
    update = expected > 0 if loss == "hinge" else np.ones(len(brute), dtype=bool)
    assert_gradient(gradient, expected_gradient(scores, brute, update), structure)


@pytest.mark.parametrize("kind", ["chain", "tree"])
@pytest.mark.parametrize("seed", SEEDS)
def test_perceptron_loss_is_zero_exactly_when_viterbi_is_gold(kind, seed):
    scores, structure = problem(kind, seed)
    rng = np.random.default_rng(400 + seed)
    predicted, _ = inference.viterbi(scores, structure)
    gold = predicted.copy()
    # corrupt the gold labels of some sequences
    seq_of = np.repeat(np.arange(structure.lengths.shape[0]), structure.lengths)
    corrupt = rng.random(structure.lengths.shape[0]) < 0.5
    flip = corrupt[seq_of] & (rng.random(gold.shape[0]) < 0.7)
    gold[flip] = (gold[flip] + rng.integers(1, 3, size=int(flip.sum()))) % 3
    loss, gradient = losses.perceptron(scores, structure, gold)
    right = np.asarray([np.array_equal(predicted[seq_of == s], gold[seq_of == s])
                        for s in range(structure.lengths.shape[0])])
    assert np.array_equal(loss == 0, right)
    assert np.all(loss[~right] > 0)
    if right.all():
        assert not np.any(gradient.emissions)


@pytest.mark.parametrize("kind", ["chain", "tree"])
@pytest.mark.parametrize("partial", [False, True], ids=["full", "partial"])
@pytest.mark.parametrize("seed", range(6))
def test_hinge_subgradient_finite_differences(kind, partial, seed):
    """Where every argmax is unique the hinge is linear nearby (0 where the
    augmented argmax is the gold side), so its subgradient is its gradient."""
    scores, structure = problem(kind, seed)
    gold = random_gold(np.random.default_rng(500 + seed), scores, structure, partial)
    brute = brute_force(scores, structure, gold, cost=1.0)
    loss, gradient = losses.hinge(scores, structure, gold)
    if min(b["margin"] for b in brute) < 1e-3:
        pytest.skip("argmax not unique enough: not differentiable here")
    assert np.any(loss > 0)
    eps = 1e-6
    used = ("emissions", "pair", "root") if kind == "tree" else (
        "emissions", "transitions", "start", "end")
    for name in used:
        values = getattr(scores, name)
        numeric = np.zeros_like(values)
        for idx in np.ndindex(values.shape):
            old = values[idx]
            values[idx] = old + eps
            up = losses.hinge(scores, structure, gold)[0].sum()
            values[idx] = old - eps
            down = losses.hinge(scores, structure, gold)[0].sum()
            values[idx] = old
            numeric[idx] = (up - down) / (2 * eps)
        np.testing.assert_allclose(getattr(gradient, name), numeric, atol=1e-6, err_msg=name)


def test_hinge_is_zero_past_the_margin_and_keeps_the_dtype():
    """Gold ahead of every other labelling by more than its Hamming cost: no loss, no update."""
    scores, structure = problem("chain", 0)
    gold = np.random.default_rng(7).integers(0, 3, size=scores.emissions.shape[0])
    scores.emissions[np.arange(gold.shape[0]), gold] += 10.0
    f32 = CRFScores.of(scores.emissions.astype(np.float32), transitions=scores.transitions.astype(np.float32),
                       start=scores.start.astype(np.float32), end=scores.end.astype(np.float32),
                       pair=scores.pair, root=scores.root)
    loss, gradient = losses.hinge(f32, structure, gold)
    assert np.all(loss == 0)
    assert gradient.emissions.dtype == np.float32 and gradient.transitions.dtype == np.float32
    assert not any(np.any(getattr(gradient, name)) for name in PARAMS[:4])
    # back inside the margin: the loss is positive again
    scores.emissions[np.arange(gold.shape[0]), gold] -= 10.0
    assert losses.hinge(scores, structure, gold)[0].sum() > 0
    # exactly at the margin: cost-augmented Viterbi ties and picks label 0 over the gold
    # label 2 (ties go to the lowest id), yet the loss is 0, so nothing is updated
    N, L = scores.emissions.shape
    gold = np.full(N, 2)
    tied = CRFScores.of(np.eye(L)[gold], transitions=np.zeros((L, L)), start=np.zeros(L), end=np.zeros(L),
                        pair=None, root=None)
    assert inference.viterbi(CRFScores.of(tied.emissions + 1 - np.eye(L)[gold],
                                          **interactions(tied)),
                             structure)[0][0] == 0
    loss, gradient = losses.hinge(tied, structure, gold)
    assert np.all(loss == 0)
    assert not any(np.any(getattr(gradient, name)) for name in PARAMS[:4])
    # the perceptron, in contrast, updates on a tie (mistake-driven)
    loss, gradient = losses.perceptron(CRFScores.of(np.zeros((N, L)), **interactions(tied)),
                                           structure, gold)
    assert np.all(loss == 0) and np.any(gradient.emissions)


def interactions(scores):
    """The label-interaction scores of ``scores``, to pair with other emissions."""
    return scores.named()


def test_registry_and_unknown_loss():
    assert list(losses.registered_losses())[:3] == ["nll", "perceptron", "hinge"]
    assert losses.get_loss("nll").function is inference.nll_and_gradient
    # the batch trainer minimises the likelihood only, as each loss says
    assert [name for name, loss in losses.registered_losses().items()
            if loss.supports_batch_fit] == ["nll"]
    with pytest.raises(ValueError, match=r"\[CRF-E040\].*'svm'.*'nll', 'perceptron', 'hinge'"):
        losses.get_loss("svm")


# --------------------------------------------------------------------------- 3. the component


@pytest.mark.parametrize("loss", ["svm", "", "NLL"])
def test_component_rejects_unknown_loss(toy, loss):
    with pytest.raises(ValueError, match=r"\[CRF-E040\]"):
        toy.make_nlp(loss=loss)
    with pytest.raises(ValueError, match=r"\[CRF-E040\]"):
        CRFTagger(spacy.blank("en").vocab, None, loss=None)


def test_component_uses_the_configured_loss(toy):
    """get_loss of each setting equals the loss function's own of the same scores."""
    for loss in ("nll", "perceptron", "hinge"):
        nlp = toy.make_nlp(loss=loss)
        examples = toy.toy_examples(nlp)
        toy.train(nlp, examples, n_iter=2)
        pipe = nlp.get_pipe("crf_tagger")
        scores = pipe.model.predict([eg.predicted for eg in examples])
        got, _ = pipe.get_loss(examples, scores)
        gold = np.concatenate([pipe.target.gold_ids(eg) for eg in examples])
        structure = pipe.batch_layout([eg.predicted for eg in examples])
        expected = losses.get_loss(loss)(scores, structure, gold)[0].sum()
        assert got == pytest.approx(expected)
    assert pipe.cfg["loss"] == "hinge"


def test_perceptron_separates_the_toy_corpus(toy):
    """Online perceptron updates (one example per step, SGD with rate 1) until an
    epoch makes no mistake: the toy corpus is separable by its features."""
    nlp = toy.make_nlp(loss="perceptron")
    examples = toy.toy_examples(nlp)
    nlp.initialize(lambda: examples)
    optimizer = SGD(1.0, L2=0.0, grad_clip=0.0, use_averages=True)
    for epoch in range(20):
        losses = {}
        for eg in examples:
            nlp.update([eg], sgd=optimizer, losses=losses)
        pipe = nlp.get_pipe("crf_tagger")
        scores = pipe.model.predict([eg.predicted for eg in examples])
        if pipe.get_loss(examples, scores)[0] == 0:
            break
    assert epoch < 19
    docs = list(nlp.pipe([eg.predicted.text for eg in examples]))
    assert [toy.doc_labels(d) for d in docs] == [[t.tag_ for t in eg.reference] for eg in examples]
    # the averaged weights (what spacy train evaluates and saves) separate it too
    with nlp.use_params(optimizer.averages):
        docs = list(nlp.pipe([eg.predicted.text for eg in examples]))
    assert [toy.doc_labels(d) for d in docs] == [[t.tag_ for t in eg.reference] for eg in examples]


@pytest.mark.parametrize("loss", ["perceptron", "hinge"])
def test_tree_structure_trains_with_margin_losses(loss):
    from structures.test_tree_component import TREE_TEXT, labels_of, parsed_doc, pos_examples, tree_model

    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos", "loss": loss, "model": tree_model(),
                                       "structure": {"@structures": "spacy-crf.Tree.v1",
                                                     "n_relations": 2}})
    examples = pos_examples(nlp)
    optimizer = SGD(0.1, L2=0.0, grad_clip=0.0, use_averages=False)
    history = train(nlp, examples, 15, optimizer=optimizer)
    # (the perceptron's first loss is 0: all scores tie at zero weights, yet it updates)
    assert history[-1] == 0 and (history[0] > 0 or loss == "perceptron")
    docs = [nlp(parsed_doc(nlp.vocab, line)) for line in TREE_TEXT]
    assert labels_of(docs) == [[t.pos_ for t in eg.reference] for eg in examples]


@pytest.mark.parametrize("scheme", ["BIO", "BILUO"])
def test_hinge_on_span_targets_gives_well_formed_spans(scheme):
    from targets.test_spans import TEXTS, make_nlp, well_formed

    nlp = make_nlp(scheme=scheme, loss="hinge")
    examples = ner_examples(nlp)
    nlp.initialize(lambda: examples)
    pipe = nlp.get_pipe("crf_tagger")
    allowed_t, allowed_start, allowed_end = pipe.target.constraints()
    optimizer = Adam(0.1)
    for _ in range(15):
        docs = [eg.predicted for eg in examples]
        scores = pipe.target.constrain(pipe.model.predict(docs))
        # cost-augmented decoding never takes a forbidden move: no count lands on one
        _, gradient = losses.hinge(scores, pipe.batch_layout(docs),
                                       np.concatenate([pipe.target.gold_ids(eg) for eg in examples]))
        assert not np.any(gradient.transitions[~allowed_t])
        assert not np.any(gradient.start[~allowed_start]) and not np.any(gradient.end[~allowed_end])
        nlp.update(examples, sgd=optimizer)
    assert nlp.evaluate(examples)["ents_f"] == 1.0
    for doc in nlp.pipe(TEXTS + [t for t, _ in TOY_NER]):
        prediction = pipe.predict([doc])
        assert well_formed([pipe.tags[i] for i in prediction.label_ids], scheme)


def test_loss_setting_survives_disk_bytes_and_pickle(toy, tmp_path):
    nlp = toy.make_nlp(loss="hinge")
    examples = toy.toy_examples(nlp)
    toy.train(nlp, examples, n_iter=3)
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("crf_tagger").cfg["loss"] == "hinge"
    assert loaded.config["components"]["crf_tagger"]["loss"] == "hinge"
    # the loss is the loading component's own, as store_confidence is: it does
    # not change what the weights mean, and spacy.load's config overrides it
    for own in ("hinge", "perceptron"):
        fresh = toy.make_nlp(loss=own)
        fresh.get_pipe("crf_tagger").from_bytes(nlp.get_pipe("crf_tagger").to_bytes())
        assert fresh.get_pipe("crf_tagger").cfg["loss"] == own
    override = {"components": {"crf_tagger": {"loss": "perceptron"}}}
    assert spacy.load(tmp_path / "pipeline", config=override).get_pipe(
        "crf_tagger").cfg["loss"] == "perceptron"
    clone = pickle.loads(pickle.dumps(nlp.get_pipe("crf_tagger")))
    assert clone.cfg["loss"] == "hinge"
    # and a pipeline saved before the setting existed trains with the likelihood
    cfg = srsly.read_json(tmp_path / "pipeline" / "crf_tagger" / "cfg")
    del cfg["loss"]
    srsly.write_json(tmp_path / "pipeline" / "crf_tagger" / "cfg", cfg)
    config = (tmp_path / "pipeline" / "config.cfg").read_text(encoding="utf8")
    assert config.count('loss = "hinge"\n') == 1
    (tmp_path / "pipeline" / "config.cfg").write_text(config.replace('loss = "hinge"\n', ""),
                                                       encoding="utf8")
    old = spacy.load(tmp_path / "pipeline").get_pipe("crf_tagger")
    assert old.cfg["loss"] == "nll"
    docs = [eg.predicted for eg in examples]
    gold = np.concatenate([old.target.gold_ids(eg) for eg in examples])
    nll = inference.nll_and_gradient(old.model.predict(docs), old.batch_layout(docs), gold)[0]
    assert old.get_loss(examples, old.model.predict(docs))[0] == pytest.approx(nll.sum())


# --------------------------------------------------------------------------- configs, spacy train


@pytest.fixture(scope="module")
def ewt_corpus(tmp_path_factory):
    work = tmp_path_factory.mktemp("ewt_objectives")
    convert_ewt_sample(work, ("train", "dev"))
    return work / "corpus"


@pytest.mark.parametrize("loss", ["perceptron", "hinge"])
def test_shipped_config_trains_end_to_end(ewt_corpus, loss, capsys):
    from spacy.cli.debug_config import debug_config

    config = CONFIGS / f"ewt_upos_{loss}.cfg"
    debug_config(config, overrides={})  # spacy debug config, in process
    assert "Config is valid" in capsys.readouterr().out
    out = ewt_corpus / f"out_{loss}"
    spacy_train(config, out, "--paths.train", ewt_corpus / "en_ewt-train.spacy",
                "--paths.dev", ewt_corpus / "en_ewt-dev.spacy", "--training.max_epochs", "2",
                "--training.eval_frequency", "20",
                "--components.crf_tagger.model.n_buckets", "65536", cwd=ewt_corpus)
    nlp = spacy.load(out / "model-best")
    assert nlp.get_pipe("crf_tagger").cfg["loss"] == loss
    perf = srsly.read_json(out / "model-best" / "meta.json")["performance"]
    assert perf["pos_acc"] > 0.7
