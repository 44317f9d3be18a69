"""``nlp.pipe(n_process=2)`` against ``n_process=1``, and where the time goes (issue #49.3).

A UPOS ``crf_tagger`` (factory defaults, 2 epochs of ``nlp.update``) and
spaCy's own ``tagger`` (1 epoch, the anchor) are trained on EWT train. EWT's
sentences (train, dev, test, cycled to ``--tokens`` whitespace tokens) are
piped through each, as one sentence a text and as ``--per`` sentences a text,
with ``n_process`` 1 and 2, each run in a fresh process, the rounds
interleaved so that both sides of a ratio share the machine's load.

Each setting runs twice: as installed, and with srsly's msgpack encoder and
decoder lists looked up once (``--memo``, a diagnosis, not a fix: srsly's
``Packer`` and ``Unpacker`` ask catalogue for them on every call, which scans
every registered function and entry point, ~0.3-0.5 ms; ``Language.pipe``
with ``n_process > 1`` calls ``Doc.to_bytes`` in a worker and
``Doc.from_bytes`` in the main process for every document).

Last, the serialization floor in one process: microseconds per token of the
pipeline itself, of ``Doc.to_bytes`` and of ``Doc.from_bytes`` (srsly's
lookups memoized). The main process deserializes every document alone, so
``n_process=2`` cannot beat ``n_process=1`` by more than
``pipe / max((pipe + to_bytes) / 2, from_bytes)``.

    python benchmarks/n_process.py --out /tmp/n_process.json
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SHARED_DATA, environment, log, markdown_table, write_json  # noqa: E402

EWT = SHARED_DATA / "ud_english_ewt"

#: srsly's encoder / decoder lists looked up once per process (the diagnosis)
MEMO = """
import srsly.msgpack as _m
for _registry in (_m.msgpack_encoders, _m.msgpack_decoders):
    _registry.get_all = (lambda found: lambda: found)(_registry.get_all())
"""

TRAIN = """
import random, sys, time
import spacy
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import minibatch
from spacy_crf.converters import read_conllu_upos
source, out, system, epochs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
nlp = spacy.blank("en")
nlp.add_pipe(system, config={"target": "pos"} if system == "crf_tagger" else {})
key = "pos" if system == "crf_tagger" else "tags"
examples = [Example.from_dict(Doc(nlp.vocab, words=w), {key: t})
            for w, t in read_conllu_upos(source)]
optimizer = nlp.initialize(lambda: examples)
random.seed(0)
for _ in range(epochs):
    random.shuffle(examples)
    for batch in minibatch(examples, size=32):
        nlp.update(batch, sgd=optimizer)
nlp.to_disk(out)
"""

PIPE = """
import json, sys, time
import spacy
model, texts_path, n_process, per = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
nlp = spacy.load(model)
sentences = open(texts_path, encoding="utf8").read().splitlines()
texts = [" ".join(sentences[i:i + per]) for i in range(0, len(sentences), per)]
start = time.perf_counter()
tokens = sum(len(doc) for doc in nlp.pipe(texts, batch_size=max(256 // per, 8), n_process=n_process))
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "tokens": tokens, "tokens_per_s": tokens / seconds}))
"""

FLOOR = MEMO + """
import json, sys, time
import spacy
from spacy.tokens import Doc
model, texts_path, per = sys.argv[1], sys.argv[2], int(sys.argv[3])
nlp = spacy.load(model)
sentences = open(texts_path, encoding="utf8").read().splitlines()[:6000]
texts = [" ".join(sentences[i:i + per]) for i in range(0, len(sentences), per)]
list(nlp.pipe(texts[:50]))
best = {}
for _ in range(3):
    start = time.perf_counter(); docs = list(nlp.pipe(texts)); pipe = time.perf_counter() - start
    start = time.perf_counter(); data = [d.to_bytes() for d in docs]; to_b = time.perf_counter() - start
    start = time.perf_counter(); [Doc(nlp.vocab).from_bytes(b) for b in data]; from_b = time.perf_counter() - start
    n = sum(len(d) for d in docs)
    for name, s in (("pipe", pipe), ("to_bytes", to_b), ("from_bytes", from_b)):
        best[name] = min(best.get(name, 1e9), s / n * 1e6)
print(json.dumps(best))
"""


def python(script: str, *args: str, memo: bool = False) -> Dict[str, Any]:
    """One fresh process running ``script`` (``MEMO`` first if ``memo``); its last line as JSON."""
    proc = subprocess.run([sys.executable, "-c", (MEMO if memo else "") + script, *args],
                          capture_output=True, text=True, timeout=3600)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    lines = proc.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def write_texts(path: Path, n_tokens: int) -> int:
    """EWT's sentences (``# text``), train, dev and test, cycled to ``n_tokens``; how many."""
    sentences = [line[len("# text = "):].strip()
                 for split in ("train", "dev", "test")
                 for line in open(EWT / f"en_ewt-ud-{split}.conllu", encoding="utf8")
                 if line.startswith("# text = ")]
    texts: List[str] = []
    total = 0
    while total < n_tokens:
        texts.append(sentences[len(texts) % len(sentences)])
        total += len(texts[-1].split())
    path.write_text("\n".join(texts), encoding="utf8")
    return len(texts)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=200_000)
    parser.add_argument("--per", type=int, default=20, help="sentences a text, the long setting")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="n_process_"))
    work.mkdir(parents=True, exist_ok=True)
    models = {"crf_tagger": work / "crf", "spaCy tagger": work / "tagger"}
    for (name, path), epochs in zip(models.items(), (2, 1)):
        log(f"training {name}")
        python(TRAIN, str(EWT / "en_ewt-ud-train.conllu"), str(path),
               "crf_tagger" if name == "crf_tagger" else "tagger", str(epochs))
    texts = work / "texts.txt"
    n_texts = write_texts(texts, args.tokens)
    runs: Dict[str, Dict[str, List[float]]] = {}
    for round_ in range(args.rounds):
        for name, path in models.items():
            for per in (1, args.per):
                for memo in (False, True):
                    key = f"{name}, {per} sentence{'s' if per > 1 else ''} a text" + \
                          (", srsly lookups memoized" if memo else "")
                    for n in (1, 2):
                        r = python(PIPE, str(path), str(texts), str(n), str(per), memo=memo)
                        runs.setdefault(key, {}).setdefault(str(n), []).append(r["tokens_per_s"])
                        log(f"round {round_} {key}, n_process={n}: {r['tokens_per_s']:,.0f} tokens/s "
                            f"(load average {os.getloadavg()[0]:.2f})")
    floor = {name: {str(per): python(FLOOR, str(path), str(texts), str(per))
                    for per in (1, args.per)} for name, path in models.items()}
    rows = [[key, " / ".join(f"{x:,.0f}" for x in r["1"]), " / ".join(f"{x:,.0f}" for x in r["2"]),
             " / ".join(f"{b / a:.2f}" for a, b in zip(r["1"], r["2"]))] for key, r in runs.items()]
    print(markdown_table(["setting", "n_process=1 tokens/s", "n_process=2 tokens/s", "ratio"], rows))
    print("\nmicroseconds a token, one process (srsly lookups memoized):")
    for name, by_per in floor.items():
        for per, f in by_per.items():
            bound = f["pipe"] / max((f["pipe"] + f["to_bytes"]) / 2, f["from_bytes"])
            print(f"  {name}, {per} sentence(s) a text: pipe {f['pipe']:.2f}, to_bytes "
                  f"{f['to_bytes']:.2f}, from_bytes {f['from_bytes']:.2f}; n_process=2 at best "
                  f"{bound:.2f}x")
    write_json(args.out, {"benchmark": "n_process", "environment": environment(),
                          "texts": n_texts, "runs": runs, "floor_us_per_token": floor})
    return 0


if __name__ == "__main__":
    sys.exit(main())
