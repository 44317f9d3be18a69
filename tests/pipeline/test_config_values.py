"""Config values as users get them wrong (a probe's finds): each named where
it is given, with the setting and the value, not a traceback later."""

import pytest
import spacy
from spacy.tokens import Doc, Span
from spacy.training import Example

from conftest import make_nlp, toy_examples

T2V = {"@architectures": "spacy.HashEmbedCNN.v2", "width": 16, "depth": 1, "embed_size": 100,
       "window_size": 1, "maxout_pieces": 2, "subword_features": False,
       "pretrained_vectors": None}


def _examples_of_types(nlp, n_types):
    words = ["Ada", "met", "Bob", "in", "Rome", "and", "Oslo", "."]
    examples = []
    for k in range(n_types):
        gold = Doc(nlp.vocab, words=words)
        gold.ents = [Span(gold, 0, 1, f"T{k}"), Span(gold, 4, 5, f"T{(k + 1) % n_types}")]
        examples.append(Example(Doc(nlp.vocab, words=words), gold))
    return examples


@pytest.mark.parametrize("setting,code", [({"store_confidence": True}, "E096"),
                                          ({"n_best": 2}, "E019")])
def test_settings_the_structure_an_open_order_chose_cannot_run_fail_at_initialize(setting, code):
    """order = null with transition templates: 8 entity types choose order 1,
    which gives neither (add_pipe cannot know); they failed at the first
    prediction, naming a chain as the fix."""
    structure = {"@structures": "spacy-crf.Chain.v1", "transition_templates": ["NORM"]}
    nlp = make_nlp("ents", structure=structure, **setting)
    examples = _examples_of_types(nlp, 8)
    with pytest.raises(ValueError, match=rf"\[CRF-{code}\].*order = 1"):
        nlp.initialize(lambda: examples)
    assert nlp.get_pipe("crf_tagger").cfg["labels"] == []  # nothing changed
    make_nlp("ents", structure=structure, **setting).initialize(
        lambda: _examples_of_types(nlp, 3))  # (order 2 then: both run)


@pytest.mark.parametrize("config,pattern", [
    ({"n_best": 10**9}, r"E019.*from 0 \(off\) to 1000.*got 1000000000"),
    ({"n_best": "3"}, r"E019.*got '3'"),
    ({"structure": {"@structures": "spacy-crf.Chain.v1", "order": "2"}}, r"E094\] order = '2'"),
])
def test_values_of_the_wrong_kind_or_size_are_named_as_given(config, pattern):
    with pytest.raises(ValueError, match=pattern):
        make_nlp("pos", **config)


def test_a_neural_crf_without_templates_still_names_a_bad_feature_setting():
    for setting, code in [({"n_buckets": -1}, "E005"), ({"boost_updates": -3}, "E127"),
                          ({"l1_penalty": -1.0}, "E184"),
                          ({"cluster_templates": ["CLUSTR[-1..1]"]}, "E00")]:
        model = {"@architectures": "spacy-crf.NeuralCRF.v3", "tok2vec": T2V, "templates": [],
                 **setting}
        with pytest.raises(ValueError, match=code):
            make_nlp("pos", model=model)
    make_nlp("pos", model={"@architectures": "spacy-crf.NeuralCRF.v3", "tok2vec": T2V,
                           "templates": []})


def test_an_architecture_that_makes_no_crf_scores_is_e268():
    with pytest.raises(ValueError, match=r"E268.*spacy-crf.FeatureCRF.v2"):
        make_nlp("pos", model={"@architectures": "spacy.Tagger.v2", "tok2vec": T2V})
    make_nlp("pos", model={"@architectures": "spacy-crf.HMM.v1"})


def test_copy_attrs_of_no_attribute_takes_the_corpus_tokens_alone():
    from spacy_crf.augmenters import create_copy_attrs

    nlp = spacy.blank("en")
    gold = Doc(nlp.vocab, words=["wheel-chair", "users"], tags=["NN", "NNS"])
    example = Example(nlp.make_doc("wheel-chair users"), gold)
    out, = list(create_copy_attrs([])(nlp, example))
    assert [t.text for t in out.predicted] == ["wheel-chair", "users"]
    assert [t.tag_ for t in out.predicted] == ["", ""]


def test_e239_names_what_the_component_predicts_not_a_parse():
    from spacy_crf.augmenters import create_copy_attrs

    nlp = make_nlp("tag", keep_existing=True)
    examples = toy_examples(nlp)
    with pytest.raises(ValueError, match=r"E239\] .* copies TAG .*'crf_tagger' predicts it and"):
        list(create_copy_attrs(["TAG"])(nlp, examples[0]))
