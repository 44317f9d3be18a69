"""Corpus annotation on a Dask cluster (``spacy_crf.annotate``) against ``nlp.pipe``.

An entity CRF is trained as a new user would (``nlp.add_pipe("crf_tagger",
config={"target": "ents"})``, ``nlp.initialize()``, 3 epochs of
``nlp.update``) on Universal NER English EWT train. The texts of UNER train,
dev and test, cycled to ``--tokens`` tokens, are written as ``--shards`` JSONL
shards. On the same shards, each system in a fresh process:

* ``nlp.pipe(n_process=1)`` and ``nlp.pipe(n_process=2)`` over every text,
  with ``store_confidence`` on (the marginals annotate writes), tokens/s of
  the pipe loop (loading excluded, reported);
* ``annotate`` with a local cluster of 1 and of 2 workers: tokens/s over the
  whole run and without start-up, start-up (cluster, pipeline load and first
  call on every worker), memory per worker, the driver's peak;
* the per-shard overhead: the same 100,000 tokens as 1 shard and as 100
  (1 worker), ``(t_100 - t_1) / 99``;
* a run over finished output (nothing to do).

From those, an estimate on paper of 1 billion tokens on 100 such machines.

    python benchmarks/scale_out.py --data-dir ../shared/data --out benchmarks/results/scale_out.json
"""

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (SHARED_DATA, environment, log, make_summary, markdown_table,  # noqa: E402
                    run_isolated, write_json)
from defaults import read_iob2  # noqa: E402

UNER = "uner_english_ewt"
UNER_FILES = ("en_ewt-ud-train.v0-normalized.iob2", "en_ewt-ud-dev.iob2", "en_ewt-ud-test.iob2")
OVERHEAD_TOKENS = 100_000


def train_model(data_dir: Path, out: Path) -> Dict[str, Any]:
    """The factory-default entity CRF, 3 epochs of nlp.update, saved to ``out``."""
    import spacy
    from spacy.tokens import Doc
    from spacy.training import Example, biluo_tags_to_spans, iob_to_biluo
    from spacy.util import minibatch

    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "ents"})
    examples = []
    for words, tags in read_iob2(data_dir / UNER / UNER_FILES[0]):
        ref = Doc(nlp.vocab, words=words)
        ref.ents = biluo_tags_to_spans(ref, iob_to_biluo(tags))
        examples.append(Example(Doc(nlp.vocab, words=words), ref))
    start = time.perf_counter()
    optimizer = nlp.initialize(lambda: examples)
    random.seed(0)
    for _ in range(3):
        random.shuffle(examples)
        for batch in minibatch(examples, size=32):
            nlp.update(batch, sgd=optimizer)
    nlp.to_disk(out)
    return {"train_s": time.perf_counter() - start, "train_sentences": len(examples)}


def write_corpus(data_dir: Path, directory: Path, n_tokens: int, n_shards: int) -> Dict[str, Any]:
    """UNER's texts cycled to ``n_tokens`` (whitespace tokens), as ``n_shards`` JSONL shards."""
    from spacy_crf.shard_io import write_rows

    sentences = [" ".join(words) for name in UNER_FILES
                 for words, _ in read_iob2(data_dir / UNER / name)]
    texts, total = [], 0
    while total < n_tokens:
        text = sentences[len(texts) % len(sentences)]
        texts.append(text)
        total += len(text.split())
    directory.mkdir(parents=True, exist_ok=True)
    size = -(-len(texts) // n_shards)
    for k in range(n_shards):
        rows = [{"id": k * size + i, "text": t} for i, t in enumerate(texts[k * size:(k + 1) * size])]
        write_rows(directory / f"part-{k:04d}.jsonl", rows)
    return {"documents": len(texts), "whitespace_tokens": total, "shards": n_shards}


def phase_pipe(model: str, shards: str, n_process: int) -> Dict[str, Any]:
    """nlp.pipe over every text of the shards, confidences stored as annotate stores them."""
    import spacy
    import srsly

    start = time.perf_counter()
    nlp = spacy.load(model)
    nlp.get_pipe("crf_tagger").cfg["store_confidence"] = True
    load_s = time.perf_counter() - start
    texts = [row["text"] for path in sorted(Path(shards).glob("*.jsonl"))
             for row in srsly.read_jsonl(path)]
    start = time.perf_counter()
    n_tokens = sum(len(doc) for doc in nlp.pipe(texts, batch_size=256, n_process=n_process))
    seconds = time.perf_counter() - start
    return {"load_s": load_s, "seconds": seconds, "tokens": n_tokens,
            "tokens_per_s": n_tokens / seconds}


def phase_annotate(model: str, shards: str, output: str, n_workers: int) -> Dict[str, Any]:
    """One annotate run on a fresh local cluster of ``n_workers`` (a fresh output)."""
    from spacy_crf.annotation import annotate

    with open(os.devnull, "w") as quiet:
        report = annotate(Path(model), Path(shards), Path(output), n_workers=n_workers, log=quiet)
    work_s = report.seconds - report.startup_seconds
    return {"seconds": report.seconds, "startup_s": report.startup_seconds, "tokens": report.tokens,
            "documents": report.documents, "tokens_per_s": report.tokens_per_second,
            "tokens_per_s_without_startup": report.tokens / work_s,
            "worker_memory_mb": sorted(report.worker_memory_mb.values()), "ok": report.ok}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA)
    parser.add_argument("--tokens", type=int, default=1_000_000)
    parser.add_argument("--shards", type=int, default=40)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="scale_out_"))
    model = workdir / "model"
    log("training the entity CRF (factory defaults, 3 epochs)")
    trained = run_isolated(train_model, args.data_dir, model)
    corpus = write_corpus(args.data_dir, workdir / "shards", args.tokens, args.shards)
    log(f"corpus: {corpus}")
    runs: Dict[str, Dict[str, Any]] = {}
    for n in (1, 2):
        log(f"nlp.pipe n_process={n}")
        runs[f"nlp.pipe, n_process={n}"] = run_isolated(phase_pipe, str(model),
                                                         str(workdir / "shards"), n)
    for n in (1, 2):
        log(f"annotate, {n} worker(s)")
        runs[f"annotate, {n} worker{'s' if n > 1 else ''}"] = run_isolated(
            phase_annotate, str(model), str(workdir / "shards"), str(workdir / f"out{n}"), n)
    log("run over finished output")
    noop = run_isolated(phase_annotate, str(model), str(workdir / "shards"), str(workdir / "out2"), 2)
    log("per-shard overhead: 100,000 tokens as 1 and as 100 shards, 1 worker")
    overhead = {}
    for k in (1, 100):
        write_corpus(args.data_dir, workdir / f"small{k}", OVERHEAD_TOKENS, k)
        overhead[k] = run_isolated(phase_annotate, str(model), str(workdir / f"small{k}"),
                                   str(workdir / f"small{k}_out"), 1)
    per_shard_s = ((overhead[100]["seconds"] - overhead[100]["startup_s"])
                   - (overhead[1]["seconds"] - overhead[1]["startup_s"])) / 99

    two = runs["annotate, 2 workers"]
    rate = two["tokens_per_s_without_startup"]
    machines, total, shard_tokens = 100, 10**9, 10**6
    per_machine = total / machines
    hours = (two["startup_s"] + per_machine / rate + (per_machine / shard_tokens) * per_shard_s) / 3600
    estimate = {
        "machines": machines, "tokens": total, "hours": hours,
        "cluster_tokens_per_s": total / (hours * 3600),
        "assumptions": [
            "100 machines like this one (2 cores), 2 workers each, at the 2-worker rate measured "
            "here without start-up",
            "1,000 shards of 1 million tokens, spread evenly (10 per machine), each paying the "
            "measured per-shard overhead",
            "start-up once per worker, as measured; the scheduler and a shared file system keep "
            "up (not measured here)",
            "no lost workers; a lost one redoes at most the shards it held"],
    }
    rows = []
    for name, r in runs.items():
        memory = r.get("worker_memory_mb")
        rows.append([name, f"{r['tokens_per_s']:,.0f}",
                     f"{r.get('tokens_per_s_without_startup', r['tokens_per_s']):,.0f}",
                     f"{r.get('startup_s', r.get('load_s', 0.0)):.1f}",
                     " / ".join(f"{m:.0f}" for m in memory) if memory else "",
                     f"{r['peak_rss_mb']:.0f}"])
    headers = ["system", "tokens/s", "tokens/s without start-up", "start-up s",
               "memory per worker MB", "driver peak MB"]
    print(markdown_table(headers, rows))
    notes = [f"{corpus['documents']:,} documents, {runs['annotate, 1 worker']['tokens']:,} spaCy tokens "
             f"in {corpus['shards']} JSONL shards (UNER English EWT texts, cycled); the entity CRF "
             f"trained in {trained['train_s']:.1f} s.",
             "nlp.pipe stores confidences as annotate does; its start-up is the pipeline load "
             "(annotate's: the cluster, the load and a first call on every worker).",
             f"Per-shard overhead: {per_shard_s * 1000:.0f} ms (100,000 tokens as 100 shards "
             "against 1 shard, 1 worker).",
             f"A run over finished output: {noop['seconds']:.2f} s, nothing started.",
             f"On paper, 1 billion tokens on 100 such machines with 2 workers each: "
             f"{hours * 60:.1f} minutes ({estimate['cluster_tokens_per_s']:,.0f} tokens/s for the "
             "cluster), assuming the scheduler and a shared file system keep up; the other "
             "assumptions are in the JSON."]
    summary = make_summary("Annotating on a Dask cluster",
                           "python benchmarks/scale_out.py --out benchmarks/results/scale_out.json",
                           [], notes, [{"caption": "Same shards, each system in a fresh process:",
                                        "headers": headers, "rows": rows}])
    for note in notes:
        print(f"- {note}")
    write_json(args.out, {"benchmark": "scale_out", "environment": environment(),
                          "corpus": corpus, "training": trained, "runs": runs,
                          "noop": noop, "overhead": {str(k): v for k, v in overhead.items()},
                          "per_shard_s": per_shard_s, "estimate": estimate, "summary": summary,
                          "benchmark_wall_s": time.perf_counter() - began})
    return 0


if __name__ == "__main__":
    sys.exit(main())
