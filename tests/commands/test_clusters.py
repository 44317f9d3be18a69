"""``crf-clusters import`` and ``induce`` write under folders that do not exist yet
(a FileNotFoundError traceback before), as the other commands do, and leave
nothing behind when the input is bad or the output cannot be written; what a
paths file may not hold exits 2 naming its line, ``induce`` gzips a ``.gz``
paths file, and ``show`` tells a word of value 0 from one the table has not."""

import gzip

import pytest
import srsly

from spacy_crf.commands.clusters import main as clusters_main
from spacy_crf.features.brown_clusters import read_cluster_file
from conftest import run_main

PATHS = "0\tthe\t10\n10\tcat\t5\n"
TEXT = "the cat sat\nthe dog sat\nthe cat ran\n"


@pytest.mark.parametrize("args", [["import", "paths.txt"],
                                  ["induce", "text.txt", "--clusters", "2", "--min-count", "1"]])
def test_missing_output_folders_are_created(tmp_path, args):
    (tmp_path / "paths.txt").write_text(PATHS, encoding="utf8")
    (tmp_path / "text.txt").write_text(TEXT, encoding="utf8")
    run = run_main(clusters_main, [*args[:2], "no/such/dir/c.json", *args[2:]], tmp_path)
    assert run.returncode == 0, run.stderr
    assert "the" in srsly.read_json(tmp_path / "no" / "such" / "dir" / "c.json")


def test_a_bad_input_leaves_no_folder_behind(tmp_path):
    (tmp_path / "paths.txt").write_text("bad line\n", encoding="utf8")
    run = run_main(clusters_main, ["import", "paths.txt", "no/such/c.json"], tmp_path)
    assert run.returncode == 2 and "[CRF-E123]" in run.stderr
    assert not (tmp_path / "no").exists()


def test_an_output_under_a_file_is_refused(tmp_path):
    (tmp_path / "paths.txt").write_text(PATHS, encoding="utf8")
    (tmp_path / "a_file").write_text("keep", encoding="utf8")
    run = run_main(clusters_main, ["import", "paths.txt", "a_file/c.json"], tmp_path)
    assert run.returncode == 2
    assert "[CRF-E237] Cannot write OUTPUT 'a_file/c.json'" in run.stderr
    assert "Traceback" not in run.stderr
    assert (tmp_path / "a_file").read_text(encoding="utf8") == "keep"


# ------------------------------------------------- what the tables may hold, and show


def test_show_tells_a_word_of_value_0_from_a_word_not_in_the_table(tmp_path):
    (tmp_path / "zero.json").write_text('{"the": 0, "cat": 3}', encoding="utf8")
    run = run_main(clusters_main, ["show", "zero.json", "the", "cat", "dog"], tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["the\t0", "cat\t11", "dog\t-"]
    assert "the: in the table with the value 0" in run.stderr


def test_an_all_zero_path_is_imported_with_a_1_appended(tmp_path):
    (tmp_path / "paths.txt").write_text("000\tthe\t10\n001\ta\t9\n1\tcat\t5\n", encoding="utf8")
    run = run_main(clusters_main, ["import", "paths.txt", "c.json"], tmp_path)
    assert run.returncode == 0, run.stderr
    assert srsly.read_json(tmp_path / "c.json") == {"the": 8, "a": 4, "cat": 1}
    run = run_main(clusters_main, ["show", "paths.txt", "the", "a", "dog"], tmp_path)
    assert run.stdout.splitlines() == ["the\t0001", "a\t001", "dog\t-"] and not run.stderr


@pytest.mark.parametrize("bits", [64, 70])
def test_a_path_of_64_bits_or_more_exits_2_naming_its_line(tmp_path, bits):
    (tmp_path / "paths.txt").write_text("0\tcat\t3\n" + "1" * bits + "\tthe\t10\n",
                                        encoding="utf8")
    run = run_main(clusters_main, ["import", "paths.txt", "c.json"], tmp_path)
    said = " ".join(run.stderr.split())
    assert run.returncode == 2 and "[CRF-E123]" in said and "line 2: the path" in said
    assert f"has {bits} bits" in said and "Traceback" not in run.stderr
    assert not (tmp_path / "c.json").exists()


@pytest.mark.parametrize("text,why", [("", "it holds no words"),
                                      ("0\tthe\t1\n", "no word of it is seen --min-count 2"),
                                      ("0\tthe\t3\n1\tthe\t3\n", "line 2 gives 'the' a cluster")])
def test_an_import_of_no_words_or_a_word_given_twice_exits_2(tmp_path, text, why):
    (tmp_path / "paths.txt").write_text(text, encoding="utf8")
    run = run_main(clusters_main, ["import", "paths.txt", "c.json", "--min-count", "2"],
                   tmp_path)
    assert run.returncode == 2 and why in " ".join(run.stderr.split())
    assert not (tmp_path / "c.json").exists()


def test_a_non_utf8_paths_file_exits_2_naming_its_line(tmp_path):
    (tmp_path / "paths.txt").write_bytes("0\tthe\t3\n1\tcafé\t3\n".encode("latin-1"))
    run = run_main(clusters_main, ["import", "paths.txt", "c.json"], tmp_path)
    said = " ".join(run.stderr.split())
    assert run.returncode == 2 and "[CRF-E123]" in said and "line 2 is not UTF-8" in said


def test_induce_writes_a_paths_file_named_gz_gzipped(tmp_path):
    (tmp_path / "text.txt").write_text(TEXT, encoding="utf8")
    args = ["--clusters", "2", "--min-count", "1"]
    for output in ("c.paths.gz", "c.json"):
        run = run_main(clusters_main, ["induce", "text.txt", output, *args], tmp_path)
        assert run.returncode == 0, run.stderr
    with gzip.open(tmp_path / "c.paths.gz", "rt", encoding="utf8") as file:
        assert "\tthe\t3" in file.read()
    assert read_cluster_file(tmp_path / "c.paths.gz") == read_cluster_file(tmp_path / "c.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json", "c.paths.gz", "text.txt"]
    run = run_main(clusters_main, ["show", "c.paths.gz", "the"], tmp_path)
    assert run.returncode == 0 and run.stdout.startswith("the\t")


def test_induce_with_a_language_spacy_cannot_load_says_what_spacy_said(tmp_path, monkeypatch):
    import spacy

    def blank(lang):
        raise ImportError("Japanese support requires SudachiPy and SudachiDict-core")

    monkeypatch.setattr(spacy, "blank", blank)
    (tmp_path / "text.txt").write_text(TEXT, encoding="utf8")
    run = run_main(clusters_main, ["induce", "text.txt", "c.json", "--lang", "ja"], tmp_path)
    said = " ".join(run.stderr.split())
    assert run.returncode == 2 and "requires SudachiPy" in said
    assert "has no language" not in said
