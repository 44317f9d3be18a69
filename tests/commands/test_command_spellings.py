"""Every command answers ``--help`` under both its spellings since the command
modules moved to ``spacy_crf.commands`` (issue #50): ``python -m spacy crf-NAME``
and the top-level ``python -m spacy_crf.NAME`` kept from before the move."""

import importlib
import subprocess
import sys

import pytest

from spacy_crf.commands import COMMANDS, PYTHON_M


def test_every_command_has_a_python_m_spelling_that_runs_its_main():
    assert set(PYTHON_M) == set(COMMANDS)
    for name, alias in PYTHON_M.items():
        if alias in ("spacy_crf.plots", "spacy_crf.shard_io"):
            continue  # library code whose __main__ runs the command (the slow tests below)
        assert importlib.import_module(alias).main is importlib.import_module(COMMANDS[name]).main


def help_of(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args, "--help"], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow  # a fresh process per spelling: about 2 s each
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_python_m_of_the_old_module_answers_help(name):
    out = help_of(PYTHON_M[name])
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"Usage: python -m {PYTHON_M[name]} "), out.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_spacy_subcommand_answers_help(name):
    out = help_of("spacy", name)
    assert out.returncode == 0, out.stderr
    assert f" {name} " in out.stdout.splitlines()[0], out.stdout
