"""``crf-clusters import`` and ``induce`` write under folders that do not exist yet
(a FileNotFoundError traceback before), as the other commands do, and leave
nothing behind when the input is bad or the output cannot be written."""

import pytest
import srsly

from spacy_crf.commands.clusters import main as clusters_main
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
