"""Clusters of the pipeline's vectors as a feature source: vectors that hold
NaN or infinity get E255 naming how many and a word, not numpy's bare
"Probabilities contain NaN"."""

import numpy as np
import pytest
import spacy
from spacy.training import Example

MODEL = {"@architectures": "spacy-crf.FeatureCRF.v2", "templates": ["NORM", "VECTOR_CLUSTER4"]}


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_vectors_that_are_not_finite_are_refused_by_name(bad):
    nlp = spacy.blank("en")
    for i, word in enumerate(["the", "cat", "dog", "sat"]):
        nlp.vocab.set_vector(word, np.random.default_rng(i).normal(size=8).astype("float32"))
    vector = np.ones(8, dtype="float32")
    vector[3] = bad
    nlp.vocab.set_vector("dog", vector)
    nlp.add_pipe("crf_tagger", config={"target": "pos", "model": MODEL})
    doc = nlp.make_doc("the cat sat")
    with pytest.raises(ValueError, match=r"^\[CRF-E255\].*but 1 of the 4 words' vectors .*NaN "
                                         r"or infinite values \(e\.g\. 'dog'\)"):
        nlp.initialize(lambda: [Example.from_dict(doc, {"pos": ["DET", "NOUN", "VERB"]})])
