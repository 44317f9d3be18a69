"""The package's command lines as ``spacy`` subcommands (the ``spacy_cli`` entry point)."""

import subprocess
import sys

import spacy
from spacy.tokens import Doc, DocBin

from spacy_crf.cli import COMMANDS


def spacy_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "spacy", *map(str, args)], capture_output=True,
                          text=True, cwd=str(cwd), timeout=300)


def test_spacy_lists_every_command(tmp_path):
    out = spacy_cli("--help", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    for name in COMMANDS:
        assert name in out.stdout


def test_a_subcommand_is_the_module_cli_with_its_options_and_exit_codes(tmp_path):
    # a usage error: exit 2 with argparse's message, as python -m spacy_crf.evaluate gives
    out = spacy_cli("crf-evaluate", cwd=tmp_path)
    assert out.returncode == 2 and "the following arguments are required" in out.stderr
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
    failed = shards("bad", "--n-shards", "0")  # a usage error: argparse's, exit code 2
    assert failed.returncode == 2 and failed.stdout == ""
    assert "--n-shards must be >= 1, not 0" in failed.stderr
