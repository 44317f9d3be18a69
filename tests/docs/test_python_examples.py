"""The Python examples of the README and of docs/usage.md run as written.

The README's quick start, then the usage page's examples in order as one
script (the second builds on the first's imports), each in a fresh process in
a clean folder. The usage page's last example (growing a trained model) is a
sketch over a model and data of one's own (``my_ner``,
``old_and_new_examples``); tests/models/test_grow.py runs what it does.
"""

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # fresh processes

from conftest import ROOT, run_python


def python_blocks(path: Path):
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf8"), flags=re.S)


def run(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_python(["-c", code], cwd, timeout=600)


def test_readme_quick_start_runs(tmp_path):
    (block,) = python_blocks(ROOT / "README.md")
    out = run(block, tmp_path)
    # three (word, tag, confidence) triples, and the pipeline saved
    assert out.stdout.count("(") >= 3 and "'dog'" in out.stdout
    assert (tmp_path / "my_crf" / "crf_tagger" / "model").is_file()


def test_usage_examples_run(tmp_path):
    blocks = python_blocks(ROOT / "docs" / "usage.md")
    assert len(blocks) == 3 and "old_and_new_examples" in blocks[2]  # the sketch, left out
    out = run("\n".join(blocks[:2]), tmp_path)
    assert "('the', " in out.stdout  # the tagger's output
    assert "Globex ORG 1.0" in out.stdout  # the ruler's entity, kept, with probability 1
