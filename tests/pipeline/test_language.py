"""A component keeps the language it was trained in: run on docs of another
(sourced, loaded or warm-started into another pipeline) it says so (W055)."""

import warnings

import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from conftest import SMALL_MODEL, train


def _english_tagger():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "tag", "model": SMALL_MODEL})
    words = ["the", "dog", "ran"]
    train(nlp, [Example(Doc(nlp.vocab, words=words),
                        Doc(nlp.vocab, words=words, tags=["DT", "NN", "VBD"]))], n_iter=2)
    return nlp


def test_the_language_is_kept_and_another_one_warns(tmp_path):
    source = _english_tagger()
    assert source.get_pipe("crf_tagger").cfg["lang"] == "en"
    source.to_disk(tmp_path / "en")
    greek = spacy.blank("el")
    greek.add_pipe("crf_tagger", source=spacy.load(tmp_path / "en"))
    with pytest.warns(UserWarning, match=r"W055.*'crf_tagger'.*language 'en'.*language 'el'"):
        greek("ο σκύλος έτρεξε")
    # in a pipeline of its own language: nothing to say
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spacy.load(tmp_path / "en")("the cat sat")


def test_a_model_saved_before_the_language_was_kept_says_nothing():
    source = _english_tagger()
    pipe = source.get_pipe("crf_tagger")
    del pipe.cfg["lang"]
    greek = spacy.blank("el")
    greek.add_pipe("crf_tagger", source=source)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        greek("ο σκύλος")
