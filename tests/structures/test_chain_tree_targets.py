"""``structure = "chain_tree"`` beyond ``pos``: the ``morph`` target (whose
factored model reads whole-label weights through a reference to its featurize
layer) and the ``lemma`` target (whose candidate mask covers both experts'
emissions, side by side). Each trains, predicts, and saves and loads."""

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from conftest import FROM_INITIALIZE, train
from spacy_crf.models.experts import copy_model, is_two_experts
from spacy_crf.models.whole_label import FEATURES_REF
from spacy_crf.models.whole_label import NAME as WHOLE_LABEL

# (word, POS, FEATS, lemma); the verb is the root, the noun its subject
WORDS = {
    "DET": [("the", "Definite=Def|PronType=Art", "the"), ("a", "Definite=Ind|PronType=Art", "a")],
    "NOUN": [("dogs", "Number=Plur", "dog"), ("cats", "Number=Plur", "cat")],
    "VERB": [("runs", "Number=Sing|Person=3", "run"), ("is", "Mood=Ind|Person=3", "be")],
    "ADV": [("fast", "", "fast"), ("here", "PronType=Dem", "here")],
}
HEADS = [1, 2, 2, 2]
DEPS = ["det", "nsubj", "ROOT", "advmod"]


def parsed_examples(vocab, n=24, seed=0):
    """DET NOUN VERB ADV sentences with a parse on both sides, gold POS,
    FEATS and lemmas on the reference."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        pos = ["DET", "NOUN", "VERB", "ADV"]
        rows = [WORDS[p][rng.integers(0, 2)] for p in pos]
        words = [w for w, _, _ in rows]
        reference = Doc(vocab, words=words, heads=HEADS, deps=DEPS, pos=pos,
                        morphs=[m for _, m, _ in rows], lemmas=[lemma for _, _, lemma in rows])
        out.append(Example(Doc(vocab, words=words, heads=HEADS, deps=DEPS), reference))
    return out


def chain_tree_nlp(target, model=None):
    nlp = spacy.blank("en")
    config = {"target": target, "structure": "chain_tree"}
    if model is not None:
        config["model"] = model
    nlp.add_pipe("crf_tagger", config=config)
    return nlp


def labels_of(doc, target):
    if target == "morph":
        return [(t.pos_, str(t.morph)) for t in doc]
    return [t.lemma_ for t in doc]


def gold_of(example, target):
    return labels_of(example.reference, target)


EXPERTS_BLOCK = {"@architectures": "spacy-crf.ChainTreeExperts.v1",
                 "crf": {"@architectures": "spacy-crf.FeatureCRF.v2",
                         "templates": ["NORM[-1..1]", "SUFFIX3"]}}


@pytest.mark.parametrize("target,model", [("morph", None), ("morph", EXPERTS_BLOCK),
                                          ("lemma", None)])
def test_chain_tree_trains_predicts_saves_and_loads(tmp_path, target, model):
    nlp = chain_tree_nlp(target, model)
    examples = parsed_examples(nlp.vocab)
    history = train(nlp, examples, 15, optimizer=FROM_INITIALIZE)
    assert np.isfinite(history).all() and history[-1] < history[0]
    docs = [eg.predicted.copy() for eg in examples[:8]]
    docs = list(nlp.get_pipe("crf_tagger").pipe(docs))
    assert [labels_of(d, target) for d in docs] == [gold_of(eg, target) for eg in examples[:8]]
    nlp.to_disk(tmp_path / "model")
    loaded = spacy.load(tmp_path / "model")
    again = list(loaded.get_pipe("crf_tagger").pipe([eg.predicted.copy() for eg in examples[:8]]))
    assert [labels_of(d, target) for d in again] == [labels_of(d, target) for d in docs]


@pytest.mark.parametrize("model", [None, EXPERTS_BLOCK])
def test_both_morph_experts_read_whole_labels_from_their_own_features(model):
    """The morph target's whole-label weights sit in each expert, each reading
    the featurize layer of its own expert (the chain's drops the parse)."""
    pipe = chain_tree_nlp("morph", model).get_pipe("crf_tagger")
    assert is_two_experts(pipe.model)
    for expert in pipe.model.layers:
        featurize = expert.layers[0]
        whole = [node for node in expert.walk() if node.name == WHOLE_LABEL]
        assert len(whole) == 1 and whole[0].get_ref(FEATURES_REF) is featurize


def test_copy_model_points_references_into_the_copy():
    pipe = chain_tree_nlp("morph").get_pipe("crf_tagger")
    tree_expert = pipe.model.layers[1]
    copied = copy_model(tree_expert)
    whole = [node for node in copied.walk() if node.name == WHOLE_LABEL][0]
    assert whole.get_ref(FEATURES_REF) is copied.layers[0]
    assert copied.layers[0] is not tree_expert.layers[0]


def test_the_lemma_candidates_mask_both_experts():
    """Trees that do not apply to a token's form are -inf in the chain's
    emissions and in the tree's, and never decoded even where both score them best."""
    nlp = chain_tree_nlp("lemma")
    examples = parsed_examples(nlp.vocab)
    nlp.initialize(lambda: examples)
    pipe = nlp.get_pipe("crf_tagger")
    docs = [eg.predicted for eg in examples[:4]]
    allowed = pipe.target.allowed_labels(docs)
    L = len(pipe.tags)
    assert not allowed.all()  # "is" -> "be" applies to "is" alone
    scores = pipe.model.predict(docs)
    assert scores.emissions.shape == (allowed.shape[0], 2 * L)
    boosted = np.array(scores.emissions, copy=True)
    is_be = pipe.tags.index("(s 'is' 'be')")
    boosted[:, [is_be, L + is_be]] = 1e6
    masked = pipe.constrain_scores(scores.replace(emissions=boosted), docs)
    for half in (masked.emissions[:, :L], masked.emissions[:, L:]):
        assert np.isneginf(half[~allowed]).all() and np.isfinite(half[allowed]).all()
    labels, _ = pipe.crf_structure.viterbi(masked, pipe.batch_layout(docs))
    words = [t.text for d in docs for t in d]
    assert all((label == is_be) == (word == "is") for label, word in zip(labels, words))
