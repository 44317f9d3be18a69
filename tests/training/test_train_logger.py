"""Issue 29 item 9: ``spacy train`` with a shipped config on a corpus shorter than
``eval_frequency`` evaluates only at step 0 and keeps that model as model-best;
the shipped configs' logger (spacy-crf.ConsoleLogger.v1) now says so (W010)."""

import subprocess
import sys

import pytest

from spacy_crf.training.train_logger import untrained_best

from conftest import ROOT, ewt_sample_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return ewt_sample_corpus(tmp_path_factory.mktemp("probe_train"), train=120, dev=40)


def train(corpus, tmp_path, *extra):
    command = [sys.executable, "-m", "spacy", "train", str(ROOT / "configs" / "ewt_upos.cfg"),
               "--output", str(tmp_path / "out"), "--paths.train", str(corpus["train"]),
               "--paths.dev", str(corpus["dev"]),
               "--components.crf_tagger.model.n_buckets", "4096",
               "--training.max_steps", "12", "--training.batcher.size", "100", *extra]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return run


def test_a_run_evaluated_only_at_step_0_warns(corpus, tmp_path):
    run = train(corpus, tmp_path)  # eval_frequency 500 against 12 steps
    assert "[CRF-W010]" in run.stderr and "of 13 steps" in run.stderr
    assert "--training.eval_frequency 2" in run.stderr
    assert (tmp_path / "out" / "model-best").exists()


def test_a_run_evaluated_later_does_not(corpus, tmp_path):
    run = train(corpus, tmp_path, "--training.eval_frequency", "5")
    assert "W010" not in run.stderr + run.stdout


@pytest.mark.parametrize("evaluated, steps, warns", [([0], 100, True), ([0, 50], 100, False),
                                                     ([], 100, False), ([0], 1, False)])
def test_the_rule(evaluated, steps, warns):
    assert (untrained_best(evaluated, steps) is not None) == warns
