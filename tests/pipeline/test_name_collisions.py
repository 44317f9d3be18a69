"""Two crf_taggers never share the place their confidences are stored in, nor
their extensions, however they come to be named (issue #49).

* ``nlp.rename_pipe`` (which names the component in spaCy 3.8): E190 where
  the new name reads as another crf_tagger's name in the pipeline, and the
  pipeline as it was, as ``add_pipe`` and sourcing check it;
* a ``_.NAME`` target whose NAME is a crf_tagger's confidence extension: E202,
  as the crf_tagger refuses the other order (E192).

Extensions are registered for the process: each test uses names of its own.
"""

import pytest
import spacy
from spacy.tokens import Doc, Token

from conftest import SMALL_MODEL, train

WORDS = ["the", "cat", "sat", "."]


def pipeline(*names, **config):
    nlp = spacy.blank("en")
    for name in names:
        nlp.add_pipe("crf_tagger", name=name, config={"model": SMALL_MODEL, **config})
    return nlp


# -- a name set after nlp.rename_pipe


def test_rename_pipe_to_a_name_that_reads_as_anothers_is_refused_and_undone():
    """spaCy 3.8's rename_pipe names the component itself, after it renamed the
    pipeline's entries: the E190 there leaves the pipeline as it was."""
    nlp = pipeline("rn_a", "rn_b", target="pos", store_confidence=True)
    moved = nlp.get_pipe("rn_a")
    meta = nlp.get_pipe_meta("rn_a")
    with pytest.raises(ValueError, match=r"E190.*'rn_b' and 'rn-b'"):
        nlp.rename_pipe("rn_a", "rn-b")  # "rn-b" reads as "rn_b": the same extensions
    assert nlp.pipe_names == ["rn_a", "rn_b"]
    assert moved.name == "rn_a" and nlp.get_pipe("rn_a") is moved
    assert nlp.get_pipe_meta("rn_a") == meta
    assert list(nlp.config["components"]) == ["rn_a", "rn_b"]


def test_a_rename_to_a_free_name_moves_the_values():
    nlp = pipeline("rf_a", "rf_b", target="pos", store_confidence=True)
    train(nlp, [_example(nlp)] * 2, 3, component=None)
    before = [t._.rf_a_confidence for t in nlp(Doc(nlp.vocab, words=WORDS))]
    nlp.rename_pipe("rf_a", "rf-c")
    doc = nlp(Doc(nlp.vocab, words=WORDS))
    assert [t._.rf_c_confidence for t in doc] == before
    assert [t._.rf_a_confidence for t in doc] == [None] * len(WORDS)


def _example(nlp):
    from spacy.training import Example

    return Example.from_dict(Doc(nlp.vocab, words=WORDS),
                             {"pos": ["DET", "NOUN", "VERB", "PUNCT"]})


# -- a _.NAME target and a crf_tagger's confidence extension


def test_a_target_extension_cannot_take_over_a_components_confidences():
    nlp = pipeline("xo_ner", target="ents", store_confidence=True)
    getter = Token.get_extension("xo_ner_confidence")[2]
    with pytest.raises(ValueError, match=r"E202.*'_\.xo_ner_confidence'.*'xo_ner'"):
        nlp.add_pipe("crf_tagger", name="xo_chunker",
                     config={"model": SMALL_MODEL, "target": "_.xo_ner_confidence"})
    assert Token.get_extension("xo_ner_confidence")[2] is getter  # as it was
    assert nlp.pipe_names == ["xo_ner"]


def test_nor_the_shared_confidence_extension():
    nlp = pipeline("xs_tagger")
    with pytest.raises(ValueError, match=r"E202.*every crf_tagger shares"):
        nlp.add_pipe("crf_tagger", name="xs_chunker",
                     config={"model": SMALL_MODEL, "target": "_.crf_confidence"})


def test_the_other_order_is_refused_as_before():
    nlp = pipeline("xr_chunker", target="_.xr_pos_confidence")
    with pytest.raises(ValueError, match="E192"):
        nlp.add_pipe("crf_tagger", name="xr_pos", config={"model": SMALL_MODEL})


def test_an_extension_registered_elsewhere_is_still_taken_over():
    Token.set_extension("xe_chunk", default=None, force=True)
    nlp = pipeline("xe_chunker", target="_.xe_chunk")
    assert nlp.get_pipe("xe_chunker").cfg["target"] == "_.xe_chunk"
