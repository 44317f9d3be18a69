"""The results page, docs/results.md: rendered from the benchmarks' JSON by
``benchmarks/results.py``, and kept equal to it."""

import json
import sys

import pytest

from conftest import ROOT
sys.path.insert(0, str(ROOT / "benchmarks"))

import common  # noqa: E402
import results  # noqa: E402

RESULTS_DIR = ROOT / "benchmarks" / "results"
RESULTS_PAGE = ROOT / "docs" / "results.md"


def fake_report(benchmark="conll2000_chunking", score=0.9362):
    rows = [
        common.summary_row("chunks", "ours", "F1", score, 76.44, 638841.2, 745.4, 400.2,
                           88 * 2**20),
        common.summary_row("chunks", "crfsuite", "F1", 0.9363, 85.9, 64432.0, 291.0, None,
                           int(28.7 * 2**20), note="c2 = 1"),
    ]
    summary = common.make_summary("CoNLL-2000", "python benchmarks/conll2000.py", rows,
                                  ["one note"])
    return {"benchmark": benchmark, "summary": summary, "benchmark_wall_s": 600.0,
            "environment": {"cpu_count": 2, "python": "3.11.7",
                            "versions": {"spacy": "3.8.18", "numba": "0.68.1"},
                            "git": {"commit": "0123456789abcdef", "dirty_files": 0}}}


def write(tmp_path, name, report):
    path = tmp_path / name
    path.write_text(json.dumps(report), encoding="utf8")
    return path


def test_render_formats_every_column():
    text = common.render_summary(fake_report()["summary"])
    assert "`python benchmarks/conll2000.py`" in text
    assert "| chunks | ours | F1 93.62 | 76.4 | 638,841 | 745 / 400 | 88.0 |" in text
    # crfsuite trains and decodes in one process: one peak, said so
    assert "| chunks | crfsuite (c2 = 1) | F1 93.63 | 85.9 | 64,432 | 291 (one process) | 28.7 |" in text
    assert "- one note" in text


def test_page_block_is_replaced_and_check_detects_drift(tmp_path):
    report = write(tmp_path, "a.json", fake_report())
    readme = tmp_path / "results.md"
    readme.write_text(f"# title\n\nbefore\n\n{results.BEGIN}\nstale table\n{results.END}\n\nafter\n",
                      encoding="utf8")
    assert results.main([str(report), "--page", str(readme)]) == 0
    text = readme.read_text(encoding="utf8")
    assert "stale table" not in text
    assert "| chunks | ours | F1 93.62 |" in text
    assert text.startswith("# title\n\nbefore\n\n") and text.endswith("\n\nafter\n")
    assert "Measured at commit 0123456, 2 CPUs" in text
    assert results.main([str(report), "--page", str(readme), "--check"]) == 0
    # --readme, the old name of --page, still works
    assert results.main([str(report), "--readme", str(readme), "--check"]) == 0
    # idempotent
    assert results.main([str(report), "--page", str(readme)]) == 0
    assert readme.read_text(encoding="utf8") == text
    # a new measurement makes the page stale, and --check says so without writing
    write(tmp_path, "a.json", fake_report(score=0.95))
    assert results.main([str(report), "--page", str(readme), "--check"]) == 1
    assert readme.read_text(encoding="utf8") == text


def test_sections_follow_the_benchmark_order(tmp_path):
    uner = write(tmp_path, "z_uner.json", fake_report("uner_english_ewt"))
    conll = write(tmp_path, "b_conll.json", fake_report("conll2000_chunking"))
    ordered = [r["benchmark"] for r in results.load_reports([uner, conll])]
    assert ordered == ["conll2000_chunking", "uner_english_ewt"]


def test_a_directory_stands_for_every_report_in_it(tmp_path):
    write(tmp_path, "z_uner.json", fake_report("uner_english_ewt"))
    write(tmp_path, "b_conll.json", fake_report("conll2000_chunking"))
    (tmp_path / "notes.txt").write_text("not a report", encoding="utf8")
    ordered = [r["benchmark"] for r in results.load_reports([tmp_path])]
    assert ordered == ["conll2000_chunking", "uner_english_ewt"]


def test_the_project_command_renders_every_committed_report():
    import srsly

    project = srsly.read_yaml(ROOT / "project.yml")
    script = next(c for c in project["commands"] if c["name"] == "results")["script"]
    assert script == ["python benchmarks/results.py ${vars.results_dir} --page ${vars.results_page}"]
    assert results.main([str(ROOT / "benchmarks" / "results"), "--page", str(RESULTS_PAGE),
                         "--check"]) == 0


def test_report_without_summary_names_the_file(tmp_path):
    bad = write(tmp_path, "old.json", {"benchmark": "x"})
    with pytest.raises(SystemExit, match="old.json: no 'summary'"):
        results.load_reports([bad])
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf8")
    with pytest.raises(SystemExit, match="broken.json: not a readable JSON report"):
        results.load_reports([broken])


def test_page_without_markers_says_where_they_go(tmp_path):
    report = write(tmp_path, "a.json", fake_report())
    readme = tmp_path / "results.md"
    readme.write_text("# no markers\n", encoding="utf8")
    with pytest.raises(SystemExit, match="no results markers"):
        results.main([str(report), "--page", str(readme)])


def committed_reports():
    return sorted(RESULTS_DIR.glob("*.json"))


@pytest.mark.skipif(not committed_reports(), reason="no benchmark results committed yet")
def test_results_page_equals_the_committed_benchmark_json():
    """The acceptance check: docs/results.md's tables are the benchmarks' output."""
    paths = [str(p) for p in committed_reports()]
    assert results.main([*paths, "--page", str(RESULTS_PAGE), "--check"]) == 0


@pytest.mark.skipif(not committed_reports(), reason="no benchmark results committed yet")
def test_committed_summaries_are_what_the_scripts_compute_from_their_json():
    """Each benchmark's summary function, run again on its own JSON, gives the
    stored summary: the table is derived from the measured figures, not typed."""
    import conll2000
    import ewt_tree
    import ewt_upos
    import label_scaling
    import lemma_senter
    import morph
    import scaling
    import orders
    import spacing
    import trainers
    import uner

    summarizers = {
        "conll2000_chunking": conll2000.conll2000_summary,
        "ewt_upos": ewt_upos.ewt_upos_summary,
        "uner_english_ewt": uner.uner_summary,
        "ewt_tree": lambda r: ewt_tree.ewt_tree_summary(r, r["systems"]),
        "scaling": scaling.scaling_summary,
        "label_scaling": label_scaling.label_scaling_summary,
        "trainers": trainers.trainers_summary,
        "orders": orders.orders_summary,
        "morph": morph.morph_summary,
        "lemma_senter": lemma_senter.lemma_senter_summary,
        "spacing": lambda r: spacing.spacing_summary(r["rows"], r["command"]),
    }
    checked = 0
    for path in committed_reports():
        report = json.loads(path.read_text(encoding="utf8"))
        summarize = summarizers.get(report.get("benchmark"))
        if summarize is None:
            continue
        assert summarize(report) == report["summary"], path.name
        checked += 1
    assert checked


def test_benchmark_runs_write_untracked_files_unless_asked(tmp_path):
    """The project's benchmark commands write under metrics/ (git-ignored) and
    render a page of their own there; the committed results change only with
    --vars.results_dir benchmarks/results --vars.results_page docs/results.md."""
    import srsly

    project = srsly.read_yaml(ROOT / "project.yml")
    assert project["vars"]["results_dir"] == "metrics/benchmarks"
    assert project["vars"]["results_page"] == "metrics/results.md"
    assert "/metrics/" in (ROOT / ".gitignore").read_text(encoding="utf8").split()
    outs = [line for command in project["commands"] if command["name"].startswith("benchmark-")
            for line in command["script"] if "--out " in line]
    assert outs and all("--out ${vars.results_dir}/" in line for line in outs)
    # a page that does not exist yet is made, with the markers
    page = tmp_path / "metrics" / "results.md"
    assert results.main([str(ROOT / "benchmarks" / "results" / "conll2000.json"),
                         "--page", str(page)]) == 0
    text = page.read_text(encoding="utf8")
    assert results.BEGIN in text and results.END in text and "CoNLL-2000" in text
