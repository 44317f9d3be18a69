"""Every shipped config passes spaCy's own checks: ``spacy debug config`` and ``spacy debug data``."""

from pathlib import Path

import pytest
from spacy.cli.debug_config import debug_config
from spacy.cli.debug_data import debug_data
from spacy.cli.init_config import fill_config
from spacy.util import load_config
from spacy_crf.structures.config import FLAT_SETTINGS

from conftest import ROOT, ewt_sample_corpus, ewt_sample_docs
CONFIGS = sorted((ROOT / "configs").glob("*.cfg"))


def test_there_are_configs():
    assert len(CONFIGS) >= 9


@pytest.fixture(scope="module")
def sample_parser(tmp_path_factory):
    """What a config that sources a parser (``paths.parser``) reads: a pipeline of
    the shipped parser config's tok2vec and parser, initialized on a few sample
    sentences (untrained: the configs only need its components)."""
    import spacy
    from spacy.tokens import Doc
    from spacy.training import Example

    nlp = spacy.util.load_model_from_config(load_config(ROOT / "configs" / "ewt_parser.cfg"),
                                            auto_fill=True)
    gold = ewt_sample_docs("train")[:20]
    examples = [Example(Doc(nlp.vocab, words=[t.text for t in doc]), doc) for doc in gold]
    nlp.initialize(lambda: examples)
    out = tmp_path_factory.mktemp("parser") / "model"
    nlp.to_disk(out)
    return out


def with_parser(path: Path, parser: Path, tmp_path: Path) -> Path:
    """``path`` as it is, or a copy whose ``paths.parser`` is ``parser`` if it sources one
    (a fresh clone has no trained parser at the config's default path)."""
    config = load_config(path, interpolate=False)
    if "parser" not in config["paths"]:
        return path
    config["paths"]["parser"] = str(parser)
    copy = tmp_path / path.name
    config.to_disk(copy)
    return copy


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_spacy_debug_config_accepts_the_config(path, sample_parser, tmp_path, capsys):
    # show_validation_error exits with status 1 on a config spaCy rejects
    debug_config(with_parser(path, sample_parser, tmp_path))
    out = capsys.readouterr().out
    assert "Config is valid" in out


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_config_is_complete_as_fill_config_writes_it(path, sample_parser, tmp_path):
    """No section or setting that ``spacy init fill-config`` would add is missing."""
    filled = tmp_path / "filled.cfg"
    fill_config(filled, with_parser(path, sample_parser, tmp_path), silent=True)
    original = load_config(path, interpolate=False)
    completed = load_config(filled, interpolate=False)
    # (the crf_tagger's flat order / max_segment_length are read from configs written
    # before structures were blocks: fill-config writes them null, a config omits them)
    missing = [name for name in missing_settings(original, completed)
               if name.rsplit(".", 1)[-1] not in FLAT_SETTINGS]
    assert not missing, f"{path.name} lacks {missing}"


def missing_settings(original, completed, prefix=""):
    """Dotted names of the settings and sections in ``completed`` that ``original`` lacks."""
    missing = []
    for key, value in completed.items():
        if key not in original:
            missing.append(prefix + key)
        elif isinstance(value, dict) and isinstance(original[key], dict):
            missing += missing_settings(original[key], value, f"{prefix}{key}.")
    return missing


@pytest.fixture(scope="module")
def sample_corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("debug_data")
    ewt_sample_corpus(out)
    return out


@pytest.mark.parametrize("name", ["ewt_upos.cfg", "ewt_deprel_tree.cfg", "ewt_morph.cfg",
                                  "ewt_lemma.cfg"])
def test_spacy_debug_data_accepts_the_config(name, sample_corpus, capsys):
    debug_data(ROOT / "configs" / name,
               config_overrides={"paths.train": str(sample_corpus / "train.spacy"),
                                 "paths.dev": str(sample_corpus / "dev.spacy")},
               silent=False)
    out = capsys.readouterr().out
    assert "Training stats" in out and "Corpus is loadable" in out
