"""spacy_crf.annotate on a local Dask cluster of 2 workers (loopback).

Output equal to nlp.pipe in one process, JSONL and Parquet, bad rows, a worker
killed mid-run, the whole run killed and restarted (every id out exactly once),
and a run over finished output that changes nothing."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import spacy
import srsly
from spacy.training import Example

pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

from spacy_crf.annotation import ERRORS_FILE, annotate  # noqa: E402
from spacy_crf.commands.annotate import main  # noqa: E402
from spacy_crf.dask_client import dask_client, worker_pids  # noqa: E402
from spacy_crf.converters import convert_uner  # noqa: E402

from conftest import EWT_SAMPLE as SAMPLE


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    """An entity crf_tagger trained for two epochs on the UNER sample."""
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "ents"})
    docs = convert_uner((SAMPLE / "en_ewt-train.iob2").read_text(encoding="utf8"), nlp.vocab)
    examples = [Example(nlp.make_doc(d.text), d) for d in docs]
    optimizer = nlp.initialize(lambda: examples)
    random.Random(0).shuffle(examples)
    for _ in range(2):
        for i in range(0, len(examples), 64):
            nlp.update(examples[i:i + 64], sgd=optimizer)
    path = tmp_path_factory.mktemp("annotate") / "model"
    nlp.to_disk(path)
    return path


@pytest.fixture(scope="module")
def texts():
    vocab = spacy.blank("en").vocab
    docs = convert_uner((SAMPLE / "en_ewt-test.iob2").read_text(encoding="utf8"), vocab)
    return [d.text for d in docs]


@pytest.fixture(scope="module")
def client():
    with dask_client(n_workers=2) as c:
        yield c


def write_shards(directory: Path, texts, n_shards: int, per_shard: int, parquet: bool = False):
    """Shards of ``per_shard`` docs each (texts reused), ids unique over the corpus."""
    directory.mkdir(parents=True, exist_ok=True)
    ids = []
    for k in range(n_shards):
        rows = [{"id": f"s{k}-{i}", "text": texts[(k * per_shard + i) % len(texts)]}
                for i in range(per_shard)]
        ids += [r["id"] for r in rows]
        if parquet:
            pq.write_table(pa.Table.from_pylist(rows), directory / f"part-{k:02d}.parquet")
        else:
            srsly.write_jsonl(directory / f"part-{k:02d}.jsonl", rows)
    return ids


def read_output(path: Path):
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    return list(srsly.read_jsonl(path))


def output_ids(directory: Path):
    ids = []
    for path in sorted(directory.iterdir()):
        if path.suffix in (".jsonl", ".parquet") and not path.name.startswith(("_", ".")):
            ids += [row["id"] for row in read_output(path)]
    return ids


@pytest.mark.parametrize("parquet", [False, True])
def test_output_equals_nlp_pipe_in_one_process(model, texts, client, tmp_path, parquet):
    write_shards(tmp_path / "in", texts, n_shards=3, per_shard=20, parquet=parquet)
    report = annotate(model, tmp_path / "in", tmp_path / "out", client=client, batch_size=7,
                      log=open(os.devnull, "w"))
    assert report.ok and report.shards == 3 and report.documents == 60
    nlp = spacy.load(model)
    nlp.get_pipe("crf_tagger").cfg["store_confidence"] = True
    suffix = ".parquet" if parquet else ".jsonl"
    for k in range(3):
        rows = read_output(tmp_path / "out" / f"part-{k:02d}{suffix}")
        expected = [texts[(k * 20 + i) % len(texts)] for i in range(20)]
        assert [r["id"] for r in rows] == [f"s{k}-{i}" for i in range(20)]
        for row, doc in zip(rows, nlp.pipe(expected)):
            assert [t["text"] for t in row["tokens"]] == [t.text for t in doc]
            tags = ["O" if t.ent_iob_ == "O" else f"{t.ent_iob_}-{t.ent_type_}" for t in doc]
            got = [t["label"].replace("L-", "I-").replace("U-", "B-") for t in row["tokens"]]
            assert got == tags
            assert [(s["start"], s["end"], s["label"]) for s in row["spans"]] == [
                (e.start, e.end, e.label_) for e in doc.ents]
            for t, token in zip(row["tokens"], doc):
                assert t["confidence"] == pytest.approx(token._.crf_confidence, abs=1e-6)
            for s, ent in zip(row["spans"], doc.ents):
                assert 0.0 < s["confidence"] <= 1.0
                assert s["confidence"] == pytest.approx(ent._.crf_confidence, abs=1e-6)
    if parquet:  # the id column keeps the input's type
        assert pq.read_schema(tmp_path / "out" / "part-00.parquet").field("id").type == pa.string()


def test_bad_rows_are_listed_and_the_rest_goes_on(model, client, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text(
        '{"id": "x", "text": "Paris is nice ."}\n'
        '{"id": "x", "text": "again"}\n'
        'not json\n'
        '{"id": "y"}\n'
        '{"text": "no id"}\n'
        '{"id": "z", "text": 5}\n'
        '[1, 2]\n'
        '{"id": 7, "text": ""}\n', encoding="utf8")
    srsly.write_jsonl(tmp_path / "in" / "b.jsonl", [{"id": "ok", "text": "Fine ."}])
    args = [str(model), str(tmp_path / "in"), str(tmp_path / "out"), "--address",
            client.scheduler.address]
    assert main(args) == 1
    errors = list(srsly.read_jsonl(tmp_path / "out" / ERRORS_FILE))
    assert [(e["shard"], e["line"], e["id"]) for e in errors] == [
        ("a.jsonl", 2, "x"), ("a.jsonl", 3, None), ("a.jsonl", 4, "y"), ("a.jsonl", 5, None),
        ("a.jsonl", 6, "z"), ("a.jsonl", 7, None)]
    assert "duplicate id" in errors[0]["error"] and "not valid JSON" in errors[1]["error"]
    # the standard parser's message, which names the place (ujson's spoke of a 'null')
    assert "line 1 column 1" in errors[1]["error"] and "null" not in errors[1]["error"]
    assert "'text' is a int" in errors[4]["error"] and "not an object" in errors[5]["error"]
    rows = read_output(tmp_path / "out" / "a.jsonl")
    assert [r["id"] for r in rows] == ["x", 7] and rows[1]["tokens"] == []
    assert output_ids(tmp_path / "out") == ["x", 7, "ok"]
    # a second run: nothing to do, still exit 1 (the finished output has errors), no change
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir() if p.is_file()}
    assert main(args) == 1
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir() if p.is_file()} == before


def test_a_run_over_finished_output_changes_nothing(model, texts, client, tmp_path):
    write_shards(tmp_path / "in", texts, n_shards=2, per_shard=5)
    log = open(os.devnull, "w")
    assert annotate(model, tmp_path / "in", tmp_path / "out", client=client, log=log).ok
    stamps = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in (tmp_path / "out").rglob("*") if p.is_file()}
    report = annotate(model, tmp_path / "in", tmp_path / "out", client=client, log=log)
    assert report.shards == 0 and report.skipped == 2 and report.ok
    assert {p: (p.stat().st_mtime_ns, p.read_bytes())
            for p in (tmp_path / "out").rglob("*") if p.is_file()} == stamps


def test_a_worker_killed_mid_run_loses_nothing(model, texts, tmp_path):
    ids = write_shards(tmp_path / "in", texts, n_shards=8, per_shard=60)
    killed = []

    with dask_client(n_workers=2) as own:
        def kill_a_busy_worker(_name: str) -> None:
            if killed:
                return
            busy = [w for w, keys in own.processing().items() if keys]
            pids = worker_pids(own)
            victim = busy[0] if busy else next(iter(pids))
            os.kill(pids[victim], signal.SIGKILL)
            killed.append(victim)

        report = annotate(model, tmp_path / "in", tmp_path / "out", client=own,
                          on_shard_done=kill_a_busy_worker, log=open(os.devnull, "w"))
    assert killed
    assert report.ok and report.shards == 8
    assert sorted(output_ids(tmp_path / "out")) == sorted(ids)


@pytest.mark.slow
def test_a_killed_run_restarts_with_nothing_lost_or_doubled(model, texts, tmp_path):
    ids = write_shards(tmp_path / "in", texts, n_shards=16, per_shard=150)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "spacy_crf.annotate", str(model), str(tmp_path / "in"),
               str(out), "--n-workers", "2"]
    run = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and run.poll() is None:
        if out.is_dir() and any(p.suffix == ".jsonl" and p.name.startswith("part")
                                for p in out.iterdir()):
            break
        time.sleep(0.02)
    os.killpg(run.pid, signal.SIGKILL)  # the driver, its cluster and its workers
    run.wait()
    finished = [p for p in out.iterdir() if p.name.startswith("part")]
    assert 0 < len(finished) < 16, "the run was not killed mid-way"
    for path in finished:  # what is there is whole
        assert len(read_output(path)) == 150
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"({len(finished)} already done)" in rerun.stderr
    assert sorted(output_ids(out)) == sorted(ids)
    assert not [p for p in out.rglob(".tmp-*")]


def test_input_and_model_errors_name_the_fix(model, texts, tmp_path, capsys):
    write_shards(tmp_path / "in", texts, n_shards=1, per_shard=2)
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "nope"), str(tmp_path / "in"), str(tmp_path / "o")]) == 2
    assert "E098" in capsys.readouterr().err
    assert main([str(model), str(tmp_path / "empty"), str(tmp_path / "o")]) == 2
    assert "E097" in capsys.readouterr().err
    assert main([str(model), str(tmp_path / "in"), str(tmp_path / "in")]) == 2
    assert "E101" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_output_of_another_pipeline_is_not_mixed_in(model, texts, client, tmp_path):
    write_shards(tmp_path / "in", texts, n_shards=2, per_shard=3)
    log = open(os.devnull, "w")
    assert annotate(model, tmp_path / "in", tmp_path / "out", client=client, log=log).ok
    other = tmp_path / "other"
    nlp = spacy.load(model)
    nlp.to_disk(other)
    (tmp_path / "out" / "part-01.jsonl").unlink()
    with pytest.raises(ValueError, match="E102"):
        annotate(other, tmp_path / "in", tmp_path / "out", client=client, log=log)
    report = annotate(other, tmp_path / "in", tmp_path / "out", client=client, log=log,
                      overwrite=True)
    assert report.shards == 2 and report.skipped == 0


def test_shards_from_a_spacy_corpus(tmp_path):
    from spacy.tokens import DocBin

    from spacy_crf.commands.shards import main as make_shards
    from spacy_crf.shard_io import list_shards, read_rows

    nlp = spacy.blank("en")
    docs = [nlp(f"Text number {i} .") for i in range(7)]
    DocBin(docs=docs).to_disk(tmp_path / "c.spacy")
    for fmt in ("jsonl", "parquet"):
        assert make_shards([str(tmp_path / "c.spacy"), str(tmp_path / fmt), "--n-shards", "3",
                            "--format", fmt]) == 0
        shards = list_shards(tmp_path / fmt)
        assert [p.name for p in shards] == [f"c-{k:03d}.{fmt}" for k in range(3)]
        rows = [row for p in shards for _, row, _ in read_rows(p)]
        assert rows == [{"id": f"c-{i}", "text": d.text} for i, d in enumerate(docs)]


def test_a_model_replaced_at_its_path_is_loaded_again_by_a_cluster_that_outlives_the_run(
        model, texts, tmp_path):
    """A worker kept every pipeline it loaded, keyed by its path: a model saved
    again at the path (or another in its place) wrote the old one's labels,
    recorded as the new one's; and none was ever let go."""
    import shutil

    from spacy_crf import annotation

    path = tmp_path / "model"
    shutil.copytree(model, path)
    write_shards(tmp_path / "in", texts, n_shards=1, per_shard=4)
    shard, out = tmp_path / "in" / "part-00.jsonl", tmp_path / "out.jsonl"
    (tmp_path / annotation.DONE_DIR).mkdir()
    run = annotation._run_record(path, None)
    annotation.annotate_shard(str(path), None, str(shard), str(out), 8, run)
    before = read_output(out)
    nlp = spacy.blank("en")  # another model in its place: untrained, it finds no entity
    nlp.add_pipe("crf_tagger", config={"target": "ents"})
    gold = nlp.make_doc("Ada ran")
    gold.ents = [gold.char_span(0, 3, "PER")]
    nlp.initialize(lambda: [Example(nlp.make_doc("Ada ran"), gold)])
    shutil.rmtree(path)
    nlp.to_disk(path)
    run = annotation._run_record(path, None)
    annotation.annotate_shard(str(path), None, str(shard), str(out), 8, run)
    after = read_output(out)
    assert any(row["spans"] for row in before) and not any(row["spans"] for row in after)
    for k in range(annotation.MAX_PIPELINES + 1):  # a few models: the last ones kept
        copy = tmp_path / f"copy{k}"
        shutil.copytree(path, copy)
        annotation._pipeline(str(copy), None, annotation._run_record(copy, None)["fingerprint"])
    assert len(annotation._PIPELINES) <= annotation.MAX_PIPELINES
