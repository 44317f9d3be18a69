"""The documented commands run as written, in order, from a clean working folder.

Every ``bash`` block of docs/usage.md from "Training from a config" on (the
section that was the README's until the README was cut down) is run as one
script, with the shipped sample standing in for the full corpora in the layout
the page names (``DATA``): UD English EWT and Universal NER English EWT from
``assets/ewt_sample`` (the first ``SENTENCES`` of each split: the script checks
that the commands run and write what they should, not how well they learn, and
every command reads, trains on and writes less), a CoNLL-2000-format file
derived from those sentences' XPOS (CoNLL-2000 itself is research-only and is
not shipped), and CoNLL-2003 style ``esp.*`` files for the ``conll`` converter.
The only edits: ``DATA``
points at that folder, ``spacy train`` runs one epoch with a smaller table (spaCy's
parser, which the CRF after it only needs to exist, 40 steps), and
``spacy_crf.fit`` runs 5 iterations, to keep the suite fast.
"""

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

#: end to end (minutes of training): out of the fast subset, pytest -m "not slow"
pytestmark = pytest.mark.slow

from conftest import ROOT
EWT = ROOT / "assets" / "ewt_sample"
USAGE = ROOT / "docs" / "usage.md"

CHUNK_OF_UPOS = {"NOUN": "NP", "PROPN": "NP", "PRON": "NP", "DET": "NP", "ADJ": "NP", "NUM": "NP",
                 "VERB": "VP", "AUX": "VP", "ADP": "PP"}



def readme_blocks():
    """The ``bash`` blocks of docs/usage.md after the heading "## Training from a config"."""
    text = USAGE.read_text(encoding="utf8")
    start = text.index("## Training from a config")
    return re.findall(r"```bash\n(.*?)```", text[start:], flags=re.S)


#: sentences of each split of the sample the script runs on (of 600 / 200 / 200):
#: UNER's files and the CoNLL-U trees share their order, so the join still
#: finds every sentence by its sent_id
SENTENCES = {"train": 60, "dev": 20, "test": 20}


def first_sentences(path: Path, n: int) -> str:
    """The first ``n`` sentences (blank-line separated blocks) of a CoNLL-U or IOB2 file."""
    blocks = path.read_text(encoding="utf8").strip().split("\n\n")
    assert len(blocks) > n, path
    return "\n\n".join(blocks[:n]) + "\n\n"


def chunk_file(conllu: str) -> str:
    """CoNLL-2000 ``WORD POS CHUNK`` lines from CoNLL-U text (chunks from UPOS runs)."""
    sentences = []
    for block in conllu.strip().split("\n\n"):
        rows = [line.split("\t") for line in block.splitlines() if line and line[0].isdigit()]
        rows = [r for r in rows if r[0].isdigit()]
        lines, previous = [], "O"
        for r in rows:
            kind = CHUNK_OF_UPOS.get(r[3], "O")
            tag = "O" if kind == "O" else ("I-" if previous == kind and kind != "PP" else "B-") + kind
            lines.append(f"{r[1]} {r[4]} {tag}")
            previous = kind
        sentences.append("\n".join(lines))
    return "\n\n".join(sentences) + "\n"


def make_data(data: Path) -> None:
    ewt, r29, uner, chunks = (data / "ud_english_ewt", data / "ud_english_ewt" / "r2.9",
                              data / "uner_english_ewt", data / "conll2000")
    for folder in (ewt, r29, uner, chunks):
        folder.mkdir(parents=True)
    conllu = {split: first_sentences(EWT / f"en_ewt-{split}.conllu", n)
              for split, n in SENTENCES.items()}
    iob2 = {split: first_sentences(EWT / f"en_ewt-{split}.iob2", n)
            for split, n in SENTENCES.items()}
    for split in SENTENCES:
        for folder in (ewt, r29):
            (folder / f"en_ewt-ud-{split}.conllu").write_text(conllu[split], encoding="utf8")
    (uner / "en_ewt-ud-train.v0-normalized.iob2").write_text(iob2["train"], encoding="utf8")
    for split in ("dev", "test"):
        (uner / f"en_ewt-ud-{split}.iob2").write_text(iob2[split], encoding="utf8")
    (chunks / "train.txt").write_text(chunk_file(conllu["train"]), encoding="utf8")
    (chunks / "test.txt").write_text(chunk_file(conllu["dev"]), encoding="utf8")


def shortened(script: str, data: Path) -> str:
    script = script.replace("DATA=../shared/data", f"DATA={data}")
    lines = []
    for line in script.splitlines():
        if "-m spacy train " in line:
            line += " --training.max_epochs 1"
            if "ewt_parser.cfg" in line:  # spaCy's parser: no crf_tagger to shrink
                line += " --training.max_steps 40"  # (the last of an option given twice counts)
            elif "tree_after_parser.cfg" in line:  # the experts' architecture holds the CRF
                line += " --components.crf_tagger.model.crf.n_buckets 65536"
            else:
                line += " --components.crf_tagger.model.n_buckets 65536"
        lines.append(line.replace("--max-iterations 100", "--max-iterations 5"))
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("readme")
    data = work / "data"
    make_data(data)
    (work / "clone").mkdir()
    clone = work / "clone"
    (clone / "configs").symlink_to(ROOT / "configs")
    venv_python = clone / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    venv_python.chmod(venv_python.stat().st_mode | stat.S_IEXEC)
    for split in ("esp.train", "esp.testa", "esp.testb"):
        (clone / split).symlink_to(ROOT / "tests" / "assets" / "conll2003_style.txt")
    blocks = readme_blocks()
    assert "DATA=../shared/data" in blocks[0]
    script = "set -euo pipefail\n" + "".join(shortened(b, data) for b in blocks)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    proc = subprocess.run(["bash", "-c", script], cwd=str(clone), capture_output=True,
                          text=True, timeout=900, env=env)
    return {"proc": proc, "clone": clone, "blocks": blocks, "script": script}


def test_readme_shows_the_data_preparation_commands():
    joined = "".join(readme_blocks())
    for needle in ("mkdir -p corpus", "spacy convert", "spacy_crf.convert uner",
                   "spacy_crf.convert chunks", "spacy_crf.convert conll", "spacy train",
                   "spacy_crf.evaluate", "spacy_crf.plots", "spacy_crf.fit"):
        assert needle in joined, needle


def test_readme_commands_run_in_order(readme_run):
    proc = readme_run["proc"]
    assert proc.returncode == 0, (f"{readme_run['script']}\nSTDOUT:\n{proc.stdout[-4000:]}\n"
                                  f"STDERR:\n{proc.stderr[-4000:]}")
    clone = readme_run["clone"]
    for path in ("corpus/ewt/en_ewt-ud-train.spacy", "corpus/uner/train.spacy",
                 "corpus/uner/dev.spacy", "corpus/conll2000/test.spacy",
                 "training/ewt_upos/model-best", "training/uner/model-best",
                 "training/conll2000/model-best", "training/fit/model-best",
                 "corpus/conll2002/esp.testb.spacy", "plots/confusion.png",
                 "training/ewt_parser/model-best", "training/ewt_upos_after_parser/model-best"):
        assert (clone / path).exists(), path
    stdout = " ".join(proc.stdout.split())  # wasabi wraps its lines at 80 columns
    assert "Joined en_ewt-ud-train.v0-normalized.iob2 to en_ewt-ud-train.conllu on sent_id" \
        in stdout
    assert "Copying ['TAG'] from the corpus" in stdout
    log = (clone / "training" / "ewt_upos" / "train_log.jsonl").read_text().splitlines()
    assert log and "pos_acc" in log[-1]
