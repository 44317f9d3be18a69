"""Smoke test of the EWT UPOS benchmark: ``benchmarks/ewt_upos.py --quick`` end to end
on the shipped sample (three trainings, ~45 s on 2 cores)."""

import json
import subprocess
import sys

import pytest

#: end to end (minutes of training): out of the fast subset, pytest -m "not slow"
pytestmark = pytest.mark.slow

from conftest import ROOT
SAMPLE_TEST = ROOT / "assets" / "ewt_sample" / "en_ewt-test.conllu"


def sample_test_counts():
    """Sentences and syntactic words of the sample's test file (counted here, not
    by the benchmark's reader): token lines without ranges ``3-4`` or empty nodes ``8.1``."""
    sentences = tokens = 0
    in_sentence = False
    for line in SAMPLE_TEST.read_text(encoding="utf8").splitlines():
        if not line.strip():
            in_sentence = False
            continue
        if line.startswith("#"):
            continue
        if not in_sentence:
            sentences += 1
            in_sentence = True
        token_id = line.split("\t", 1)[0]
        if token_id.isdigit():
            tokens += 1
    return sentences, tokens


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    pytest.importorskip("sklearn_crfsuite")
    out = tmp_path_factory.mktemp("ewt_upos") / "x.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "ewt_upos.py"), "--quick", "--no-wait",
         "--out", str(out), "--decode-runs", "1"],
        cwd=str(ROOT), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"STDOUT:\n{proc.stdout[-3000:]}\nSTDERR:\n{proc.stderr[-3000:]}"
    return json.loads(out.read_text(encoding="utf8")), proc.stdout


def test_summary_has_three_sane_rows(quick_report):
    report, stdout = quick_report
    rows = report["summary"]["rows"]
    assert [r["system"] for r in rows] == ["spacy-crf FeatureCRF", "sklearn-crfsuite",
                                           "spaCy tagger"]
    for row in rows:
        assert row["task"] == "EWT UPOS" and row["metric"] == "acc"
        assert 0.5 < row["score"] <= 1, row
        assert row["train_s"] > 0 and row["decode_tokens_per_s"] > 0, row
        assert row["train_peak_mb"] > 0 and row["model_bytes"] > 0, row
        # crfsuite trains and decodes in one process: no separate decode peak
        if row["system"] == "sklearn-crfsuite":
            assert row["decode_peak_mb"] is None
        else:
            assert row["decode_peak_mb"] > 0, row
    # the printed report starts with the summary table
    assert "## UD English EWT UPOS" in stdout and "| EWT UPOS | spaCy tagger" in stdout


def test_scores_come_from_the_predictions_on_the_sample_test(quick_report):
    report, _ = quick_report
    n_sentences, n_tokens = sample_test_counts()
    assert n_sentences == 200
    assert report["corpus"]["test"]["tokens"] == n_tokens
    for key, row in zip(("spacy_crf", "crfsuite", "spacy_tagger"), report["summary"]["rows"]):
        system = report["systems"][key]
        scores = system["scores"]
        assert system["n_test_tokens"] == n_tokens
        assert scores["n_tokens"] == n_tokens
        assert row["score"] == pytest.approx(scores["n_correct"] / n_tokens)
        assert scores["spacy_scorer_acc"] == pytest.approx(scores["acc"])
    decode = report["systems"]["spacy_crf"]["decode"]
    assert decode["n_test_docs"] == 200 and decode["attr"] == "pos_"
    assert report["systems"]["spacy_tagger"]["decode"]["attr"] == "tag_"
    assert report["systems"]["spacy_tagger"]["train"]["last_step"] == 200
