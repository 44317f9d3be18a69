"""The package's command lines as ``spacy`` subcommands (the ``spacy_cli`` entry point)."""

import subprocess
import sys

import pytest
import spacy
from spacy.tokens import Doc, DocBin

from spacy_crf.commands import COMMANDS


def spacy_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "spacy", *map(str, args)], capture_output=True,
                          text=True, cwd=str(cwd), timeout=300)


def test_spacy_lists_every_command(tmp_path):
    out = spacy_cli("--help", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    for name in COMMANDS:
        assert name in out.stdout


def test_a_subcommand_is_the_module_cli_with_its_options_and_exit_codes(tmp_path):
    # a usage error: exit 2 with click's message, as spaCy's own commands give
    out = spacy_cli("crf-evaluate", cwd=tmp_path)
    assert out.returncode == 2 and "Error: Missing argument 'model'." in out.stderr
    out = spacy_cli("crf-fit", "--help", cwd=tmp_path)
    assert out.returncode == 0 and "--max-iterations" in out.stdout
    # and a real run: the same shards as python -m spacy_crf.shard_io writes
    nlp = spacy.blank("en")
    docs = [Doc(nlp.vocab, words=f"sentence number {i} .".split()) for i in range(10)]
    DocBin(docs=docs).to_disk(tmp_path / "corpus.spacy")
    out = spacy_cli("crf-shards", tmp_path / "corpus.spacy", tmp_path / "via_spacy", "--n-shards",
                    2, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    direct = subprocess.run([sys.executable, "-m", "spacy_crf.shard_io", str(tmp_path / "corpus.spacy"),
                             str(tmp_path / "direct"), "--n-shards", "2"], capture_output=True,
                            text=True, cwd=str(tmp_path), timeout=300)
    assert direct.returncode == 0, direct.stderr
    written = sorted(p.name for p in (tmp_path / "via_spacy").iterdir())
    assert written == sorted(p.name for p in (tmp_path / "direct").iterdir()) and len(written) == 2
    for name in written:
        assert (tmp_path / "via_spacy" / name).read_text() == (tmp_path / "direct" / name).read_text()


def test_a_command_reports_success_with_wasabi_as_spacy_commands_do(tmp_path):
    """wasabi's "✔" line also when stdout is a pipe (colors off by ANSI_COLORS_DISABLED or
    WASABI_LOG_FRIENDLY, the icon off by WASABI_NO_PRETTY); errors stay on stderr."""
    import os

    nlp = spacy.blank("en")
    DocBin(docs=[Doc(nlp.vocab, words=["a", "b"]) for _ in range(3)]).to_disk(tmp_path / "c.spacy")
    env = {k: v for k, v in os.environ.items()
           if k not in ("WASABI_NO_PRETTY", "WASABI_LOG_FRIENDLY")}

    def shards(out, *args, **extra):
        return subprocess.run([sys.executable, "-m", "spacy", "crf-shards", "c.spacy", out,
                               "--n-shards", "2", *args], capture_output=True, text=True,
                              cwd=str(tmp_path), timeout=300, env={**env, **extra})

    plain = shards("plain", ANSI_COLORS_DISABLED="1")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines() == ["✔ 3 documents in 2 shard(s) in plain"]
    colored = shards("colored")
    assert colored.returncode == 0 and "✔ 3 documents in 2 shard(s) in colored" in colored.stdout
    bare = shards("bare", WASABI_NO_PRETTY="1")
    assert bare.stdout.splitlines() == ["3 documents in 2 shard(s) in bare"]
    failed = shards("bad", "--n-shards", "0")  # a usage error: click's, exit code 2
    assert failed.returncode == 2 and failed.stdout == ""
    assert "Invalid value for '--n-shards'" in failed.stderr


# -- issue #49.6: typer commands in spaCy's style, the same under both spellings

def spacy_commands():
    """name -> click command of every crf-* command (and subcommand) on spaCy's app."""
    from spacy.cli._util import app
    from typer.main import get_command

    import spacy_crf.commands  # noqa: F401  (registers the commands)

    found = {}
    for name, cmd in get_command(app).commands.items():
        if name.startswith("crf-"):
            subs = getattr(cmd, "commands", None)
            found.update({f"{name} {sub}": c for sub, c in subs.items()} if subs else {name: cmd})
    return found


def test_every_option_has_a_help_text_without_rest_markup():
    commands = spacy_commands()
    assert {"crf-fit", "crf-evaluate", "crf-convert uner", "crf-clusters show"} <= set(commands)
    for name, cmd in commands.items():
        assert cmd.help and "`" not in cmd.help, name
        for param in cmd.params:
            if param.name != "ctx":
                assert param.help and "`" not in param.help, (name, param.name)


def test_spacys_option_names():
    options = {name: {opt for p in cmd.params for opt in p.opts} for name, cmd in spacy_commands().items()}
    assert {"--output", "-o", "--code", "-c", "--gpu-id", "-g", "--gold-preproc", "-G",
            "--displacy-path", "-dp", "--displacy-limit", "-dl", "--per-component", "-P",
            "--copy"} <= options["crf-evaluate"]
    assert {"--output", "-o", "--code", "-c", "--max-iterations"} <= options["crf-fit"]
    assert {"--code", "-c"} <= options["crf-debug-data"] and {"--code", "-c"} <= options["crf-plots"]
    assert {"--name", "-n", "--version", "-v", "--force", "-f"} <= options["crf-package"]
    # crf-plots takes its model, data and output directory as positional arguments, as spaCy does
    plots = spacy_commands()["crf-plots"]
    assert [p.name for p in plots.params if p.param_type_name == "argument"] == [
        "model", "data_path", "output_dir"]


def test_python_m_help_names_its_own_spelling(tmp_path):
    for module in ("spacy_crf.fit", "spacy_crf.evaluate", "spacy_crf.convert", "spacy_crf.plots"):
        out = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True,
                             text=True, cwd=str(tmp_path), timeout=300)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith(f"Usage: python -m {module} "), out.stdout


def test_fit_imports_code_and_refuses_stray_arguments(tmp_path):
    from spacy_crf.commands.fit import main

    config = tmp_path / "bad.cfg"
    config.write_text("[nlp]\nlang = \"en\"\npipeline = [\"nothing\"]\n")
    code = tmp_path / "code.py"
    code.write_text(f"open({str(tmp_path / 'imported')!r}, 'w').close()\n")
    assert main([str(config), "--code", str(code)]) != 0  # the config is bad ...
    assert (tmp_path / "imported").exists()  # ... but --code was imported first, as spaCy does
    assert main([str(config), "stray"]) == 2  # not a config override: a usage error


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A crf_tagger trained a few steps on 20 tagged docs, and the docs as a corpus."""
    import random

    from spacy.training import Example

    tmp = tmp_path_factory.mktemp("tiny")
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "tag"})
    words = ["the", "dog", "runs", "a", "cat", "sleeps"]
    tags = ["DT", "NN", "VB", "DT", "NN", "VB"]
    docs = [Doc(nlp.vocab, words=words, tags=tags) for _ in range(20)]
    examples = [Example(nlp.make_doc(d.text), d) for d in docs]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(3):
        random.Random(0).shuffle(examples)
        nlp.update(examples, sgd=optimizer)
    nlp.to_disk(tmp / "model")
    DocBin(docs=docs).to_disk(tmp / "data.spacy")
    return tmp / "model", tmp / "data.spacy"


def test_evaluate_takes_spacys_options(tiny_model, tmp_path, capsys):
    import srsly

    from spacy_crf.commands.evaluate import main

    model, data = tiny_model
    (tmp_path / "html").mkdir()
    assert main([str(model), str(data), "-o", str(tmp_path / "scores.json"), "-G",
                 "-dp", str(tmp_path / "html"), "-dl", "2", "--copy", ""]) == 0
    scores = srsly.read_json(tmp_path / "scores.json")
    assert scores["tag_acc"] > 0.5
    assert main([str(model), str(data), "-o", str(tmp_path / "per.json"), "-P"]) == 0
    assert srsly.read_json(tmp_path / "per.json")["crf_tagger"]["tag_acc"] == scores["tag_acc"]
    # a missing data file: click's usage error, exit 2
    assert main([str(model), str(tmp_path / "missing.spacy")]) == 2


def test_evaluate_prints_the_tables_per_type_spacy_evaluate_prints(tmp_path, capsys):
    from spacy.training import Example

    from spacy_crf.commands.evaluate import main

    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "ents"})
    docs = [nlp.make_doc("Ada met Bob in Paris") for _ in range(10)]
    for doc in docs:
        doc.ents = [doc.char_span(0, 3, "PER"), doc.char_span(8, 11, "PER"),
                    doc.char_span(15, 20, "LOC")]
    examples = [Example(nlp.make_doc(d.text), d) for d in docs]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(5):
        nlp.update(examples, sgd=optimizer)
    nlp.to_disk(tmp_path / "model")
    DocBin(docs=docs).to_disk(tmp_path / "data.spacy")
    assert main([str(tmp_path / "model"), str(tmp_path / "data.spacy")]) == 0
    out = capsys.readouterr().out
    table = out[out.index("NER (per type)"):]
    assert "PER" in table and "LOC" in table
    assert main([str(tmp_path / "model"), str(tmp_path / "data.spacy"), "-P",
                 "-o", str(tmp_path / "s.json")]) == 0
    assert "crf_tagger: NER (per type)" in capsys.readouterr().out


def test_tables_per_type_cover_every_key_with_rows_of_p_r_f(capsys):
    from spacy_crf.commands.evaluate import print_tables_per_type

    row = {"p": 0.5, "r": 0.25, "f": 1 / 3}
    print_tables_per_type({"morph_per_feat": {"Number": row}, "chunk_per_type": {"NP": row},
                           "spans_sc_per_type": {"X": row}, "ents_per_type": {},
                           "tag_acc": 0.9, "other_per_type": {"A": 0.5}})
    out = capsys.readouterr().out
    assert "MORPH (per feat)" in out and "CHUNK (per type)" in out
    assert "SPANS sc (per type)" in out and "25.00" in out
    assert "NER" not in out and "OTHER" not in out  # empty, or not P / R / F rows
