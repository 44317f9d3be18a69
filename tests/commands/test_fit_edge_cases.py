"""Issue 29 probes of ``spacy_crf.fit``: small corpora on many threads, bad
options, dev corpora that cannot score, and saving that a kill may interrupt."""

import io
import json

import pytest
from spacy.tokens import DocBin

from spacy_crf.commands.fit import main as fit_main
from spacy_crf.training.fit import fit

from conftest import ROOT, ewt_sample_corpus, run_main
SAMPLE = ROOT / "assets" / "ewt_sample"
CONFIG = ROOT / "configs" / "ewt_upos.cfg"


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    """30 training docs (fewer than the self-check's 20 per shard on 2 threads) and 40 dev docs."""
    out = tmp_path_factory.mktemp("probe_fit_corpus")
    paths = ewt_sample_corpus(out, train=30, dev=40)
    paths["empty"] = out / "empty.spacy"
    DocBin(docs=[]).to_disk(paths["empty"])
    return paths


def overrides(paths, **extra):
    return {"paths.train": str(paths["train"]), "paths.dev": str(paths["dev"]),
            "components.crf_tagger.model.n_buckets": 4096, **extra}


@pytest.mark.parametrize("n_threads", [2, 64])
def test_a_small_corpus_fits_on_many_threads(small_corpus, n_threads):
    """The self-check compared the first 20 docs with shard 0 alone: E035 "a bug"."""
    nlp = fit(CONFIG, None, overrides=overrides(small_corpus), max_iterations=2,
              n_threads=n_threads, stdout=io.StringIO())
    assert nlp.get_pipe("crf_tagger").labels


@pytest.mark.parametrize("dev", ["empty", "conllu"])
def test_a_dev_corpus_without_documents_is_refused(small_corpus, dev):
    """It made model-best the first evaluation, with score 0.0, silently."""
    path = small_corpus["empty"] if dev == "empty" else SAMPLE / "en_ewt-dev.conllu"
    with pytest.raises(ValueError, match=r"\[CRF-E142\].*--paths.dev"):
        fit(CONFIG, None, overrides=overrides(small_corpus, **{"paths.dev": str(path)}),
            max_iterations=1, stdout=io.StringIO())


@pytest.mark.parametrize("name", ["c1", "c2", "delta"])
def test_infinite_coefficients_are_refused(small_corpus, name):
    """--c2 inf slipped past the divergence check; --c1 inf gave an all-zero model."""
    with pytest.raises(ValueError, match=rf"\[CRF-E032\] {name} must be a finite number"):
        fit(CONFIG, None, overrides=overrides(small_corpus), max_iterations=1,
            stdout=io.StringIO(), **{name: float("inf")})


def test_output_at_a_file_is_refused_before_training(small_corpus, tmp_path):
    (tmp_path / "a_file").write_text("")
    log = io.StringIO()
    with pytest.raises(ValueError, match=r"\[CRF-E143\].*a_file"):
        fit(CONFIG, tmp_path / "a_file", overrides=overrides(small_corpus), max_iterations=1,
            stdout=log)
    assert "Fitting" not in log.getvalue()


def test_option_errors_exit_2_with_the_message_alone(small_corpus, tmp_path):
    """They raised a traceback (exit 1) where annotate and convert exit 2 cleanly."""
    base = [str(CONFIG), "--paths.train", str(small_corpus["train"]), "--paths.dev",
            str(small_corpus["dev"]), "--components.crf_tagger.model.n_buckets", "4096"]
    # a value out of the option's range is click's usage error; ours are wasabi's lines
    for extra, said in ((["--threads", "0"], "Invalid value for '--threads'"),
                        (["--c2", "inf"], "✘ [CRF-E032]"), (["--output", str(CONFIG)], "✘ [CRF-E143]")):
        run = run_main(fit_main, [*base, *extra])  # python -m spacy_crf.fit, in process
        assert run.returncode == 2, run.stderr
        assert said in run.stderr and "Traceback" not in run.stderr, run.stderr


def test_a_kill_while_saving_keeps_the_previous_models(small_corpus, tmp_path, monkeypatch):
    """Saving deleted model-best and model-last before writing the new ones."""
    from spacy.language import Language

    out = tmp_path / "out"
    fit(CONFIG, out, overrides=overrides(small_corpus), max_iterations=2, stdout=io.StringIO())
    before = {name: (out / name / "meta.json").read_text()
              for name in ("model-best", "model-last")}
    written = []
    real = Language.to_disk

    def killed_on_the_second_model(self, path, **kwargs):
        if written:
            raise KeyboardInterrupt
        written.append(path)
        return real(self, path, **kwargs)

    monkeypatch.setattr(Language, "to_disk", killed_on_the_second_model)
    with pytest.raises(KeyboardInterrupt):
        fit(CONFIG, out, overrides=overrides(small_corpus), max_iterations=4,
            stdout=io.StringIO())
    # model-best was replaced whole, model-last is the previous run's, whole
    assert json.loads((out / "model-best" / "meta.json").read_text())
    assert (out / "model-last" / "meta.json").read_text() == before["model-last"]
    assert (out / "model-last" / "crf_tagger" / "cfg").exists()
    monkeypatch.undo()
    fit(CONFIG, out, overrides=overrides(small_corpus), max_iterations=1, stdout=io.StringIO())
    assert sorted(p.name for p in out.iterdir()) == ["model-best", "model-last"]


def test_a_model_renamed_aside_by_a_killed_save_is_put_back(tmp_path):
    """Killed between its two renames, a save leaves the previous model aside: the
    next save restores it (then replaces it), rather than deleting it as stale."""
    from spacy_crf.training.fit import _remove_stale

    (tmp_path / ".tmp-model-last-old-123").mkdir()
    (tmp_path / ".tmp-model-last-old-123" / "meta.json").write_text("{}")
    (tmp_path / ".tmp-model-best-456").mkdir()  # half written
    (tmp_path / "model-best").mkdir()
    _remove_stale(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model-best", "model-last"]
    assert (tmp_path / "model-last" / "meta.json").read_text() == "{}"
