"""First-order against second-order chains (``order = 2``), and for CoNLL-2000
both with input-dependent transitions (``transition_templates``,
``configs/conll2000_chunking_transitions.cfg``), in one run.

For CoNLL-2000 chunking, UD English EWT r2.9 UPOS and Universal NER English
EWT (BILUO), the shipped config is trained with ``spacy train`` at
``--components.crf_tagger.structure.order 1`` and ``2`` (one fresh process each, whole
process timed, its own peak RSS), then, in a fresh process, scored on test
(``spacy_crf.evaluate``, inputs copied as training did) and timed decoding the
test docs with ``nlp.pipe`` (best of three runs after a warm-up).

    python benchmarks/orders.py --data-dir ../shared/data --out benchmarks/results/orders.json
    python benchmarks/orders.py --quick --tasks chunk    # small slices, a smoke run
    python benchmarks/orders.py --kernels-only --out benchmarks/results/orders.json

It also times the kernels alone against the number of labels ``L`` (random
scores, 20,000 tokens in sentences of 20): Viterbi and forward-backward of
the first-order chain against the second-order chain with every label pair
kept and with a random 30% of them (CoNLL-2000 keeps 31% and UNER 27%, EWT
UPOS 98%). ``--kernels-only`` runs that part alone and stores it in the
report at ``--out`` (keeping the tasks there).
"""

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (SHARED_DATA, disk_bytes, environment, log, make_summary,  # noqa: E402
                    render_summary, run_isolated, score_and_decode, summary_row, write_json)
from trainers import (CONFIGS, TASKS, UNER_TRAIN, phase_plain_loop, read_task,  # noqa: E402
                      timed_process, to_docbin)

#: the plain loop of the factory-default rows: what trainers.py gives a new user
PLAIN_EPOCHS, PLAIN_BATCH = 5, 32

ORDERS = (1, 2)
#: configs with input-dependent transitions (transition_templates), first order only
TRANSITION_CONFIGS = {"chunk": "conll2000_chunking_transitions.cfg"}
KERNEL_LABELS = (5, 10, 23, 50)
KERNEL_TOKENS, KERNEL_LENGTH = 20000, 20


def time_kernels(n_labels: int, runs: int, seed: int = 0) -> Dict[str, Any]:
    """Microseconds per token of inference.viterbi and inference.marginals, order 1
    against order 2 with all label pairs and with a random 30% of them."""
    import numpy as np

    from spacy_crf import inference
    from spacy_crf.models.potentials import CRFScores
    from spacy_crf.structures import ChainLayout
    from spacy_crf.structures.input_chain import InputChainLayout
    from spacy_crf.structures.second_order import SecondOrderLayout, all_pairs

    rng = np.random.default_rng(seed + n_labels)
    L, n_seqs = n_labels, KERNEL_TOKENS // KERNEL_LENGTH
    N = n_seqs * KERNEL_LENGTH
    scores = CRFScores.of(rng.standard_normal((N, L)), transitions=rng.standard_normal((L, L)),
                          start=rng.standard_normal(L), end=rng.standard_normal(L),
                          pair=np.zeros((1, L, L)), root=np.zeros(L),
                          triples=rng.standard_normal((L + 1, L, L)))
    lengths = np.full(n_seqs, KERNEL_LENGTH, dtype=np.int64)
    pairs = all_pairs(L)
    keep = rng.random(len(pairs)) < 0.3
    keep[:L] = True  # every start pair, so every sequence has labellings
    layouts = {"order 1": (ChainLayout(lengths), scores),
               "order 2, all pairs": (SecondOrderLayout(lengths, pairs), scores),
               "order 2, 30% of pairs": (SecondOrderLayout(lengths, pairs[keep]), scores)}
    if L <= 23:  # (N, L, L) token transitions: 85 MB at 23 labels, 400 MB at 50
        layouts["order 1, transition templates"] = (
            InputChainLayout(lengths), replace(scores, token_transitions=rng.standard_normal((N, L, L))))
    out: Dict[str, Any] = {"labels": L, "tokens": N}
    for name, (layout, given) in layouts.items():
        row = {}
        for what, fn in (("viterbi", inference.viterbi), ("marginals", inference.marginals)):
            fn(given, layout)  # warm up: load the numba cache
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                fn(given, layout)
                times.append(time.perf_counter() - start)
            row[what] = round(1e6 * min(times) / N, 3)
        out[name] = row
        log(f"  L={L:>3} {name:<22} viterbi {row['viterbi']:>9} us/tok, "
            f"marginals {row['marginals']:>9} us/tok")
    return out


def phase_score_and_decode(task: str, model: str, test_path: str, runs: int) -> Dict[str, Any]:
    """Test score and decode speed of a saved pipeline (docs read as training read them)."""
    result = score_and_decode(model, test_path, TASKS[task]["copy"], runs)
    result["n_label_pairs"] = len(result.pop("cfg").get("label_pairs") or [])
    return result


def systems(task: str) -> List[Tuple[str, str, int]]:
    """(name, config, order) of every system of a task: the shipped config at
    each order, and for CoNLL-2000 its variant with transition templates."""
    rows = [(f"order {order}", TASKS[task]["config"], order) for order in ORDERS]
    if task in TRANSITION_CONFIGS:
        rows.insert(1, ("order 1, transition templates", TRANSITION_CONFIGS[task], 1))
        rows.append(("order 2, transition templates", TRANSITION_CONFIGS[task], 2))
    return rows


def run_task(task: str, data_dir: Path, workdir: Path, limit: int, runs: int,
             uner_train: str = UNER_TRAIN) -> Dict[str, Any]:
    sents = read_task(task, data_dir, limit, uner_train)
    corpus = {name: to_docbin(task, s, workdir / f"{task}_{name}.spacy") for name, s in sents.items()}
    every = ["--training.eval_frequency", "20"] if limit else []
    rows: Dict[str, Dict[str, Any]] = {}
    for name, config, order in systems(task):
        out = workdir / f"{task}_{name.replace(' ', '_').replace(',', '')}"
        cmd = [sys.executable, "-m", "spacy", "train", str(CONFIGS / config),
               "--output", str(out), "--paths.train", str(corpus["train"]),
               "--paths.dev", str(corpus["dev"]), "--components.crf_tagger.structure.order", str(order)]
        log(f"{task}: {name}, spacy train")
        result = timed_process(cmd + every, workdir / f"{out.name}.log")
        scored = run_isolated(phase_score_and_decode, task, str(out / "model-best"),
                              str(corpus["test"]), runs)
        result.update({k: v for k, v in scored.items() if k != "peak_rss_mb"})
        result["decode_peak_rss_mb"] = scored["peak_rss_mb"]
        result["model_bytes"] = disk_bytes(out / "model-best")
        rows[name] = result
        log(f"  {100 * result['score']:.2f} in {result['train_s']:.1f} s, "
            f"{result['decode_tokens_per_s']:,.0f} tok/s, {result['n_label_pairs']} label pairs")
    for order in ORDERS:
        # what a new user gets: nlp.add_pipe("crf_tagger", config={"target": ..., "structure":
        # {"@structures": "spacy-crf.Chain.v1", "order": k}}),
        # nlp.initialize() and a plain nlp.update loop, scored and timed as the rows above
        name = f"factory defaults, nlp.update loop, order {order}"
        log(f"{task}: {name}")
        trained = run_isolated(phase_plain_loop, task, sents["train"], sents["test"],
                               PLAIN_EPOCHS, PLAIN_BATCH,
                               {"structure": {"@structures": "spacy-crf.Chain.v1", "order": order}})
        scored = run_isolated(phase_score_and_decode, task, trained["model"],
                              str(corpus["test"]), runs)
        rows[name] = {**{k: v for k, v in scored.items() if k != "peak_rss_mb"},
                      "train_s": trained["train_s"], "peak_rss_mb": trained["peak_rss_mb"],
                      "decode_peak_rss_mb": scored["peak_rss_mb"],
                      "model_bytes": trained["model_bytes"]}
        log(f"  {100 * rows[name]['score']:.2f} in {trained['train_s']:.1f} s")
    return {"n_train_sentences": len(sents["train"]), "systems": rows}


def orders_summary(report: Dict[str, Any]) -> Dict[str, Any]:
    rows, notes = [], []
    for task, result in report["tasks"].items():
        for name, r in result["systems"].items():
            note = (f"{r['n_label_pairs']} label pairs of {r['n_labels']} labels"
                    if r.get("n_label_pairs") else f"{r['n_labels']} labels")
            rows.append(summary_row(TASKS[task]["title"], name, TASKS[task]["metric"], r["score"],
                                    r["train_s"], r["decode_tokens_per_s"], r.get("peak_rss_mb"),
                                    r.get("decode_peak_rss_mb"), r["model_bytes"], note))
        first, second = result["systems"].get("order 1"), result["systems"].get("order 2")
        inputs = result["systems"].get("order 1, transition templates")
        both = result["systems"].get("order 2, transition templates")
        if first and both:
            notes.append(f"{TASKS[task]['title']}: order 2 with transition templates "
                         f"{100 * (both['score'] - first['score']):+.2f} points, "
                         f"{both['train_s'] / first['train_s']:.1f}x the training time, "
                         f"{first['decode_tokens_per_s'] / both['decode_tokens_per_s']:.1f}x "
                         f"slower decoding")
        if first and inputs:
            notes.append(f"{TASKS[task]['title']}: transition templates "
                         f"{100 * (inputs['score'] - first['score']):+.2f} points, "
                         f"{inputs['train_s'] / first['train_s']:.1f}x the training time, "
                         f"{first['decode_tokens_per_s'] / inputs['decode_tokens_per_s']:.1f}x "
                         f"slower decoding")
        if first and second:
            notes.append(f"{TASKS[task]['title']}: order 2 {100 * (second['score'] - first['score']):+.2f} "
                         f"points, {second['train_s'] / first['train_s']:.1f}x the training time, "
                         f"{first['decode_tokens_per_s'] / second['decode_tokens_per_s']:.1f}x "
                         f"slower decoding")
    notes.append("spacy train of the shipped config, the whole process; decoding is nlp.pipe "
                 "over the test docs in a fresh process")
    notes.append(f"factory defaults rows: nlp.add_pipe(\"crf_tagger\", config={{\"target\": ..., "
                 f"\"order\": k}}), nlp.initialize()'s optimizer and a plain nlp.update loop of "
                 f"{PLAIN_EPOCHS} epochs, batches of {PLAIN_BATCH} sentences, on train only; train s "
                 f"is the loop alone; scored and decoded as the shipped-config rows")
    tables = []
    kernels = report.get("kernels")
    if kernels:
        names = list(dict.fromkeys(n for k in kernels for n in k if n not in ("labels", "tokens")))
        tables.append({
            "caption": f"Kernels alone, microseconds per token (Viterbi / forward-backward), "
                       f"random scores, {kernels[0]['tokens']:,} tokens in sentences of "
                       f"{KERNEL_LENGTH} (`{report.get('kernels_command', report['command'])}`):",
            "headers": ["labels", *names],
            "rows": [[str(k["labels"]), *(f"{k[n]['viterbi']} / {k[n]['marginals']}" if n in k
                                          else "" for n in names)] for k in kernels]})
    return make_summary("First against second order", report["command"], rows, notes, tables)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/spacy_crf_orders"))
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--uner-train", default=UNER_TRAIN)
    parser.add_argument("--quick", action="store_true", help="300 sentences per split")
    parser.add_argument("--kernels-only", action="store_true",
                        help="time the kernels only; keep the tasks of the report at --out")
    args = parser.parse_args(argv)
    if args.kernels_only:
        return _kernels_only(args.out)
    args.workdir.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/orders.py" + (" --quick" if args.quick else "")
    if args.tasks != list(TASKS):
        command += " --tasks " + " ".join(args.tasks)
    report: Dict[str, Any] = {"benchmark": "orders", "command": command, "quick": args.quick,
                              "environment": environment(), "tasks": {}}
    start = time.perf_counter()
    for task in args.tasks:
        report["tasks"][task] = run_task(task, args.data_dir, args.workdir,
                                         300 if args.quick else 0, 3, args.uner_train)
    report["kernels"] = [time_kernels(L, 3) for L in KERNEL_LABELS]
    report["benchmark_wall_s"] = time.perf_counter() - start
    report["summary"] = orders_summary(report)
    print(render_summary(report["summary"]))
    write_json(args.out, report)
    return 0


def _kernels_only(out: Optional[Path]) -> int:
    import json

    report = (json.loads(out.read_text(encoding="utf8")) if out is not None and out.exists()
              else {"benchmark": "orders", "command": "python benchmarks/orders.py",
                    "environment": environment(), "tasks": {}})
    report["kernels"] = [time_kernels(L, 3) for L in KERNEL_LABELS]
    report["kernels_command"] = "python benchmarks/orders.py --kernels-only"
    report["kernels_environment"] = environment()
    report["summary"] = orders_summary(report)
    print(render_summary(report["summary"]))
    write_json(out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
