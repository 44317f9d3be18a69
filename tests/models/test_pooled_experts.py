"""The pool of experts (``models/pooled_experts.py``) and NeuralCRF.v3.

* the pool's scores are the weighted sum of its experts', which it carries;
* backprop gives each expert its weight of the pooled gradient plus its own
  (finite differences through the whole model);
* ``each_expert``: the loss of a pool is the sum of its experts' own losses,
  and the feature expert of NeuralCRF.v3 learns exactly as a FeatureCRF alone;
* decoding reads the pool; span targets constrain every expert;
* bad weights and structures that cannot train a pool are clear errors.
"""

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc, Span
from spacy.training import Example
from thinc.api import Adam

from finite_differences import central_difference
from spacy_crf import inference, losses
from spacy_crf.models.architectures import FeatureCRF, NeuralCRF as NeuralCRF_v3
from spacy_crf.structures import get_structure
from spacy_crf.models.pooled_experts import is_pooled, pooled_experts, weighted_sum
from spacy_crf.structures.chain import ChainLayout
from conftest import FROM_INITIALIZE, chain, train

L = 3
WORDS = [["the", "cat", "sat"], ["a", "dog", "ran", "off", "fast"], ["ok"]]
TEMPLATES = ["NORM[-1..1]", "SUFFIX2"]
TOK2VEC = {"@architectures": "spacy.HashEmbedCNN.v2", "width": 16, "depth": 1,
           "embed_size": 100, "window_size": 1, "maxout_pieces": 2,
           "subword_features": False, "pretrained_vectors": None}
NER = [("Alice met Bob in Paris .", [(0, 1, "PER"), (2, 3, "PER"), (4, 5, "LOC")]),
       ("New York is big .", [(0, 2, "LOC")]),
       ("Carol Smith visited New York City yesterday .", [(0, 2, "PER"), (3, 6, "LOC")]),
       ("the cat sat on the mat .", [])]


def random_expert(seed: int, docs):
    """A FeatureCRF with random weights (so the experts differ)."""
    model = FeatureCRF(TEMPLATES, n_buckets=64, nO=L)
    get_structure("chain").prepare_model(model, "tag")  # the chain's parameters
    model.initialize(X=docs)
    rng = np.random.default_rng(seed)
    for node in model.walk():
        for name in node.param_names:
            if node.has_param(name):
                node.set_param(name, rng.normal(size=node.get_param(name).shape).astype("f"))
    return model


@pytest.fixture
def docs():
    vocab = spacy.blank("en").vocab
    return [Doc(vocab, words=words) for words in WORDS]


@pytest.fixture
def layout(docs):
    return ChainLayout(np.array([len(d) for d in docs]))


def gold_of(layout):
    return np.random.default_rng(7).integers(0, L, layout.n_tokens)


def potentials_of(expert):
    return next(node for node in expert.walk() if node.name == "crf_potentials")


def test_the_pool_is_the_weighted_sum_of_its_experts_and_carries_them(docs):
    a, b = random_expert(0, docs), random_expert(1, docs)
    pool = pooled_experts([a, b], [0.3, 0.7])
    scores = pool.predict(docs)
    alone = a.predict(docs), b.predict(docs)
    for name in ("emissions", "transitions", "start", "end"):
        expected = 0.3 * getattr(alone[0], name) + 0.7 * getattr(alone[1], name)
        np.testing.assert_allclose(getattr(scores, name), expected, rtol=1e-6)
    np.testing.assert_array_equal(scores.experts[1].transitions, alone[1].transitions)
    # only the chain's parameters: those its structure declared
    assert sorted(scores.params) == ["end", "start", "transitions"]
    assert scores.pair is None and scores.triples is None
    assert is_pooled(pool) and not is_pooled(a)


def test_backprop_of_the_pooled_likelihood_matches_finite_differences(docs, layout):
    """A gradient of the pooled scores reaches each expert times its weight."""
    a, b = random_expert(0, docs), random_expert(1, docs)
    pool = pooled_experts([a, b], [0.25, 0.75])
    gold = gold_of(layout)

    def loss():
        return float(inference.nll_and_gradient(pool.predict(docs), layout, gold)[0].sum())

    scores, backprop = pool.begin_update(docs)
    backprop(inference.nll_and_gradient(scores, layout, gold)[1])
    for expert in (a, b):
        node = potentials_of(expert)
        for name in ("transitions", "start"):
            param = node.get_param(name).astype(np.float64)
            node.set_param(name, param)
            expected = central_difference(loss, param, eps=1e-5)
            np.testing.assert_allclose(node.get_grad(name), expected, atol=1e-4)


def test_each_expert_is_trained_on_its_own_likelihood(docs, layout):
    """each_expert: loss and gradient of the sum of the experts' own nll."""
    a, b = random_expert(0, docs), random_expert(1, docs)
    pool = pooled_experts([a, b], [0.5, 0.5])
    gold = gold_of(layout)
    nll = losses.get_loss("nll")

    def own_losses():
        return sum(float(nll(expert.predict(docs), layout, gold)[0].sum()) for expert in (a, b))

    scores, backprop = pool.begin_update(docs)
    loss, gradient = losses.each_expert(nll, scores, layout, gold)
    assert float(loss.sum()) == pytest.approx(own_losses())
    assert not np.any(gradient.emissions) and len(gradient.experts) == 2
    backprop(gradient)
    for expert in (a, b):
        node = potentials_of(expert)
        param = node.get_param("transitions").astype(np.float64)
        node.set_param("transitions", param)
        expected = central_difference(own_losses, param, eps=1e-5)
        np.testing.assert_allclose(node.get_grad("transitions"), expected, atol=1e-4)


@pytest.mark.parametrize("loss", ["perceptron", "hinge"])
def test_every_loss_sums_over_the_experts(docs, layout, loss):
    a, b = random_expert(0, docs), random_expert(1, docs)
    scores = pooled_experts([a, b], [0.5, 0.5]).predict(docs)
    gold = gold_of(layout)
    function = losses.get_loss(loss)
    got, gradient = losses.each_expert(function, scores, layout, gold)
    expected = [function(expert, layout, gold) for expert in scores.experts]
    np.testing.assert_allclose(got, expected[0][0] + expected[1][0])
    np.testing.assert_allclose(gradient.experts[1].transitions, expected[1][1].transitions)


def neural_nlp(target="pos", weight=0.2, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": target, **config, "model": {
        "@architectures": "spacy-crf.NeuralCRF.v3", "tok2vec": TOK2VEC,
        "templates": TEMPLATES, "n_buckets": 256, "neural_weight": weight}})
    return nlp


def pos_examples(nlp):
    tags = [["DET", "NOUN", "VERB"], ["DET", "NOUN", "VERB", "ADP", "ADV"], ["INTJ"]]
    return [Example.from_dict(Doc(nlp.vocab, words=w), {"pos": t}) for w, t in zip(WORDS, tags)]


@pytest.mark.parametrize("drop", [0.0, 0.3])
def test_the_feature_expert_learns_exactly_as_a_feature_crf_alone(drop):
    """No expert trains through the other: NeuralCRF.v3's feature expert takes
    the same steps as FeatureCRF.v2 with the same templates and optimizer, with
    dropout too (the tok2vec's dropout draws do not move the features' masks)."""
    pooled = neural_nlp()
    alone = spacy.blank("en")
    alone.add_pipe("crf_tagger", config={"target": "pos", "model": {
        "@architectures": "spacy-crf.FeatureCRF.v2", "templates": TEMPLATES, "n_buckets": 256,
        # as NeuralCRF.v3's own defaults for its feature expert
        "cluster_templates": None, "boost_updates": 0, "l1_penalty": 0.0}})
    trained = []
    for nlp in (pooled, alone):
        examples = pos_examples(nlp)
        optimizer = nlp.initialize(lambda: examples)  # spaCy's default optimizer
        for _ in range(5):
            nlp.update(examples, sgd=optimizer, drop=drop)
        trained.append(next(node for node in nlp.get_pipe("crf_tagger").model.walk()
                            if node.name == "feature_crf"))
    for name in ("transitions", "start", "end"):
        np.testing.assert_allclose(potentials_of(trained[0]).get_param(name),
                                   potentials_of(trained[1]).get_param(name), rtol=1e-5)
    tables = [next(n for n in model.walk() if n.name == "crf_hashed_linear") for model in trained]
    assert np.any(tables[0].get_param("W"))
    np.testing.assert_allclose(tables[0].get_param("W"), tables[1].get_param("W"), rtol=1e-5,
                               atol=1e-7)


def test_the_component_decodes_the_pool_and_round_trips(tmp_path):
    nlp = neural_nlp(weight=0.4, store_confidence=True)
    examples = pos_examples(nlp)
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(30):
        nlp.update(examples, sgd=Adam(0.01) if optimizer is None else optimizer)
    crf = nlp.get_pipe("crf_tagger")
    docs = [nlp.make_doc(" ".join(w)) for w in WORDS]
    scores = crf.model.predict(docs)
    pooled = weighted_sum([e.emissions for e in scores.experts], [0.6, 0.4])
    np.testing.assert_allclose(scores.emissions, pooled, rtol=1e-6)
    labels, _ = inference.viterbi(scores, ChainLayout(np.array([len(d) for d in docs])))
    assert crf.predict(docs).label_ids.tolist() == labels.tolist()
    before = [[(t.pos_, t._.crf_confidence) for t in doc] for doc in nlp.pipe(["the dog sat"])]
    nlp.to_disk(tmp_path / "nlp")
    loaded = spacy.load(tmp_path / "nlp")
    assert [[(t.pos_, t._.crf_confidence) for t in doc]
            for doc in loaded.pipe(["the dog sat"])] == before
    assert is_pooled(loaded.get_pipe("crf_tagger").model)


def test_a_span_target_constrains_every_expert_and_predicts_well_formed_spans():
    nlp = neural_nlp("ents", scheme="BILUO")
    examples = []
    for text, ents in NER:
        ref = Doc(nlp.vocab, words=text.split())
        ref.set_ents([Span(ref, a, b, label=k) for a, b, k in ents], default="outside")
        examples.append(Example(Doc(nlp.vocab, words=text.split()), ref))
    train(nlp, examples, 20, optimizer=FROM_INITIALIZE)
    crf = nlp.get_pipe("crf_tagger")
    scores = crf.target.constrain(crf.model.predict([eg.predicted for eg in examples]))
    allowed, _, _ = crf.target.constraints()
    for expert in scores.experts:
        assert np.all(np.isneginf(expert.transitions[~allowed]))
    for doc in nlp.pipe([text for text, _ in NER] + ["Bob Smith in New York ."]):
        tags = [t.ent_iob_ for t in doc]
        assert all(not (tag == "I" and (i == 0 or tags[i - 1] == "O")) for i, tag in enumerate(tags))


@pytest.mark.parametrize("weight", [0, 1, 1.5, -0.2, True, "0.2"])
def test_neural_weight_outside_zero_one_is_a_clear_error(weight):
    with pytest.raises(ValueError, match="E120.*neural_weight"):
        NeuralCRF_v3(spacy.registry.resolve({"t": TOK2VEC})["t"], templates=TEMPLATES,
                     neural_weight=weight)


def test_without_templates_v2_is_the_tok2vec_crf_alone():
    model = NeuralCRF_v3(spacy.registry.resolve({"t": TOK2VEC})["t"], neural_weight=5)
    assert not is_pooled(model) and model.name == "neural_crf"


@pytest.mark.parametrize("weights", [[1.0], [0.5, 0.6], [0.0, 1.0], [0.5]])
def test_bad_pool_weights_are_a_clear_error(weights, docs):
    experts = [random_expert(0, docs), random_expert(1, docs)]
    with pytest.raises(ValueError, match="E118"):
        pooled_experts(experts, weights)


def test_experts_scoring_different_things_are_a_clear_error():
    with pytest.raises(ValueError, match="E119"):
        weighted_sum([np.ones(2), None], [0.5, 0.5])
    assert weighted_sum([None, None], [0.5, 0.5]) is None


@pytest.mark.parametrize("structure, error", [("semi_markov", "E121.*semi_markov"),
                                              ("chain_tree", "E115")])
def test_structures_that_cannot_train_a_pool_say_so(structure, error):
    with pytest.raises(ValueError, match=error):
        neural_nlp("ents" if structure == "semi_markov" else "pos", structure=structure)


@pytest.mark.parametrize("config", [{"structure": "tree"}, {"structure": chain(2)}])
def test_a_pool_trains_on_trees_and_at_order_two(config, toy):
    nlp = neural_nlp(**config)
    examples = []
    for eg, heads in zip(pos_examples(nlp), [[1, 2, 2], [1, 2, 2, 2, 2], [0]]):
        words, deps = [t.text for t in eg.reference], ["dep"] * len(heads)
        # the parse on both sides: the tree reads the predicted doc's
        ref = Doc(nlp.vocab, words=words, pos=[t.pos_ for t in eg.reference], heads=heads, deps=deps)
        examples.append(Example(Doc(nlp.vocab, words=words, heads=heads, deps=deps), ref))
    losses = toy.train(nlp, examples, n_iter=15, learn_rate=0.01)
    assert losses[-1] < losses[0]
    crf = nlp.get_pipe("crf_tagger")
    assert all(t.pos_ for t in crf(examples[0].predicted))


def test_the_feature_expert_defaults_to_the_factory_model():
    """Same templates, same table: what v2 adds to the factory default is the tok2vec."""
    from spacy_crf.models.hashed_linear import AUTO_ROWS, table_rows
    from spacy_crf.pipeline.factory import DEFAULT_MODEL

    nlp = spacy.blank("en")
    crf = nlp.add_pipe("crf_tagger", config={"model": {
        "@architectures": "spacy-crf.NeuralCRF.v3", "tok2vec": TOK2VEC,
        "templates": list(DEFAULT_MODEL["templates"])}})
    table = next(n for n in crf.model.walk() if n.name == "crf_hashed_linear")
    # null in both: the rows follow the table's width at initialize
    assert DEFAULT_MODEL["n_buckets"] is None and table.attrs[AUTO_ROWS]
    crf.add_label("NOUN")
    nlp.initialize()
    assert table.get_dim("nV") == table_rows(1) == 2**20
