"""benchmarks/plots.py on a tiny trained pipeline: PNGs and the confidence HTML."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import spacy
from spacy.tokens import DocBin
from spacy.training import Example

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parent.parent
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_plots_write_valid_pngs_and_html(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": {"templates": ["NORM[-1..1]"], "n_buckets": 1024}})
    texts = [("the cat sat", ["DT", "NN", "VBD"]), ("a dog ran home", ["DT", "NN", "VBD", "NN"])]
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in texts]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(10):
        nlp.update(examples, sgd=optimizer)
    nlp.to_disk(tmp_path / "model")
    DocBin(docs=[eg.reference for eg in examples]).to_disk(tmp_path / "data.spacy")
    out = tmp_path / "plots"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "plots.py"), "--model",
                    str(tmp_path / "model"), "--data", str(tmp_path / "data.spacy"),
                    "--out", str(out)], check=True, capture_output=True, text=True)
    for name in ("transitions.png", "confusion.png"):
        data = (out / name).read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 2000, name
    html = (out / "confidence.html").read_text(encoding="utf8")
    # every token of the first doc, with its predicted and gold tag and a confidence
    tokens = re.findall(r'title="predicted: (\S+) \| gold: (\S+) \| confidence: ([0-9.]+)">'
                        r'<span class="w">([^<]*)</span>', html)
    assert [t[3] for t in tokens[:3]] == ["the", "cat", "sat"]
    assert [t[1] for t in tokens[:3]] == ["DT", "NN", "VBD"]
    assert all(0.0 <= float(t[2]) <= 1.0 for t in tokens)
