"""What ``spacy_crf.annotate`` takes for input and for finished output (issue-hunt B):
files in OUTPUT it never wrote are not finished shards, an integer id beyond 64
bits costs its row, INPUT files it does not read are named, and a rejected row
does not claim its id."""

import shutil
from pathlib import Path

import pytest
import srsly

pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

from spacy_crf.annotation import ERRORS_FILE, _valid_rows, annotate  # noqa: E402
from spacy_crf.commands.annotate import main  # noqa: E402
from spacy_crf.shard_io import list_shards, unread_entries  # noqa: E402
from commands.test_annotate import (client, model, output_ids, read_output,  # noqa: E402,F401
                                    texts)


def write_rows(path: Path, rows) -> None:
    """``rows`` as a JSONL or Parquet shard, by the suffix of ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".parquet":
        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        srsly.write_jsonl(path, rows)


def run_args(model: Path, tmp_path: Path, client, *extra: str):  # noqa: F811
    return [str(model), str(tmp_path / "in"), str(tmp_path / "out"), "--address",
            client.scheduler.address, *extra]


# ------------------------------------------------ 1. files annotate did not write


def test_a_copy_of_the_inputs_in_output_is_refused_not_taken_as_finished(
        model, client, tmp_path, capsys):  # noqa: F811
    """It printed "Nothing to do: all 1 shard(s) are annotated already", exit 0,
    and the output held the raw input rows."""
    write_rows(tmp_path / "in" / "s.jsonl", [{"id": "x1", "text": "The cat sat ."}])
    shutil.copytree(tmp_path / "in", tmp_path / "out")
    raw = (tmp_path / "out" / "s.jsonl").read_bytes()
    assert main(run_args(model, tmp_path, client)) == 2
    err = " ".join(capsys.readouterr().err.split())  # wasabi wraps long lines
    assert "[CRF-E254]" in err and "holds s.jsonl" in err and "--overwrite" in err
    assert (tmp_path / "out" / "s.jsonl").read_bytes() == raw
    assert main(run_args(model, tmp_path, client, "--overwrite")) == 0
    (row,) = read_output(tmp_path / "out" / "s.jsonl")
    assert row["id"] == "x1" and [t["text"] for t in row["tokens"]] == ["The", "cat", "sat", "."]


def test_a_finished_shard_replaced_by_another_file_is_refused(model, client, tmp_path,
                                                              capsys):  # noqa: F811
    """A stale file put over an output annotate wrote is no finished shard either."""
    for k in range(2):
        write_rows(tmp_path / "in" / f"p{k}.jsonl", [{"id": k, "text": "Paris is nice ."}])
    assert main(run_args(model, tmp_path, client)) == 0
    shutil.copy(tmp_path / "in" / "p1.jsonl", tmp_path / "out" / "p1.jsonl")
    capsys.readouterr()
    assert main(run_args(model, tmp_path, client)) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "[CRF-E254]" in err and "holds p1.jsonl," in err  # p0 is annotate's own


def test_a_record_whose_output_is_missing_is_redone(model, client, tmp_path):  # noqa: F811
    """A run killed between a shard's record and its rename: the shard is redone."""
    for k in range(2):
        write_rows(tmp_path / "in" / f"p{k}.jsonl", [{"id": k, "text": "Paris is nice ."}])
    log = open(tmp_path / "log.txt", "w")
    assert annotate(model, tmp_path / "in", tmp_path / "out", client=client, log=log).ok
    (tmp_path / "out" / "p1.jsonl").unlink()
    assert (tmp_path / "out" / ".done" / "p1.jsonl.jsonl").exists()
    report = annotate(model, tmp_path / "in", tmp_path / "out", client=client, log=log)
    assert report.ok and report.shards == 1 and report.skipped == 1
    assert output_ids(tmp_path / "out") == [0, 1]


# ------------------------------------------------ 2. an integer id beyond 64 bits


def test_an_integer_id_beyond_64_bits_costs_its_row_not_the_shard(model, client,
                                                                  tmp_path):  # noqa: F811
    """One such id failed the whole shard (OverflowError writing the output), on
    every rerun; ids at the ends of the range are written as they are."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "s.jsonl").write_text(
        '{"id": "ok1", "text": "The cat sat ."}\n'
        '{"id": 123456789012345678901234567890, "text": "Big id ."}\n'
        '{"id": -9223372036854775809, "text": "Small id ."}\n'
        '{"id": 18446744073709551615, "text": "Largest ."}\n'
        '{"id": -9223372036854775808, "text": "Smallest ."}\n', encoding="utf8")
    assert main(run_args(model, tmp_path, client)) == 1
    assert output_ids(tmp_path / "out") == ["ok1", 2 ** 64 - 1, -2 ** 63]
    errors = list(srsly.read_jsonl(tmp_path / "out" / ERRORS_FILE))
    assert [(e["shard"], e["line"], e["id"]) for e in errors] == [("s.jsonl", 2, None),
                                                                  ("s.jsonl", 3, None)]
    assert all("integer outside 64 bits" in e["error"] for e in errors)


# ------------------------------------------------ 3. INPUT files annotate does not read


def test_shard_suffixes_are_read_in_any_case_and_the_rest_is_named(tmp_path):
    write_rows(tmp_path / "a.jsonl", [{"id": "a", "text": "A ."}])
    write_rows(tmp_path / "b.JSONL", [{"id": "b", "text": "B ."}])
    write_rows(tmp_path / "c.Parquet", [{"id": "c", "text": "C ."}])
    write_rows(tmp_path / "2024" / "d.jsonl", [{"id": "d", "text": "D ."}])
    (tmp_path / "e.jsonl.gz").write_bytes(b"")
    (tmp_path / ".tmp-x-a.jsonl").write_bytes(b"")  # hidden: skipped without a word
    assert [p.name for p in list_shards(tmp_path)] == ["a.jsonl", "b.JSONL", "c.Parquet"]
    assert unread_entries(tmp_path) == ["2024/", "e.jsonl.gz"]


def test_only_unread_files_in_input_is_an_error_naming_them(tmp_path):
    write_rows(tmp_path / "2024" / "d.jsonl", [{"id": "d", "text": "D ."}])
    with pytest.raises(ValueError, match=r"\[CRF-E097\].*it holds 2024/, which are not read"):
        list_shards(tmp_path)


def test_input_files_annotate_does_not_read_are_named_in_a_warning(model, client,
                                                                   tmp_path):  # noqa: F811
    """``b.JSONL``, ``c.jsonl.gz`` and a subfolder's shards were left out without a
    word, exit 0 and "Failures: none"."""
    write_rows(tmp_path / "in" / "a.jsonl", [{"id": "a", "text": "A b ."}])
    write_rows(tmp_path / "in" / "b.JSONL", [{"id": "b", "text": "B c ."}])
    (tmp_path / "in" / "c.jsonl.gz").write_bytes(b"")
    write_rows(tmp_path / "in" / "2024" / "d.jsonl", [{"id": "d", "text": "D e ."}])
    with pytest.warns(UserWarning, match=r"\[CRF-W047\].* holds 2024/, c\.jsonl\.gz, which"):
        report = annotate(model, tmp_path / "in", tmp_path / "out", client=client,
                          log=open(tmp_path / "log.txt", "w"))
    assert report.ok and report.shards == 2
    assert [r["id"] for r in read_output(tmp_path / "out" / "b.JSONL")] == ["b"]


# ------------------------------------------------ 4. a rejected row does not claim its id


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_rejected_row_does_not_claim_its_id(tmp_path, suffix):
    rows = [{"id": "x", "text": None}, {"id": "x", "text": "The cat sat ."},
            {"id": "x", "text": "Again ."}, {"id": "y", "text": "Fine ."}]
    write_rows(tmp_path / f"s{suffix}", rows)
    good, bad = _valid_rows(tmp_path / f"s{suffix}")
    assert good == [(2, "x", "The cat sat ."), (4, "y", "Fine .")]
    assert [(e["line"], e["id"]) for e in bad] == [(1, "x"), (3, "x")]
    assert bad[0]["error"] == "no 'text'"
    assert bad[1]["error"].startswith("duplicate id: line 2 has it too (only the first valid")


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_the_valid_row_after_a_rejected_one_with_its_id_is_annotated(model, client, tmp_path,
                                                                     suffix):  # noqa: F811
    """The id got no output at all: its valid row was rejected as a duplicate of
    the rejected one, with "(the first is kept)"."""
    rows = [{"id": "x", "text": None}, {"id": "x", "text": "The cat sat ."},
            {"id": "y", "text": "Fine ."}]
    write_rows(tmp_path / "in" / f"s{suffix}", rows)
    assert main(run_args(model, tmp_path, client)) == 1
    assert output_ids(tmp_path / "out") == ["x", "y"]
    (error,) = srsly.read_jsonl(tmp_path / "out" / ERRORS_FILE)
    assert (error["line"], error["id"], error["error"]) == (1, "x", "no 'text'")
