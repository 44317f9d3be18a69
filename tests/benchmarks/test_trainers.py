"""``benchmarks/trainers.py`` end to end on the shipped EWT sample (UPOS task).

Every system trains in its own process and is scored on test; the test checks
that each row is a real, distinct result (not a copy of another) and that the
summary the README renders has them all.
"""

import sys

import pytest

#: end to end (minutes of training): out of the fast subset, pytest -m "not slow"
pytestmark = pytest.mark.slow

from conftest import ROOT
SAMPLE = ROOT / "assets" / "ewt_sample"
sys.path.insert(0, str(ROOT / "benchmarks"))

pytest.importorskip("sklearn_crfsuite")


@pytest.fixture(scope="module")
def upos_run(tmp_path_factory):
    import trainers

    data = tmp_path_factory.mktemp("data")
    ewt = data / "ud_english_ewt" / "r2.9"
    ewt.mkdir(parents=True)
    for split in ("train", "dev", "test"):
        (ewt / f"en_ewt-ud-{split}.conllu").symlink_to(SAMPLE / f"en_ewt-{split}.conllu")
    work = tmp_path_factory.mktemp("work")
    # 60 sentences a split: every system still learns (the batch trainers score
    # about 0.83 on test, spacy train's shortest runs above 0.3), in less time
    result = trainers.run_task("upos", data, work, limit=60, epochs=2, max_iterations=8)
    return trainers, result


def test_every_trainer_gives_a_scored_row(upos_run):
    trainers, result = upos_run
    systems = result["systems"]
    assert set(systems) == {"factory defaults, nlp.update loop",
                            "factory defaults, spacy train (filled config)", "tuned config, spacy train",
                            "fit, L-BFGS (c2 = 1)", "fit, OWL-QN (c1 = 0.1, c2 = 0.01)",
                            "perceptron, spacy train", "hinge, spacy train", "sklearn-crfsuite"}
    for name, row in systems.items():
        assert 0.0 < row["score"] <= 1.0, name
        assert row["train_s"] > 0 and row["model_bytes"] > 0, name
    # the batch trainer learns on 60 sentences in 8 iterations; L1 leaves fewer weights
    lbfgs, owlqn = systems["fit, L-BFGS (c2 = 1)"], systems["fit, OWL-QN (c1 = 0.1, c2 = 0.01)"]
    assert lbfgs["score"] > 0.5 and systems["sklearn-crfsuite"]["score"] > 0.5
    assert 0 < owlqn["nonzero_weights"] < lbfgs["nonzero_weights"]
    # processes of their own: the peak memory of each training process is reported
    assert all(systems[name]["peak_rss_mb"] > 50 for name in systems)


def test_the_score_is_the_accuracy_of_the_predictions():
    import trainers

    gold = [["NOUN", "VERB"], ["DET", "NOUN", "PUNCT"]]
    pred = [["NOUN", "NOUN"], ["DET", "NOUN", "PUNCT"]]
    assert trainers.score("upos", gold, pred) == pytest.approx(4 / 5)
    # spans: exact chunks, read as conlleval reads IOB (I- after O starts one)
    gold = [["B-PER", "I-PER", "O", "B-LOC"]]
    pred = [["B-PER", "I-PER", "O", "I-LOC"]]
    assert trainers.score("ner", gold, pred) == pytest.approx(1.0)
    pred = [["B-PER", "O", "O", "B-LOC"]]
    assert trainers.score("ner", gold, pred) == pytest.approx(0.5)


def test_summary_lists_every_row(upos_run):
    trainers, result = upos_run
    report = {"command": "python benchmarks/trainers.py --quick", "tasks": {"upos": result}}
    summary = trainers.trainers_summary(report)
    assert len(summary["rows"]) == 8
    text = trainers.render_summary(summary)
    assert "fit, OWL-QN" in text and "sklearn-crfsuite" in text
    assert "factory defaults, spacy train (filled config)" in text


FIT_LOG = """Fitting 'crf_tagger' (chain, 22 labels) on 10 sequences ...; ready in 2.6 s
  it           loss     |grad|    active   score   secs   total
   1    525541.2535  1.218e+05   6362397           0.90     3.5
  20     26456.9395       1520   6362510  0.9153   0.74     8.0
  40     16000.0000        900   6362510  0.9350   0.70    12.0
  60     14000.0000        800   6362000  0.9372   0.70    16.5
  61     13990.0000        700   6361990           0.20    16.7
reached max_iterations; 61 iterations, 70 evaluations of the objective, 17.0 s
Saved a and b
"""


def test_fit_progress_and_time_to_a_score():
    import trainers

    progress = trainers.fit_progress(FIT_LOG)
    assert progress == {"nonzero_weights": 6361990, "fit_reported_s": 17.0,
                        "dev_evaluations": [[20, 0.9153, 8.0], [40, 0.935, 12.0],
                                            [60, 0.9372, 16.5]]}
    row = dict(progress, train_s=19.0)  # 2 s of imports and saving outside fit's clock
    assert trainers.time_to_score(row, 0.9363) == (60, 0.9372, 18.5)
    assert trainers.time_to_score(row, 0.93) == (40, 0.935, 14.0)
    assert trainers.time_to_score(row, 0.95) is None
