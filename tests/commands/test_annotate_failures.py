"""Issue 29 probes of ``spacy_crf.annotate``: one bad row costs its row, not its
shard; reserved and unwritable paths are usage errors; Ctrl-C says how far the
run got; ``python -m`` loads the pipeline once per worker."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import srsly

pytest.importorskip("distributed")

from spacy_crf.annotation import ERRORS_FILE  # noqa: E402
from spacy_crf.commands.annotate import main  # noqa: E402
from commands.test_annotate import (client, model, output_ids, read_output, texts,  # noqa: E402,F401
                           write_shards)

from conftest import ROOT


def test_bad_rows_cost_their_row_not_the_shard(model, client, tmp_path):  # noqa: F811
    """Invalid UTF-8, a lone-surrogate escape and a text over nlp.max_length used to
    fail the whole shard (its good rows never written, on every rerun)."""
    (tmp_path / "in").mkdir()
    too_long = "word " * 200_001  # 1,000,005 characters: over spaCy's default max_length
    lines = [b'{"id": "a", "text": "Paris is nice ."}',
             b'{"id": "b", "text": "caf\xe9 au lait"}',  # Latin-1, not UTF-8
             b'{"id": "c", "text": "x\\ud800y"}',
             srsly.json_dumps({"id": "d", "text": too_long}).encode(),
             b'{"id": "e", "text": "Berlin too ."}']
    (tmp_path / "in" / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    args = [str(model), str(tmp_path / "in"), str(tmp_path / "out"), "--address",
            client.scheduler.address]
    assert main(args) == 1
    assert [r["id"] for r in read_output(tmp_path / "out" / "a.jsonl")] == ["a", "e"]
    errors = list(srsly.read_jsonl(tmp_path / "out" / ERRORS_FILE))
    assert [(e["shard"], e["line"]) for e in errors] == [("a.jsonl", 2), ("a.jsonl", 3),
                                                          ("a.jsonl", 4)]
    assert "not valid UTF-8 (byte 0xe9" in errors[0]["error"]
    assert "lone surrogate U+D800" in errors[1]["error"] and errors[1]["id"] == "c"
    assert "nlp.max_length = 1000000" in errors[2]["error"] and errors[2]["id"] == "d"


def test_a_text_the_pipeline_fails_on_costs_its_row(model, client, tmp_path,  # noqa: F811
                                                    monkeypatch):
    """Any other failure of the pipeline on one text: that row is listed, the batch is redone."""
    from spacy_crf import annotation as module

    real = module._pipeline

    def failing_on_boom(model_path, component, fingerprint=None):
        nlp, pipe = real(model_path, component, fingerprint)

        class Picky:
            max_length = nlp.max_length

            def pipe(self, texts, batch_size):
                texts = list(texts)
                if "boom" in texts:
                    raise RuntimeError("cannot handle boom")
                return nlp.pipe(texts, batch_size=batch_size)

            def __call__(self, text):
                if text == "boom":
                    raise RuntimeError("cannot handle boom")
                return nlp(text)

        return Picky(), pipe

    monkeypatch.setattr(module, "_pipeline", failing_on_boom)
    rows = [{"id": i, "text": t} for i, t in enumerate(["One .", "boom", "Two .", "Three ."])]
    (tmp_path / "in").mkdir()
    srsly.write_jsonl(tmp_path / "in" / "a.jsonl", rows)
    (tmp_path / ".errors").mkdir()  # annotate() makes it before giving out shards
    done = module.annotate_shard(str(model), None, str(tmp_path / "in" / "a.jsonl"),
                                 str(tmp_path / "a.jsonl"), batch_size=3)
    assert done["documents"] == 3 and done["bad_rows"] == 1
    assert [r["id"] for r in srsly.read_jsonl(tmp_path / "a.jsonl")] == [0, 2, 3]
    (error,) = srsly.read_jsonl(tmp_path / ".errors" / "a.jsonl.jsonl")
    assert error["line"] == 2 and "RuntimeError: cannot handle boom" in error["error"]


def test_an_input_shard_named_like_the_error_list_is_refused(model, tmp_path, capsys):  # noqa: F811
    """It used to be annotated, then deleted as a stale error list, with exit 0."""
    (tmp_path / "in").mkdir()
    srsly.write_jsonl(tmp_path / "in" / ERRORS_FILE, [{"id": "a", "text": "Hello ."}])
    assert main([str(model), str(tmp_path / "in"), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "[CRF-E140]" in err and "Rename the shard" in err
    assert not (tmp_path / "out").exists()


def test_an_output_that_cannot_be_written_is_a_usage_error(model, texts, tmp_path,  # noqa: F811
                                                           capsys):
    """It used to raise a traceback (exit 1)."""
    write_shards(tmp_path / "in", texts, n_shards=1, per_shard=2)
    (tmp_path / "a_file").write_text("not a directory")
    assert main([str(model), str(tmp_path / "in"), str(tmp_path / "a_file" / "out")]) == 2
    err = capsys.readouterr().err
    assert "[CRF-E141]" in err and "NotADirectoryError" in err and "Traceback" not in err


def wait_for_a_finished_shard(out: Path, run: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline and run.poll() is None:
        if out.is_dir() and any(p.name.startswith("part") for p in out.iterdir()):
            return
        time.sleep(0.02)


@pytest.mark.slow
def test_ctrl_c_says_how_far_the_run_got(model, texts, tmp_path):  # noqa: F811
    """Ctrl-C signals the terminal's whole process group: the workers printed raw
    Dask tracebacks and the driver its own; now one line and exit 130."""
    ids = write_shards(tmp_path / "in", texts, n_shards=16, per_shard=150)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "spacy_crf.annotate", str(model), str(tmp_path / "in"),
               str(out), "--n-workers", "2"]
    # SIGINT as a terminal leaves it, whatever the test runner inherited (a job
    # started in the background of a script has it ignored, and a child keeps that)
    run = subprocess.Popen(command, start_new_session=True, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    wait_for_a_finished_shard(out, run)
    os.killpg(run.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    _, err = run.communicate(timeout=120)
    assert run.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "of 16 shard(s) done. Run the same command again to resume" in err
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert sorted(output_ids(out)) == sorted(ids)


def test_python_m_loads_the_pipeline_once_per_worker(model, texts, tmp_path):  # noqa: F811
    """Run as ``python -m``, the task function was pickled by value from __main__ and
    every shard loaded the pipeline again. A sitecustomize in every process of the
    run (driver, nanny, worker) counts the calls of spacy.load."""
    write_shards(tmp_path / "in", texts, n_shards=5, per_shard=4)
    hooks, loads = tmp_path / "hooks", tmp_path / "loads.txt"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        "import os, spacy\n"
        "_load = spacy.load\n"
        "def load(*args, **kwargs):\n"
        f"    with open({str(loads)!r}, 'a') as f:\n"
        "        f.write(f'{os.getpid()}\\n')\n"
        "    return _load(*args, **kwargs)\n"
        "spacy.load = load\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(hooks), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "spacy_crf.annotate", str(model), str(tmp_path / "in"),
               str(tmp_path / "out"), "--n-workers", "1"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    assert len(output_ids(tmp_path / "out")) == 20
    assert len(loads.read_text().split()) == 1, "the worker loaded the pipeline per shard"
    assert "Worker peak memory: " in run.stderr  # measured during the run, per worker
