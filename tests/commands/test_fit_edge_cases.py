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


# ------------------------------------------------- checks before training (issue: crf-fit probe)


@pytest.fixture(scope="module")
def ner_dev(tmp_path_factory):
    """The UNER sample's dev split: entities, no POS (a corpus for another target)."""
    import spacy
    from spacy_crf.converters import convert_uner

    docs = convert_uner((SAMPLE / "en_ewt-dev.iob2").read_text(encoding="utf8"),
                        spacy.blank("en").vocab)
    path = tmp_path_factory.mktemp("ner_dev") / "ner_dev.spacy"
    DocBin(docs=docs).to_disk(path)
    return path


def test_a_dev_corpus_without_the_targets_annotation_is_refused(small_corpus, ner_dev, tmp_path):
    """A POS model with an NER dev corpus trained, every dev score 0.0, and
    model-best was the first evaluation: silently."""
    log = io.StringIO()
    with pytest.raises(ValueError, match=r"^\[CRF-E257\] The dev corpus '.*ner_dev.spacy' "
                                         r"carries no annotation of target 'pos'") as info:
        fit(CONFIG, tmp_path / "out", overrides=overrides(small_corpus,
                                                          **{"paths.dev": str(ner_dev)}),
            max_iterations=1, stdout=log)
    assert "--paths.dev" in str(info.value) and "crf_tagger" in str(info.value)
    assert "Fitting" not in log.getvalue() and not (tmp_path / "out").exists()


def test_the_dev_check_reads_gold_as_the_target_does():
    """Gold on some document is enough; a span target's all-``O`` doc is gold (no
    entity), a doc whose entities are unset is not."""
    import spacy
    from spacy.tokens import Doc
    from spacy.training import Example
    from spacy_crf.targets import make_target
    from spacy_crf.training.fit import _check_dev, _has_gold

    nlp = spacy.blank("en")
    bare = Doc(nlp.vocab, words=["a", "b"])
    tagged = Doc(nlp.vocab, words=["a", "b"], pos=["DET", "NOUN"])
    outside = Doc(nlp.vocab, words=["a", "b"], ents=["O", "O"])
    ents, pos = make_target("ents"), make_target("pos")
    assert _has_gold(ents, outside) and not _has_gold(ents, bare)
    assert _has_gold(pos, tagged) and not _has_gold(pos, outside)

    class Pipe:  # what the check asks of the component
        name, target = "crf_tagger", pos

    def corpus(docs):
        return lambda _: iter([Example(Doc(nlp.vocab, words=["a", "b"]), d) for d in docs])

    _check_dev(corpus([bare, bare, tagged]), nlp, Pipe())
    with pytest.raises(ValueError, match=r"\[CRF-E257\].*none of its 2 document"):
        _check_dev(corpus([bare, outside]), nlp, Pipe())
    with pytest.raises(ValueError, match=r"\[CRF-E142\]"):
        _check_dev(corpus([]), nlp, Pipe())


def test_an_output_that_cannot_be_created_is_refused_before_training(small_corpus, tmp_path):
    """It trained to the end, then lost the run to a raw OSError when saving."""
    (tmp_path / "a_file").write_text("")
    log = io.StringIO()
    with pytest.raises(ValueError, match=r"^\[CRF-E258\] Cannot write to --output "
                                         r"'.*a_file/out' \(\w+Error: "):
        fit(CONFIG, tmp_path / "a_file" / "out", overrides=overrides(small_corpus),
            max_iterations=1, stdout=log)
    assert "Fitting" not in log.getvalue()


def test_an_output_that_refuses_writes_is_refused_before_training(small_corpus, tmp_path,
                                                                   monkeypatch):
    """A directory that exists but cannot be written (chmod does not stop root, so
    the write is made to fail): the probe finds it, and leaves nothing behind."""
    from pathlib import Path

    real = Path.write_bytes

    def refused(self, data):
        if self.parent == tmp_path / "out":
            raise PermissionError(13, "Permission denied")
        return real(self, data)

    (tmp_path / "out").mkdir()
    monkeypatch.setattr(Path, "write_bytes", refused)
    log = io.StringIO()
    with pytest.raises(ValueError, match=r"\[CRF-E258\].*PermissionError: Permission denied"):
        fit(CONFIG, tmp_path / "out", overrides=overrides(small_corpus), max_iterations=1,
            stdout=log)
    assert "Fitting" not in log.getvalue() and not list((tmp_path / "out").iterdir())


@pytest.mark.parametrize("case", ["config typo", "dev without target", "unwritable output"])
def test_bad_inputs_exit_2_with_a_message_and_no_traceback(small_corpus, ner_dev, tmp_path,
                                                           case):
    """A misspelt setting exited 1 (spaCy's show_validation_error), where
    crf-debug-data and a misspelt registry name exit 2."""
    (tmp_path / "a_file").write_text("")
    base = [str(CONFIG), "--paths.train", str(small_corpus["train"]), "--max-iterations", "1",
            "--components.crf_tagger.model.n_buckets", "4096", "--output", str(tmp_path / "o")]
    extra, said = {
        "config typo": (["--paths.dev", str(small_corpus["dev"]),
                         "--components.crf_tagger.model.n_bucket", "10"],
                        "unexpected argument: 'n_bucket'"),
        "dev without target": (["--paths.dev", str(ner_dev)], "✘ [CRF-E257]"),
        "unwritable output": (["--paths.dev", str(small_corpus["dev"]), "--output",
                               str(tmp_path / "a_file" / "o")], "✘ [CRF-E258]"),
    }[case]
    run = run_main(fit_main, [*base, *extra])
    assert run.returncode == 2, run.stderr
    assert said in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert "Fitting" not in run.stdout


# ------------------------------------------------------------ --init-from and the config


@pytest.fixture(scope="module")
def trained(small_corpus, tmp_path_factory):
    """A pipeline fit trained (pos, 4096 buckets, order 1): what --init-from starts from."""
    out = tmp_path_factory.mktemp("trained")
    fit(CONFIG, out, overrides=overrides(small_corpus), max_iterations=1, stdout=io.StringIO())
    return out / "model-last"


def w048(record):
    return [str(w.message) for w in record if "[CRF-W048]" in str(w.message)]


def test_init_from_names_the_config_settings_it_does_not_use(small_corpus, trained, tmp_path):
    """The config's n_buckets and order were dropped without a word."""
    import spacy

    changed = {"components.crf_tagger.model.n_buckets": 2048,
               "components.crf_tagger.structure.order": 2}
    with pytest.warns(UserWarning, match=r"\[CRF-W048\]") as record:
        fit(CONFIG, tmp_path / "out", overrides=overrides(small_corpus, **changed),
            max_iterations=1, init_from=trained, stdout=io.StringIO())
    said = w048(record)
    assert len(said) == 1, said
    assert "model.n_buckets = 2048 (trained: 4096)" in said[0]
    assert "structure.order = 2 (trained: 1)" in said[0]
    assert "target" not in said[0].split("not used:")[1]
    # (by design: the trained component is trained further, with its own settings)
    pipe = spacy.load(tmp_path / "out" / "model-last").get_pipe("crf_tagger")
    assert pipe.cfg["order"] == 1


def test_init_from_with_the_trained_settings_says_nothing(small_corpus, trained, tmp_path):
    import warnings

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        fit(CONFIG, None, overrides=overrides(small_corpus), max_iterations=1,
            init_from=trained, stdout=io.StringIO())
    assert not w048(record)


def test_init_from_a_component_of_another_target_is_refused(small_corpus, trained, tmp_path):
    """Asked for target "tag", it trained and saved a "pos" model, exit 0."""
    log = io.StringIO()
    with pytest.raises(ValueError, match=r"^\[CRF-E259\] .*--init-from .*trained for target "
                                         r"'pos', but the config says target = 'tag'"):
        fit(CONFIG, tmp_path / "out", max_iterations=1, init_from=trained, stdout=log,
            overrides=overrides(small_corpus, **{"components.crf_tagger.target": "tag"}))
    assert "Fitting" not in log.getvalue() and not (tmp_path / "out").exists()


def test_init_from_trains_the_trained_structure_not_the_configs(small_corpus, trained, tmp_path):
    """A config whose structure fit cannot train (the pruned chain, as a morph
    or lemma config's order = null picks): E211 refused the warm start, though
    the trained component's order-1 chain is what fit trains (and says so, W048)."""
    pruned = {"components.crf_tagger.structure": {"@structures": "spacy-crf.PrunedChain.v1"}}
    with pytest.warns(UserWarning, match=r"\[CRF-W048\]"):
        fit(CONFIG, tmp_path / "out", overrides=overrides(small_corpus, **pruned),
            max_iterations=1, init_from=trained, stdout=io.StringIO())
    assert (tmp_path / "out" / "model-last").exists()
    with pytest.raises(ValueError, match=r"\[CRF-E211\]"):  # (without it, as before)
        fit(CONFIG, None, overrides=overrides(small_corpus, **pruned), max_iterations=1,
            stdout=io.StringIO())


def test_a_table_of_label_parts_is_refused_before_the_corpus_is_read(small_corpus, tmp_path):
    """E241 came from featurizing the corpus: after initialize, with --output made."""
    morph = {"components.crf_tagger.target": "morph",
             "components.crf_tagger.structure.order": 1}
    log = io.StringIO()
    with pytest.raises(ValueError, match=r"\[CRF-E241\]"):
        fit(CONFIG, tmp_path / "out", overrides=overrides(small_corpus, **morph),
            max_iterations=1, stdout=log)
    assert not (tmp_path / "out").exists() and "Fitting" not in log.getvalue()
