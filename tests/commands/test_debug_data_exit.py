"""``crf-debug-data --component NAME`` where NAME is no crf_tagger of the
pipeline: a bad argument, so a ``✘`` line and exit code 2 (E203), as
``crf-plots``, ``crf-fit`` and ``crf-annotate`` give for theirs; a config
whose pipeline has no crf_tagger at all stays a failed check (exit 1)."""

import re

import pytest
import spacy
from spacy.tokens import Doc, DocBin

from spacy_crf.commands.debug_data import debug_data, main

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def config_and_corpus(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("crf_tagger", name="upos", config={"target": "pos"})
    config = tmp_path / "config.cfg"
    nlp.config.to_disk(config)
    doc = Doc(nlp.vocab, words=["the", "cat", "sat"], pos=["DET", "NOUN", "VERB"])
    corpus = tmp_path / "train.spacy"
    DocBin(docs=[doc]).to_disk(corpus)
    return config, corpus


def run(capsys, config, corpus, *extra):
    code = main([str(config), "--paths.train", str(corpus), "--paths.dev", str(corpus),
                 *extra])
    captured = capsys.readouterr()
    text = _ANSI.sub("", captured.out + captured.err)
    return code, " ".join(text.split())


@pytest.mark.parametrize("name", ["nosuch", "sentencizer"])
def test_a_component_that_is_no_crf_tagger_is_a_usage_error(config_and_corpus, capsys, name):
    config, corpus = config_and_corpus
    code, out = run(capsys, config, corpus, "--component", name)
    assert code == 2
    assert f"✘ [CRF-E203] The pipeline has no crf_tagger '{name}'" in out
    assert "its crf_tagger components: upos" in out
    assert "Traceback" not in out and "checks passed" not in out


def test_the_library_function_raises_it(config_and_corpus):
    config, corpus = config_and_corpus
    overrides = {"paths.train": str(corpus), "paths.dev": str(corpus)}
    with pytest.raises(ValueError, match=r"\[CRF-E203\].*'nosuch'.*sentencizer, upos"):
        debug_data(config, overrides, "nosuch")


def test_the_named_crf_tagger_is_reported(config_and_corpus, capsys):
    config, corpus = config_and_corpus
    code, out = run(capsys, config, corpus, "--component", "upos")
    assert code == 0, out
    assert "crf_tagger 'upos'" in out


def test_a_pipeline_without_a_crf_tagger_is_still_a_failed_check(tmp_path, capsys):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    config = tmp_path / "config.cfg"
    nlp.config.to_disk(config)
    corpus = tmp_path / "train.spacy"
    DocBin(docs=[Doc(nlp.vocab, words=["a", "b"])]).to_disk(corpus)
    code, out = run(capsys, config, corpus)
    assert code == 1
    assert "The pipeline has no crf_tagger" in out and "1 errors" in out
