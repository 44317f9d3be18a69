"""UD English EWT with gold trees: chain CRF vs chain + tree features vs tree CRF.

Two labelling tasks, three systems each, trained with ``python -m spacy train``
(one subprocess per system, timed) and evaluated on EWT test. Every system,
at training and at evaluation, reads docs that carry the gold dependency tree
(the augmenter ``spacy-crf.copy_attrs.v1`` copies HEAD and DEP, and for
DEPREL also UPOS, onto the input docs), so the only differences are the
features and the structure of the CRF:

UPOS (target ``pos``)
    chain        ``configs/ewt_upos.cfg`` with the HEAD/DEP augmenter added
                 (same input docs as the others; token features only)
    chain+tree   ``configs/ewt_upos_tree.cfg`` with ``structure = chain``
                 (token + tree features, linear-chain CRF)
    tree         ``configs/ewt_upos_tree.cfg`` (same features, tree CRF: each
                 label interacts with its head's, 8 relation groups)
DEPREL (target ``dep``: relation labels given the gold heads and UPOS)
    chain        ``configs/ewt_deprel_chain.cfg`` (token features only)
    chain+tree   ``configs/ewt_deprel_tree.cfg`` with ``structure = chain``
    tree         ``configs/ewt_deprel_tree.cfg``

For each: test accuracy (``pos_acc`` / ``dep_acc`` of ``nlp.evaluate`` on the
test corpus read through the same augmented ``Corpus``) of ``model-best``,
training wall time of the ``spacy train`` subprocess, decode tokens/s of
``nlp.pipe(docs, batch_size=1000)`` over test docs that carry gold trees
(after a warm-up, best of 3), and the size of the saved pipeline. Pairs of
systems are compared with McNemar's test on the per-token correctness, so the
report can say where the tree structure (tree vs chain+tree, same features)
and the tree features (chain+tree vs chain) help and where they do not.

    python benchmarks/ewt_tree.py --out /tmp/bench_ewt_tree.json         # full run, ~12 min
    python benchmarks/ewt_tree.py --quick --out /tmp/bench_ewt_quick.json  # smoke run, shipped sample

A full run first waits until no other benchmark or ``spacy train`` process is
running (``--no-wait`` to skip), so that its timings are clean.
"""

import argparse
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from common import (
    REPO_ROOT, SHARED_DATA, add_run_arguments, disk_bytes, environment, log, make_summary,
    markdown_table, mb, print_timing_footer, render_summary, run_benchmark, run_isolated,
    summary_row, time_pipe, train_spacy_subprocess,
)

CONFIGS = REPO_ROOT / "configs"
SAMPLE = REPO_ROOT / "assets" / "ewt_sample"
EWT_SUBDIR = Path("ud_english_ewt") / "r2.9"
SPLITS = ("train", "dev", "test")
COMPONENT = "crf_tagger"
GOLD_TREE_AUGMENTER = {"@augmenters": "spacy-crf.copy_attrs.v1", "attrs": ["HEAD", "DEP"]}

# (task, system, config file, structure override or None, add the HEAD/DEP augmenter)
SYSTEMS = [
    ("upos", "chain", "ewt_upos.cfg", None, True),
    ("upos", "chain+tree", "ewt_upos_tree.cfg", "chain", False),
    ("upos", "tree", "ewt_upos_tree.cfg", None, False),
    ("deprel", "chain", "ewt_deprel_chain.cfg", None, False),
    ("deprel", "chain+tree", "ewt_deprel_tree.cfg", "chain", False),
    ("deprel", "tree", "ewt_deprel_tree.cfg", None, False),
]
SCORE_KEY = {"upos": "pos_acc", "deprel": "dep_acc"}
TOKEN_ATTR = {"upos": "pos_", "deprel": "dep_"}


# -- data ------------------------------------------------------------------------

def conllu_files(data_dir: Path, quick: bool) -> Dict[str, Path]:
    if quick:
        return {s: SAMPLE / f"en_ewt-{s}.conllu" for s in SPLITS}
    return {s: data_dir / EWT_SUBDIR / f"en_ewt-ud-{s}.conllu" for s in SPLITS}


def convert(files: Dict[str, Path], workdir: Path) -> Dict[str, Path]:
    """``spacy convert -c conllu -n 1`` (one sentence per doc) into ``workdir/corpus``."""
    src, out = workdir / "conllu", workdir / "corpus"
    src.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    for split, path in files.items():
        shutil.copy(path, src / f"{split}.conllu")
    subprocess.run([sys.executable, "-m", "spacy", "convert", str(src), str(out), "-c", "conllu",
                    "-n", "1"], check=True, capture_output=True, text=True)
    return {split: out / f"{split}.spacy" for split in files}


def system_config(config_name: str, add_augmenter: bool, workdir: Path) -> Path:
    """The shipped config, or a copy of it whose corpora copy the gold trees."""
    path = CONFIGS / config_name
    if not add_augmenter:
        return path
    from spacy import util

    config = util.load_config(path, interpolate=False)
    for corpus in ("train", "dev"):
        config["corpora"][corpus]["augmenter"] = dict(GOLD_TREE_AUGMENTER)
    derived = workdir / (path.stem + "_gold_trees.cfg")
    config.to_disk(derived)
    return derived


def _config_epochs() -> int:
    """training.max_epochs of the shipped configs (they agree)."""
    from spacy import util

    values = {int(util.load_config(CONFIGS / name, interpolate=False)["training"]["max_epochs"])
              for _, _, name, _, _ in SYSTEMS}
    if len(values) != 1:
        raise ValueError(f"the configs disagree on max_epochs: {sorted(values)}; pass --epochs")
    return values.pop()


def augmenter_attrs(config_path: Path) -> List[str]:
    from spacy import util

    config = util.load_config(config_path, interpolate=False)
    return list(config["corpora"]["dev"]["augmenter"]["attrs"])


# -- phases ----------------------------------------------------------------------

def phase_evaluate(model_dir: str, test_path: str, attrs: List[str], key: str, token_attr: str,
                   decode_runs: int, timed: bool) -> Dict[str, Any]:
    """Load a trained pipeline; score it on test docs that carry gold trees, and time
    ``nlp.pipe`` over them. Runs in a fresh process (``run_isolated``)."""
    import spacy
    import srsly
    from spacy.training import Corpus
    from spacy_crf.augmenters import create_copy_attrs

    t0 = time.perf_counter()
    nlp = spacy.load(model_dir)
    load_s = time.perf_counter() - t0
    tagger = nlp.get_pipe(COMPONENT)
    examples = list(Corpus(test_path, augmenter=create_copy_attrs(attrs))(nlp))
    scores = nlp.evaluate(examples, batch_size=1000)
    inputs = [eg.predicted for eg in examples]
    gold = [[getattr(t, token_attr) for t in eg.reference] for eg in examples]
    n_tokens = sum(len(doc) for doc in inputs)

    def fresh() -> list:
        return [doc.copy() for doc in inputs]

    timing = time_pipe(nlp, fresh, decode_runs if timed else 1, warmup_docs=200)
    times, shares, docs = timing["times"], timing["shares"], timing["docs"]
    pred = [[getattr(t, token_attr) for t in doc] for doc in docs]
    correct = [p == g for ps, gs in zip(pred, gold) for p, g in zip(ps, gs) if g]
    heads_kept = all([t.head.i for t in a] == [t.head.i for t in b] for a, b in zip(inputs, docs))
    best = min(times)
    meta = srsly.read_json(Path(model_dir) / "meta.json")
    return {
        "test_acc": scores[key],
        "test_acc_recomputed": sum(correct) / len(correct) if correct else 0.0,
        "correct": correct,  # per token, for the paired tests (not written to JSON)
        "dev_acc_meta": meta.get("performance", {}).get(key),
        "n_test_docs": len(inputs),
        "n_test_tokens": n_tokens,
        "load_s": load_s,
        "decode_s": best,
        "decode_runs_s": times,
        "decode_cpu_share": shares[times.index(best)],
        "decode_tokens_per_s": n_tokens / best if best else None,
        "heads_kept": heads_kept,
        "n_labels": len(tagger.tags),
        "structure": tagger.cfg["structure"],
        "relations": list(tagger.cfg.get("relations") or []),
        "model_bytes": disk_bytes(Path(model_dir)),
        "component_bytes": disk_bytes(Path(model_dir) / COMPONENT),
    }


# -- statistics ------------------------------------------------------------------

def p_text(p: float) -> str:
    """A p-value for people: the normal tail underflows to 0 below ~1e-308."""
    return "< 1e-300" if p < 1e-300 else f"= {p:.2g}"


def mcnemar(a: Sequence[bool], b: Sequence[bool]) -> Dict[str, Any]:
    """McNemar's test (continuity-corrected, normal approximation) of two systems'
    per-token correctness on the same tokens: b_only = B right where A is wrong."""
    if len(a) != len(b):
        raise ValueError("the systems were scored on different tokens")
    a_only = sum(1 for x, y in zip(a, b) if x and not y)
    b_only = sum(1 for x, y in zip(a, b) if y and not x)
    n = a_only + b_only
    z = (abs(b_only - a_only) - 1) / math.sqrt(n) if n else 0.0
    p = math.erfc(max(z, 0.0) / math.sqrt(2)) if n else 1.0
    return {"a_only_correct": a_only, "b_only_correct": b_only, "z": z, "p_value": p}


def compare(results: Dict[str, Dict[str, Any]], task: str, a: str, b: str,
            alpha: float = 0.05) -> Dict[str, Any]:
    ra, rb = results[f"{task}/{a}"]["eval"], results[f"{task}/{b}"]["eval"]
    test = mcnemar(ra["correct"], rb["correct"])
    diff = 100 * (rb["test_acc"] - ra["test_acc"])
    if test["p_value"] < alpha:
        verdict = "helps" if diff > 0 else "hurts"
    else:
        verdict = "no significant difference"
    speed = rb["decode_tokens_per_s"] / ra["decode_tokens_per_s"]
    return {"task": task, "from": a, "to": b, "acc_diff_points": diff, "verdict": verdict,
            "decode_speed_ratio": speed,
            "train_time_ratio": results[f"{task}/{b}"]["train"]["train_s"]
            / results[f"{task}/{a}"]["train"]["train_s"], **test}


# -- driver ----------------------------------------------------------------------

def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA,
                        help=f"folder holding {EWT_SUBDIR}/en_ewt-ud-{{train,dev,test}}.conllu "
                             "(default: %(default)s)")
    parser.add_argument("--out", type=Path, default=None, help="write all results to this JSON file")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run on the shipped sample (assets/ewt_sample: 600 / 200 / 200 "
                             "sentences), 1 epoch, n_buckets 65536")
    parser.add_argument("--epochs", type=int, default=None,
                        help="training.max_epochs of every system (default: the configs' own, "
                             "8; --quick: 1)")
    parser.add_argument("--eval-frequency", type=int, default=None,
                        help="training.eval_frequency (default: 200, about once an epoch on "
                             "full EWT, so model-best is picked near the end; --quick: 5)")
    parser.add_argument("--n-buckets", type=int, default=None,
                        help="override model.n_buckets (default: the configs' 2**20; --quick: 65536)")
    parser.add_argument("--systems", nargs="+", default=None,
                        help="only these systems, e.g. upos/tree deprel/chain (default: all six)")
    add_run_arguments(parser)
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    files = conllu_files(args.data_dir, args.quick)
    wanted = [f"{task}/{name}" for task, name, *_ in SYSTEMS]
    if args.systems:
        unknown = sorted(set(args.systems) - set(wanted))
        if unknown:
            print(f"unknown systems {unknown}: use any of {wanted}", file=sys.stderr)
            return 1
        wanted = [w for w in wanted if w in args.systems]
    return run_benchmark(args, list(files.values()), "bench_ewt_tree_",
                         lambda workdir: run(args, files, wanted, workdir), print_report)


def run(args: argparse.Namespace, files: Dict[str, Path], wanted: List[str],
        workdir: Path) -> Dict[str, Any]:
    epochs = args.epochs or (1 if args.quick else _config_epochs())
    eval_frequency = args.eval_frequency or (5 if args.quick else 200)
    n_buckets = args.n_buckets or (65536 if args.quick else None)
    report: Dict[str, Any] = {
        "benchmark": "ewt_tree",
        "quick": args.quick,
        "data": {s: str(p) for s, p in files.items()},
        "epochs": epochs,
        "eval_frequency": eval_frequency,
        "n_buckets_override": n_buckets,
        "environment": environment(),
    }
    log(f"converting {', '.join(str(p) for p in files.values())}")
    corpus = convert(files, workdir)
    from spacy.tokens import DocBin

    for split, path in corpus.items():
        db = DocBin().from_disk(path)
        report[f"n_{split}_docs"] = len(db)
    results: Dict[str, Dict[str, Any]] = {}
    for task, name, config_name, structure, add_augmenter in SYSTEMS:
        key = f"{task}/{name}"
        if key not in wanted:
            continue
        config = system_config(config_name, add_augmenter, workdir)
        overrides = ["--training.max_epochs", str(epochs),
                     "--training.eval_frequency", str(eval_frequency)]
        if structure:
            overrides += [f"--components.{COMPONENT}.structure", structure]
        if n_buckets:
            overrides += [f"--components.{COMPONENT}.model.n_buckets", str(n_buckets)]
        out = workdir / key.replace("/", "_").replace("+", "_")
        log(f"[{key}] spacy train {config.name} {' '.join(overrides)}")
        train = train_spacy_subprocess(config, out, corpus, overrides,
                                       workdir / f"{out.name}.log", cwd=out.parent)
        attrs = augmenter_attrs(config)
        log(f"    trained in {train['train_s']:.1f}s (CPU share {train['cpu_share']}); evaluating")
        evaluation = run_isolated(phase_evaluate, str(out / "model-best"), str(corpus["test"]),
                                  attrs, SCORE_KEY[task], TOKEN_ATTR[task], args.decode_runs, True)
        last = run_isolated(phase_evaluate, str(out / "model-last"), str(corpus["test"]),
                            attrs, SCORE_KEY[task], TOKEN_ATTR[task], 1, False)
        results[key] = {
            "task": task, "system": name, "config": config_name,
            "structure_override": structure, "augmenter_attrs": attrs,
            "train": train, "eval": evaluation,
            "model_last_test_acc": last["test_acc"],
        }
        log(f"    test {SCORE_KEY[task]} {100 * evaluation['test_acc']:.2f} (model-last "
            f"{100 * last['test_acc']:.2f}), decode {evaluation['decode_tokens_per_s']:,.0f} "
            f"tokens/s, {evaluation['model_bytes'] / 2**20:.1f} MB")
        # keep the disk small: the weights are measured, the models are not needed
        if not args.workdir:
            shutil.rmtree(out, ignore_errors=True)
    comparisons = []
    for task in ("upos", "deprel"):
        for a, b in (("chain", "chain+tree"), ("chain+tree", "tree"), ("chain", "tree")):
            if f"{task}/{a}" in results and f"{task}/{b}" in results:
                comparisons.append(compare(results, task, a, b))
    report["comparisons"] = comparisons
    report["_results"] = results
    report["summary"] = ewt_tree_summary(report, results)
    return report


def ewt_tree_summary(report: Dict[str, Any], results: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The README row of each system (``common.render_summary``)."""
    tasks = {"upos": "EWT UPOS, gold trees", "deprel": "EWT DEPREL given gold heads"}
    names = {"chain": "chain CRF, token features", "chain+tree": "chain CRF + tree features",
             "tree": "tree CRF + tree features"}
    rows = [summary_row(tasks[r["task"]], names[r["system"]], "acc", r["eval"]["test_acc"],
                        r["train"]["train_s"], r["eval"]["decode_tokens_per_s"],
                        r["train"]["peak_rss_mb"], r["eval"]["peak_rss_mb"],
                        r["eval"]["component_bytes"])
            for r in results.values()]
    notes = [f"{report['n_train_docs']:,} train / {report['n_test_docs']:,} test sentences, "
             f"{report['epochs']} epochs, model-best by dev accuracy; every system reads docs "
             "that carry the gold tree"]
    for c in report["comparisons"]:
        if (c["from"], c["to"]) == ("chain", "tree"):
            continue
        what = {"chain+tree": "tree features", "tree": "tree structure"}[c["to"]]
        notes.append(f"{c['task'].upper()}, {what} ({c['from']} -> {c['to']}): "
                     f"{c['acc_diff_points']:+.2f} points, McNemar p {p_text(c['p_value'])} "
                     f"({c['verdict']}); decode at {c['decode_speed_ratio']:.2f}x the speed")
    title = "UD English EWT with gold trees: chain vs tree" + (" (quick)" if report["quick"] else "")
    command = (f"python benchmarks/ewt_tree.py --quick" if report["quick"] else
               f"python benchmarks/ewt_tree.py --out benchmarks/results/ewt_tree.json")
    return make_summary(title, command, rows, notes)


def print_report(report: Dict[str, Any]) -> None:
    results = report.pop("_results")
    print("\n" + render_summary(report["summary"], level=2))
    # per-token vectors are for the paired tests only
    report["systems"] = {k: dict(v, eval={kk: vv for kk, vv in v["eval"].items() if kk != "correct"})
                         for k, v in results.items()}
    title = "UD English EWT r2.9 with gold trees"
    if report["quick"]:
        title += " (QUICK: shipped 600 / 200 / 200 sentence sample)"
    print(f"\n## {title}: chain vs chain + tree features vs tree CRF\n")
    print(f"{report['n_train_docs']} train / {report['n_dev_docs']} dev / {report['n_test_docs']} "
          f"test sentences; {report['epochs']} epochs, eval every {report['eval_frequency']} "
          f"steps, model-best scored on test"
          + (f", n_buckets {report['n_buckets_override']}" if report["n_buckets_override"] else "")
          + ".\n")
    rows = []
    for key, r in report["systems"].items():
        ev, tr = r["eval"], r["train"]
        config = r["config"] + (f" + structure {r['structure_override']}" if r["structure_override"]
                                else "") + (" + HEAD/DEP augmenter" if r["config"] == "ewt_upos.cfg"
                                            else "")
        rows.append([
            r["task"].upper(), r["system"], config, ev["structure"],
            f"{100 * ev['test_acc']:.2f}",
            f"{100 * r['model_last_test_acc']:.2f}",
            f"{100 * ev['dev_acc_meta']:.2f}" if ev["dev_acc_meta"] is not None else "-",
            f"{tr['train_s']:.0f}", f"{ev['decode_tokens_per_s']:,.0f}",
            mb(ev["component_bytes"]),
        ])
    print(markdown_table(["task", "system", "config", "structure", "test acc (best)",
                          "test acc (last)", "dev acc", "train s", "decode tokens/s",
                          "model MB"], rows))
    if report["comparisons"]:
        print("\nPaired comparisons on the test tokens (McNemar, continuity-corrected; "
              "'helps' / 'hurts' at p < 0.05):\n")
        rows = []
        for c in report["comparisons"]:
            rows.append([c["task"].upper(), f"{c['from']} -> {c['to']}",
                         f"{c['acc_diff_points']:+.2f}", f"{c['a_only_correct']} / {c['b_only_correct']}",
                         f"{c['p_value']:.3g}", c["verdict"], f"{c['decode_speed_ratio']:.2f}x",
                         f"{c['train_time_ratio']:.2f}x"])
        print(markdown_table(["task", "change", "acc points", "tokens right only before / after",
                              "p", "verdict", "decode speed", "train time"], rows))
        print()
        for c in report["comparisons"]:
            what = {("chain", "chain+tree"): "adding the tree features to the chain CRF",
                    ("chain+tree", "tree"): "the tree structure instead of the chain, same features",
                    ("chain", "tree"): "tree features + tree structure together, against the chain"
                    }[(c["from"], c["to"])]
            if c["verdict"] == "no significant difference":
                said = (f"does NOT help significantly ({c['acc_diff_points']:+.2f} points, "
                        f"p {p_text(c['p_value'])})")
            else:
                said = f"{c['verdict']} ({c['acc_diff_points']:+.2f} points, p {p_text(c['p_value'])})"
            print(f"- {c['task'].upper()}, {what}: {said}; decode at {c['decode_speed_ratio']:.2f}x "
                  f"the speed, training {c['train_time_ratio']:.2f}x the time.")
    shares = {}
    for key, r in report["systems"].items():
        shares[f"{key} train"] = r["train"]["cpu_share"]
        shares[f"{key} decode"] = r["eval"]["decode_cpu_share"]
    print_timing_footer(report, shares)
    if not all(r["eval"]["heads_kept"] for r in report["systems"].values()):
        print("WARNING: some system changed the heads of the input docs")


if __name__ == "__main__":
    sys.exit(main())
