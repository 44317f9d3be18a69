"""``crf-shards`` (``spacy_crf.shard_io``) into a directory that already holds shards
(issue #48 item 4): every document in exactly one shard, or a refusal."""

from pathlib import Path

import pytest
import spacy
from spacy.tokens import DocBin

from spacy_crf.commands.shards import main
from spacy_crf.shard_io import list_shards, read_rows, write_shards


@pytest.fixture
def corpus(tmp_path) -> Path:
    nlp = spacy.blank("en")
    path = tmp_path / "c.spacy"
    DocBin(docs=[nlp(f"Text number {i} .") for i in range(100)]).to_disk(path)
    return path


def ids(directory: Path):
    return [row["id"] for p in list_shards(directory) for _, row, _ in read_rows(p)]


def test_fewer_shards_into_the_same_directory_replace_the_old_ones(corpus, tmp_path, capsys):
    out = tmp_path / "shards"
    assert main([str(corpus), str(out), "--n-shards", "4"]) == 0
    assert main([str(corpus), str(out), "--n-shards", "2"]) == 0
    assert sorted(ids(out)) == sorted(f"c-{i}" for i in range(100))  # 100 rows, not 150
    assert [p.name for p in list_shards(out)] == ["c-000.jsonl", "c-001.jsonl"]
    said = " ".join(capsys.readouterr().out.split())  # wasabi wraps long lines
    assert "Removed 2 shard(s) of an earlier run" in said and "c-002.jsonl, c-003.jsonl" in said


def test_another_format_replaces_the_shards_of_the_first(corpus, tmp_path):
    pytest.importorskip("pyarrow")
    out = tmp_path / "shards"
    write_shards(corpus, out, 3, "jsonl")
    n_docs, stale = write_shards(corpus, out, 2, "parquet")
    assert n_docs == 100 and [p.name for p in stale] == [f"c-00{k}.jsonl" for k in range(3)]
    assert sorted(ids(out)) == sorted(f"c-{i}" for i in range(100))


def test_shards_it_did_not_write_are_refused_and_nothing_changes(corpus, tmp_path, capsys):
    out = tmp_path / "shards"
    write_shards(corpus, out, 2)
    (out / "mine.jsonl").write_text('{"id": "x", "text": "kept"}\n', encoding="utf8")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(ValueError, match=r"\[CRF-E187\].*mine\.jsonl"):
        write_shards(corpus, out, 1)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert main([str(corpus), str(out), "--n-shards", "1"]) == 1
    assert "✘ [CRF-E187]" in capsys.readouterr().err


def test_a_shard_with_an_upper_case_suffix_is_one_annotate_reads(corpus, tmp_path):
    """annotate reads ``.JSONL`` as a shard, so crf-shards may not leave one beside its own."""
    out = tmp_path / "shards"
    out.mkdir()
    (out / "mine.JSONL").write_text('{"id": "x", "text": "kept"}\n', encoding="utf8")
    with pytest.raises(ValueError, match=r"\[CRF-E187\].*mine\.JSONL"):
        write_shards(corpus, out, 1)
