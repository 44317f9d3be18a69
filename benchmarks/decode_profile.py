"""Where decoding time goes (issue #32): the stages of ``nlp.pipe`` timed apart.

Trains the factory defaults the way the trainers benchmark's plain row does
(``nlp.initialize()``, 5 epochs of ``nlp.update``, batches of 32, shuffle
seed 0), then decodes the test set in batches of 1,000 sentences ``--repeats``
times and reports, per stage, the median seconds and tokens per second:

* ``make docs``: ``Doc(vocab, words=...)`` (spaCy; not part of ``nlp.pipe``);
* ``layout``: the component reads the batch (``read_batch``: sequences);
* ``featurize``: hashing the feature templates (``crf_featurize``);
* ``gather``: the rows of the hashed table summed into emissions
  (``crf_hashed_linear``: ids to rows, then the gather);
* ``potentials``: the label interactions attached, the span constraints;
* ``viterbi``: the structure's MAP kernel;
* ``set annotations``: writing the labels onto the Docs;
* ``nlp.pipe``: the whole call, whose remainder over the stages is spaCy's
  own per-batch and per-doc work.

and, to size what a compact table could gain (the issue's "decode near the
memory limit"), the same gather from a table holding only the rows the test
set touches (``gather, compact table``), as a model trimmed at save could.

    python benchmarks/decode_profile.py --data-dir ../shared/data --task upos
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SHARED_DATA  # noqa: E402
from defaults import read_iob2, task_example, update_loop  # noqa: E402

BATCH = 1000


def read_task(data_dir: Path, task: str):
    """(train, test) sentences of ``task``: EWT r2.9 UPOS or UNER English."""
    from spacy_crf.converters import read_conllu_upos

    if task == "upos":
        ewt = data_dir / "ud_english_ewt" / "r2.9"
        return (read_conllu_upos(ewt / "en_ewt-ud-train.conllu"),
                read_conllu_upos(ewt / "en_ewt-ud-test.conllu"))
    uner = data_dir / "uner_english_ewt"
    return (read_iob2(uner / "en_ewt-ud-train.v0-normalized.iob2"),
            read_iob2(uner / "en_ewt-ud-test.iob2"))


def median_seconds(run: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def profile(task: str, data_dir: Path, repeats: int) -> Dict[str, Any]:
    import numpy as np
    import spacy
    from spacy.tokens import Doc

    from spacy_crf import inference
    from spacy_crf._kernels.emissions import feature_rows, gather_sum

    train, test = read_task(data_dir, task)
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("crf_tagger", config={"target": "pos" if task == "upos" else "ents"})
    examples = [task_example(nlp, task, w, t) for w, t in train]
    train_s, _ = update_loop(nlp, examples, 5, 32)
    words = [w for w, _ in test]
    n_tokens = sum(map(len, words))
    list(nlp.pipe([Doc(nlp.vocab, words=w) for w in words], batch_size=BATCH))  # warm up
    pipe.use_prediction_weights()
    featurize, linear, potentials = pipe.model.layers
    W, b = linear.get_param("W"), linear.get_param("b")

    def batches() -> List[List[Doc]]:
        docs = [Doc(nlp.vocab, words=w) for w in words]
        return [docs[i:i + BATCH] for i in range(0, len(docs), BATCH)]

    parts = batches()
    read = [pipe.read_batch(docs) for docs in parts]
    ids = [featurize.predict(batch) for batch in read]
    emissions = [linear.predict(x) for x in ids]
    scores = [pipe.constrain_scores(potentials.predict(e)) for e in emissions]
    labels = [inference.viterbi(s, batch.layout)[0] for s, batch in zip(scores, read)]
    predictions = [pipe.predict(docs) for docs in parts]
    # the rows the test set touches, renumbered: a table of those rows alone
    rows = [np.empty(x.shape, dtype=np.int64) for x in ids]
    for x, r in zip(ids, rows):
        feature_rows(np.ascontiguousarray(x, dtype=np.uint64), W.shape[0], True, r)
    used, inverse = np.unique(np.concatenate([r.ravel() for r in rows]), return_inverse=True)
    compact_W = np.ascontiguousarray(W[used])
    compact_rows, start = [], 0
    for r in rows:
        compact_rows.append(inverse[start:start + r.size].reshape(r.shape).astype(np.int64))
        start += r.size

    def gather(table, all_rows):
        for r in all_rows:
            gather_sum(table, b, r, W.dtype.type(1.0), np.empty((r.shape[0], W.shape[1]), W.dtype))

    stages = {
        "make docs": lambda: batches(),
        "layout": lambda: [pipe.read_batch(docs) for docs in parts],
        "featurize": lambda: [featurize.predict(pipe.read_batch(docs)) for docs in parts],
        "gather": lambda: [linear.predict(x) for x in ids],
        "potentials": lambda: [pipe.constrain_scores(potentials.predict(e)) for e in emissions],
        "viterbi": lambda: [inference.viterbi(s, batch.layout) for s, batch in zip(scores, read)],
        # (fresh Docs each time: an entity target keeps the entities a Doc has)
        "set annotations": lambda: [pipe.set_annotations(docs, p)
                                    for docs, p in zip(next(fresh), predictions)],
        "nlp.pipe": lambda: list(nlp.pipe([d for docs in next(fresh) for d in docs],
                                          batch_size=BATCH)),
        "gather, full table (ids to rows done)": lambda: gather(W, rows),
        "gather, compact table (ids to rows done)": lambda: gather(compact_W, compact_rows),
    }
    fresh = iter([batches() for _ in range(2 * repeats)])
    seconds = {name: median_seconds(run, repeats) for name, run in stages.items()}
    # featurize's own time: less the layout it re-reads on a fresh batch
    seconds["featurize"] = max(seconds["featurize"] - seconds["layout"], 0.0)
    inner = ("layout", "featurize", "gather", "potentials", "viterbi", "set annotations")
    seconds["spaCy and the rest (nlp.pipe less the stages)"] = max(
        seconds["nlp.pipe"] - sum(seconds[name] for name in inner), 0.0)
    assert sum(map(len, labels)) == n_tokens
    return {"task": task, "tokens": n_tokens, "repeats": repeats, "train_s": train_s,
            "table": {"rows": int(W.shape[0]), "labels": int(W.shape[1]),
                      "MB": W.nbytes / 2**20, "rows_used": int(used.shape[0]),
                      "compact_MB": compact_W.nbytes / 2**20},
            "seconds": seconds,
            "ns_per_token": {k: 1e9 * v / n_tokens for k, v in seconds.items()}}


def print_report(report: Dict[str, Any]) -> None:
    table = report["table"]
    print(f"{report['task']}: {report['tokens']:,} test tokens, median of {report['repeats']} "
          f"runs; hashed table {table['rows']:,} x {table['labels']} ({table['MB']:.0f} MB), "
          f"{table['rows_used']:,} rows used by the test set ({table['compact_MB']:.1f} MB)")
    print("| stage | ms | ns / token | tok/s |\n|---|---|---|---|")
    for name, s in report["seconds"].items():
        rate = report["tokens"] / s if s else float("inf")
        print(f"| {name} | {1e3 * s:.1f} | {report['ns_per_token'][name]:.0f} | {rate:,.0f} |")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA)
    parser.add_argument("--task", choices=["upos", "ner"], nargs="+", default=["upos", "ner"])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args(argv)
    reports = [profile(task, args.data_dir, args.repeats) for task in args.task]
    for report in reports:
        print_report(report)
    if args.out:
        args.out.write_text(json.dumps(reports, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
