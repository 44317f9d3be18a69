"""Entity confidence on one long doc: seconds and peak memory against length.

``store_confidence`` on a span target gives every predicted entity its exact
probability under the CRF. This script trains a small ``ents`` tagger on a
synthetic corpus (capitalised names are ``PER``, commas are ``O``), then tags
one doc without sentence boundaries in which every other token is a name:
``n`` tokens, ``n / 2`` entities. Each length runs in a fresh process, so the
peak RSS is that of tagging one doc (minus the process's RSS before it).

    python benchmarks/span_confidence.py --lengths 8000 100000
"""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NAMES = ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi"]


def train(out: Path) -> None:
    import random

    import spacy
    from spacy.tokens import Doc
    from spacy.training import Example

    rng = random.Random(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "ents", "store_confidence": True})
    examples = []
    for _ in range(200):
        n = rng.randint(2, 12)
        words = [rng.choice(NAMES) if i % 2 == 0 else "," for i in range(n)]
        iob = ["B-PER" if i % 2 == 0 else "O" for i in range(n)]
        examples.append(Example(Doc(nlp.vocab, words=words), Doc(nlp.vocab, words=words, ents=iob)))
    nlp.initialize(lambda: examples)
    for _ in range(5):
        nlp.update(examples)
    nlp.to_disk(out)


def tag(model: Path, n_tokens: int) -> dict:
    import spacy
    from spacy.tokens import Doc

    nlp = spacy.load(model)
    words = [NAMES[(i // 2) % len(NAMES)] if i % 2 == 0 else "," for i in range(n_tokens)]
    nlp(Doc(nlp.vocab, words=words[:50]))  # load the compiled kernels outside the measurement
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    begin = time.perf_counter()
    doc = nlp(Doc(nlp.vocab, words=words))
    seconds = time.perf_counter() - begin
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    conf = [e._.crf_confidence for e in doc.ents]
    return {"tokens": n_tokens, "entities": len(doc.ents), "seconds": round(seconds, 3),
            "peak_mb_added": round((peak - before) / 1024, 1),
            "min_confidence": round(min(conf), 4) if conf else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[8000, 100000])
    parser.add_argument("--_tag", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._tag:
        print(json.dumps(tag(Path(args._tag[0]), int(args._tag[1]))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "model"
        train(model)
        print(f"{'tokens':>8} {'entities':>9} {'seconds':>8} {'peak MB':>8}")
        for n in args.lengths:
            out = subprocess.run([sys.executable, __file__, "--_tag", str(model), str(n)],
                                 check=True, capture_output=True, text=True).stdout
            row = json.loads(out.strip().splitlines()[-1])
            print(f"{row['tokens']:>8} {row['entities']:>9} {row['seconds']:>8.3f} "
                  f"{row['peak_mb_added']:>8.1f}")


if __name__ == "__main__":
    main()
