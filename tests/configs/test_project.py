"""project.yml: the `all` workflow needs nothing outside the repo, every
command's inputs exist or are made by an earlier step, and the commands the
docs and the benchmarks name exist."""

import re

import srsly

from conftest import ROOT
PROJECT = srsly.read_yaml(ROOT / "project.yml")
COMMANDS = {c["name"]: c for c in PROJECT["commands"]}


def substitute(text: str) -> str:
    return re.sub(r"\$\{vars\.(\w+)\}", lambda m: str(PROJECT["vars"][m.group(1)]), text)


def test_all_workflow_reads_only_the_repo():
    made = set()
    for name in PROJECT["workflows"]["all"]:
        command = COMMANDS[name]
        for line in command["script"]:
            assert "vars.data_dir" not in line, f"{name} reads outside the repo: {line}"
            assert "../" not in substitute(line), f"{name} reads outside the repo: {line}"
        for dep in command.get("deps", []):
            path = substitute(dep)
            assert (ROOT / path).exists() or path in made, (
                f"{name} needs {path}, which is neither shipped nor made by an earlier step")
        made.update(substitute(out) for out in command.get("outputs", []))


def test_all_workflow_trains_evaluates_compares_and_plots():
    steps = PROJECT["workflows"]["all"]
    scripts = " ".join(line for name in steps for line in COMMANDS[name]["script"])
    assert "spacy train" in scripts and "spacy evaluate" in scripts
    assert "benchmarks/ewt_upos.py --quick" in scripts
    assert "python -m spacy_crf.plots" in scripts
    assert steps.index("train-sample") < steps.index("plots")


def test_every_benchmark_has_a_workflow_and_writes_the_results_json():
    results = COMMANDS["results"]
    for name in ("conll2000", "ewt_upos", "uner", "ewt_tree", "scaling", "label_scaling"):
        command = COMMANDS[f"benchmark-{name.replace('_', '-')}"]
        out = f"${{vars.results_dir}}/{name}.json"
        assert out in command["outputs"] and out in results["deps"]
        assert any(f"benchmark-{name.replace('_', '-')}" in steps
                   for workflow, steps in PROJECT["workflows"].items() if workflow != "benchmarks")
    assert PROJECT["workflows"]["benchmarks"][-1] == "results"


def test_full_corpus_assets_have_urls_and_land_where_the_commands_read():
    """`spacy project assets` then `--vars.data_dir assets/data` must find the files."""
    for asset in PROJECT["assets"]:
        if not asset["dest"].startswith("assets/data/"):
            assert (ROOT / asset["dest"]).exists(), f"shipped asset missing: {asset['dest']}"
            continue
        assert asset["url"].startswith("https://"), asset
        relative = asset["dest"][len("assets/data/"):]
        reads = " ".join(line for c in PROJECT["commands"] for line in c["script"])
        folder = relative.rsplit("/", 1)[0]
        assert f"${{vars.data_dir}}/{folder}/" in reads or "--data-dir ${vars.data_dir}" in reads, asset
