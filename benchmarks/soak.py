"""Soak: stream many tokens through nlp.pipe; time to first prediction.

    python benchmarks/soak.py --model training/ewt_upos_sample/model-best --tokens 1000000

1. Streams at least ``--tokens`` tokens of Docs (the sample's test sentences,
   shuffled and repeated, with ``--long`` docs of 100,000 tokens mixed in)
   through ``nlp.pipe`` and prints tokens/s and resident memory at the start,
   every ``--report`` tokens, and at the end: memory must not grow beyond a
   small bound.
2. Starts fresh processes that load the pipeline and tag one doc, once with an
   empty numba cache directory (everything compiles) and once with the
   package's cache (``cache=True``), and prints the time to first prediction.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator, List

ROOT = Path(__file__).resolve().parent.parent
FIRST_PREDICTION = """
import time, sys
t0 = time.perf_counter()
import spacy
nlp = spacy.load(sys.argv[1])
doc = nlp("The quick brown fox jumps over the lazy dog .")
print(time.perf_counter() - t0)
"""


def rss_mb() -> float:
    """Resident set size of this process in MB (Linux /proc)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def stream(words: List[List[str]], n_tokens: int, long_every: int, seed: int) -> Iterator[List[str]]:
    rng = random.Random(seed)
    sent = 0
    produced = 0
    while produced < n_tokens:
        if long_every and sent and sent % long_every == 0:
            doc: List[str] = []
            while len(doc) < 100_000:
                doc.extend(rng.choice(words))
            yield doc
            produced += len(doc)
        else:
            doc = rng.choice(words)
            yield doc
            produced += len(doc)
        sent += 1


def soak(model: str, data: Path, n_tokens: int, report: int, long_every: int) -> Dict:
    import spacy
    from spacy.tokens import Doc, DocBin

    nlp = spacy.load(model)
    sents = [[t.text for t in doc] for doc in DocBin().from_disk(data).get_docs(nlp.vocab)]
    list(nlp.pipe([Doc(nlp.vocab, words=w) for w in sents[:20]]))  # warm up
    start_rss = rss_mb()
    rows = [{"tokens": 0, "rss_mb": round(start_rss, 1), "seconds": 0.0}]
    docs = (Doc(nlp.vocab, words=w) for w in stream(sents, n_tokens, long_every, seed=0))
    done, next_report = 0, report
    t0 = time.perf_counter()
    for doc in nlp.pipe(docs, batch_size=1000):
        done += len(doc)
        if done >= next_report:
            rows.append({"tokens": done, "rss_mb": round(rss_mb(), 1),
                         "seconds": round(time.perf_counter() - t0, 2)})
            print(f"{done:>10,} tokens  {done / (time.perf_counter() - t0):>10,.0f} tokens/s  "
                  f"RSS {rss_mb():.0f} MB", flush=True)
            next_report += report
    seconds = time.perf_counter() - t0
    end_rss = rss_mb()
    return {"tokens": done, "seconds": round(seconds, 2), "tokens_per_s": round(done / seconds),
            "rss_start_mb": round(start_rss, 1), "rss_end_mb": round(end_rss, 1),
            "rss_growth_mb": round(end_rss - start_rss, 1), "trace": rows}


def first_prediction(model: str) -> Dict[str, float]:
    env_cold = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="soak_numba_") as empty:
        env_cold["NUMBA_CACHE_DIR"] = empty
        cold = subprocess.run([sys.executable, "-c", FIRST_PREDICTION, model], env=env_cold,
                              capture_output=True, text=True, check=True)
    warm_env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    subprocess.run([sys.executable, "-c", FIRST_PREDICTION, model], env=warm_env,
                   capture_output=True, text=True, check=True)  # fill the package cache
    warm = subprocess.run([sys.executable, "-c", FIRST_PREDICTION, model], env=warm_env,
                          capture_output=True, text=True, check=True)
    return {"cold_cache_s": round(float(cold.stdout.split()[-1]), 2),
            "warm_cache_s": round(float(warm.stdout.split()[-1]), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a trained pipeline with a crf_tagger")
    parser.add_argument("--data", type=Path, default=ROOT / "corpus/ewt_sample/en_ewt-test.spacy",
                        help=".spacy file whose sentences are streamed")
    parser.add_argument("--tokens", type=int, default=1_000_000)
    parser.add_argument("--report", type=int, default=200_000)
    parser.add_argument("--long-every", type=int, default=5000,
                        help="every N docs, one of 100,000 tokens (0: none)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    result = {"soak": soak(args.model, args.data, args.tokens, args.report, args.long_every),
              "first_prediction": first_prediction(args.model)}
    s, f = result["soak"], result["first_prediction"]
    print(f"\nsoak: {s['tokens']:,} tokens in {s['seconds']} s = {s['tokens_per_s']:,} tokens/s; "
          f"RSS {s['rss_start_mb']} MB at start, {s['rss_end_mb']} MB at end "
          f"(growth {s['rss_growth_mb']} MB)")
    print(f"time to first prediction in a fresh process: {f['cold_cache_s']} s with an empty "
          f"numba cache, {f['warm_cache_s']} s with the package's cache")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
