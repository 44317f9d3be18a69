"""CoNLL-2000 chunking: sklearn-crfsuite vs spacy-crf's FeatureCRF, side by side.

Both systems use CRFsuite's chunking feature template (words and POS at
-2..+2, word bigrams around the token, POS bigrams and trigrams) and are
scored with conlleval's chunk F1 on test.txt. Each phase runs in its own
fresh process, one after the other, so peak RSS is per phase and the two
cores are never shared:

1. sklearn-crfsuite: L-BFGS, c1=0 (CRFsuite's default, as its
   example/chunking.py is run), c2=1.0, 100 iterations.
2. spacy-crf: ``configs/conll2000_chunking.cfg`` trained in process with
   spaCy's training API, then ``spacy.load`` of model-last and
   ``nlp.pipe`` over test Docs that carry words and POS tags.
3. hash collisions: the same config at several ``n_buckets``; distinct
   hashed features of the training set and the share of them that share a
   bucket.

    python benchmarks/conll2000.py --out /tmp/bench_conll2000.json
    python benchmarks/conll2000.py --quick --out /tmp/quick.json   # smoke run
"""

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from common import (
    REPO_ROOT, SHARED_DATA, add_run_arguments, chunk_prf, disk_bytes, environment, log,
    make_summary, markdown_table, mb, print_timing_footer, read_columns, render_summary,
    run_in_workdir, run_isolated, seqeval_f1, summary_row, time_pipe, token_accuracy, train_spacy,
)

DEFAULT_CONFIG = REPO_ROOT / "configs" / "conll2000_chunking.cfg"
DEFAULT_DATA = SHARED_DATA / "conll2000"
QUICK_TRAIN, QUICK_TEST = 1000, 300
COMPONENT = "crf_tagger"

# -- phases (each runs in a fresh process) -----------------------------------

def phase_crfsuite(train_path: str, test_path: str, train_limit: int, test_limit: int,
                   params: Dict[str, Any], workdir: str, decode_runs: int) -> Dict[str, Any]:
    """sklearn-crfsuite with CRFsuite's chunking attributes (``crfsuite_peer``)."""
    from crfsuite_peer import chunking_features, fit_and_decode

    train = read_columns(Path(train_path), train_limit)
    test = read_columns(Path(test_path), test_limit)
    run = fit_and_decode(train, [[c[2] for c in s] for s in train], test, chunking_features,
                         params, str(Path(workdir) / "crfsuite_chunking.model"),
                         decode_runs=decode_runs, predict_only=True)
    gold = [[c[2] for c in s] for s in test]
    pred = run["pred"]
    return {
        "params": params,
        "n_train_sentences": len(train),
        "n_train_tokens": sum(len(s) for s in train),
        "n_test_sentences": len(test),
        **{key: run[key] for key in (
            "n_test_tokens", "featurize_train_s", "train_s", "train_cpu_share", "iterations",
            "final_loss", "active_features", "num_attributes", "model_bytes", "decode_s",
            "decode_runs_s", "decode_cpu_share", "decode_tokens_per_s", "predict_only_s",
            "predict_only_tokens_per_s")},
        "chunk_prf": chunk_prf(gold, pred),
        "seqeval_f1": seqeval_f1(gold, pred),
        "token_accuracy": token_accuracy(gold, pred),
    }


def phase_spacy_train(config_path: str, output_dir: str, overrides: Dict[str, Any],
                      log_path: str) -> Dict[str, Any]:
    result = train_spacy(Path(config_path), Path(output_dir), overrides, Path(log_path))
    model_last = Path(output_dir) / "model-last"
    result["model_bytes"] = disk_bytes(model_last / COMPONENT)
    result["model_last_bytes"] = disk_bytes(model_last)
    result["log"] = re.sub(r"\x1b\[[0-9;]*m", "", Path(log_path).read_text(encoding="utf8"))
    return result


def phase_spacy_decode(model_dir: str, test_path: str, test_limit: int,
                       decode_runs: int) -> Dict[str, Any]:
    import spacy
    from spacy.tokens import Doc

    t0 = time.perf_counter()
    nlp = spacy.load(model_dir)
    load_s = time.perf_counter() - t0
    target = nlp.get_pipe(COMPONENT).cfg["target"]
    if not target.startswith("_."):
        raise ValueError(f"expected an extension target, the model has {target!r}")
    attr = target[2:]
    test = read_columns(Path(test_path), test_limit)
    gold = [[c[2] for c in s] for s in test]

    def make_docs() -> List[Doc]:
        return [Doc(nlp.vocab, words=[c[0] for c in s], tags=[c[1] for c in s]) for s in test]

    # numba kernels load (or compile) on first use: not part of the timing
    timing = time_pipe(nlp, make_docs, decode_runs, warmup_docs=16)
    warmup_s, times, shares, docs = (timing[k] for k in ("warmup_s", "times", "shares", "docs"))
    pred = [[tok._.get(attr) for tok in doc] for doc in docs]
    n_tokens = sum(len(s) for s in test)
    return {
        "load_s": load_s,
        "warmup_s": warmup_s,
        "n_test_sentences": len(test),
        "n_test_tokens": n_tokens,
        "decode_s": min(times),
        "decode_runs_s": times,
        "decode_cpu_share": shares[times.index(min(times))],
        "decode_tokens_per_s": n_tokens / min(times),
        "chunk_prf": chunk_prf(gold, pred),
        "seqeval_f1": seqeval_f1(gold, pred),
        "token_accuracy": token_accuracy(gold, pred),
    }


def phase_count_features(train_spacy: str, templates: List[str],
                         n_buckets: Sequence[int]) -> Dict[str, Any]:
    import numpy as np
    from spacy.tokens import DocBin
    from spacy.vocab import Vocab
    from spacy_crf.features.extract import extract_features
    from spacy_crf.features.templates import FeatureTemplates

    parsed = FeatureTemplates(templates)
    docs = list(DocBin().from_disk(train_spacy).get_docs(Vocab()))
    t0 = time.perf_counter()
    ids = extract_features(docs, parsed)
    extract_s = time.perf_counter() - t0
    distinct = np.unique(ids)
    n = int(distinct.shape[0])
    per_template = {name: int(np.unique(ids[:, k]).shape[0])
                    for k, name in enumerate(parsed.names)}
    buckets = {}
    for nb in n_buckets:
        _, counts = np.unique(distinct % np.uint64(nb), return_counts=True)
        shared = int(counts[counts > 1].sum())
        buckets[str(nb)] = {
            "n_buckets": int(nb),
            "buckets_used": int(counts.shape[0]),
            "features_sharing_a_bucket": shared,
            "fraction_sharing": shared / n if n else 0.0,
            # what a uniform hash gives: P(one of the n-1 others lands in my bucket)
            "fraction_expected_uniform": 1.0 - (1.0 - 1.0 / nb) ** (n - 1) if n else 0.0,
        }
    return {
        "n_tokens": int(ids.shape[0]),
        "n_templates": len(parsed),
        "n_distinct_features": n,
        "distinct_per_template": per_template,
        "extract_s": extract_s,
        "buckets": buckets,
    }


# -- driver ------------------------------------------------------------------

def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA,
                        help="folder with CoNLL-2000 train.txt and test.txt (default: %(default)s)")
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG,
                        help="spacy-crf training config (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=None, help="write all results to this JSON file")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: first {QUICK_TRAIN} train / {QUICK_TEST} test sentences")
    parser.add_argument("--n-buckets", type=int, nargs="+", default=[2**18, 2**20, 2**22],
                        help="n_buckets values for the collision study (default: 2**18 2**20 2**22)")
    parser.add_argument("--skip-collisions", action="store_true", help="skip the collision study")
    add_run_arguments(parser, wait=False)
    parser.add_argument("--crfsuite-max-iterations", type=int, default=100)
    parser.add_argument("--tagger-max-steps", type=int, default=None,
                        help="steps of spaCy's tagger over the chunk tags (default 2000, --quick "
                             "200; 0 skips it)")
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    wall0 = time.perf_counter()
    train_path, test_path = args.data_dir / "train.txt", args.data_dir / "test.txt"
    for path in (train_path, test_path, args.config):
        if not path.exists():
            print(f"not found: {path}", file=sys.stderr)
            return 1
    train_limit, test_limit = (QUICK_TRAIN, QUICK_TEST) if args.quick else (0, 0)
    if args.tagger_max_steps is None:
        args.tagger_max_steps = 200 if args.quick else 2000
    def run_here(workdir: Path) -> Dict[str, Any]:
        return run(args, train_path, test_path, train_limit, test_limit, workdir)

    return run_in_workdir(args, "bench_conll2000_", run_here, print_report, wall0)


def run(args: argparse.Namespace, train_path: Path, test_path: Path, train_limit: int,
        test_limit: int, workdir: Path) -> Dict[str, Any]:
    from spacy import util
    from spacy.tokens import DocBin
    from spacy_crf.converters import convert_chunks

    config = util.load_config(args.config, interpolate=False)
    model_cfg = config["components"][COMPONENT]["model"]
    config_buckets, templates = int(model_cfg["n_buckets"]), list(model_cfg["templates"])
    report: Dict[str, Any] = {
        "benchmark": "conll2000_chunking",
        "quick": args.quick,
        "data_dir": str(args.data_dir),
        "config": str(args.config),
        "environment": environment(),
    }

    log("converting the corpus to .spacy (convert_chunks)")
    corpus = {}
    for split, path, limit in (("train", train_path, train_limit), ("test", test_path, test_limit)):
        docs = convert_chunks(path.read_text(encoding="utf8"))
        docs = docs[:limit] if limit else docs
        corpus[split] = workdir / f"{split}.spacy"
        DocBin(docs=docs, store_user_data=True).to_disk(corpus[split])
        report[f"n_{split}_sentences"] = len(docs)
        report[f"n_{split}_tokens"] = sum(len(d) for d in docs)
    log(f"train {report['n_train_sentences']} sentences / {report['n_train_tokens']} tokens, "
        f"test {report['n_test_sentences']} / {report['n_test_tokens']}")

    params = {"algorithm": "lbfgs", "c1": 0.0, "c2": 1.0,
              "max_iterations": args.crfsuite_max_iterations}
    log(f"[1] sklearn-crfsuite {params}")
    report["crfsuite"] = run_isolated(phase_crfsuite, str(train_path), str(test_path), train_limit,
                                      test_limit, params, str(workdir), args.decode_runs)
    _log_system("crfsuite", report["crfsuite"], report["crfsuite"])

    def train_and_decode(n_buckets: int, decode_runs: int) -> Dict[str, Any]:
        out_dir = workdir / f"spacy_crf_{n_buckets}"
        overrides = {"paths.train": str(corpus["train"]), "paths.dev": str(corpus["test"]),
                     f"components.{COMPONENT}.model.n_buckets": n_buckets}
        train = run_isolated(phase_spacy_train, str(args.config), str(out_dir), overrides,
                             str(workdir / f"train_{n_buckets}.log"))
        decode = run_isolated(phase_spacy_decode, str(out_dir / "model-last"), str(test_path),
                              test_limit, decode_runs)
        _log_system(f"spacy-crf n_buckets={n_buckets}", train, decode)
        return {"n_buckets": n_buckets, "train": train, "decode": decode}

    log(f"[2] spacy-crf FeatureCRF ({args.config.name}, n_buckets={config_buckets})")
    report["spacy_crf"] = train_and_decode(config_buckets, args.decode_runs)

    if not args.skip_collisions:
        log(f"[3] hash collisions, n_buckets={args.n_buckets}")
        features = run_isolated(phase_count_features, str(corpus["train"]), templates, args.n_buckets)
        log(f"    {features['n_distinct_features']} distinct hashed features in training "
            f"({features['n_templates']} templates)")
        runs = []
        for nb in args.n_buckets:
            if nb == config_buckets:
                log(f"    n_buckets={nb}: the run of [2]")
                runs.append(dict(report["spacy_crf"], reused_from="spacy_crf"))
            else:
                runs.append(train_and_decode(nb, 1))
        report["collisions"] = {"features": features, "runs": runs}

    if args.tagger_max_steps:
        report["spacy_tagger"] = run_spacy_tagger(args, train_path, test_path, train_limit,
                                                  test_limit, corpus, workdir)

    sc, ours = report["crfsuite"], report["spacy_crf"]
    report["ratios"] = {
        "decode_tokens_per_s_ours_over_crfsuite":
            ours["decode"]["decode_tokens_per_s"] / sc["decode_tokens_per_s"],
        "train_s_ours_over_crfsuite": ours["train"]["total_s"] / sc["train_s"],
        "train_updates_only_s_ours_over_crfsuite":
            ours["train"]["updates_only_s_est"] / sc["train_s"],
        "f1_ours_minus_crfsuite_points":
            100 * (ours["decode"]["chunk_prf"]["f"] - sc["chunk_prf"]["f"]),
        "model_bytes_ours_over_crfsuite": ours["train"]["model_bytes"] / sc["model_bytes"],
        # the same by CPU time (process time), which other processes on the
        # machine inflate less than wall time (all timed code is single-threaded)
        "decode_tokens_per_cpu_s_ours_over_crfsuite":
            _per_cpu_s(ours["decode"]) / _per_cpu_s(sc),
        "train_cpu_s_ours_over_crfsuite":
            ours["train"]["total_s"] * ours["train"]["cpu_share"] / (sc["train_s"] * sc["train_cpu_share"]),
    }
    report["summary"] = conll2000_summary(report)
    return report


def conll2000_summary(report: Dict[str, Any]) -> Dict[str, Any]:
    """The README row of each system (``common.render_summary``)."""
    sc, ours = report["crfsuite"], report["spacy_crf"]
    task = "CoNLL-2000 chunks"
    rows = [summary_row(
        task, f"sklearn-crfsuite (L-BFGS, c1 = 0, c2 = 1, {sc['iterations']} it)", "F1",
        sc["chunk_prf"]["f"], sc["train_s"], sc["decode_tokens_per_s"], sc["peak_rss_mb"], None,
        sc["model_bytes"])]
    runs = [ours] + [r for r in report.get("collisions", {}).get("runs", [])
                     if r.get("reused_from") is None]
    for run in runs:
        tr, dec = run["train"], run["decode"]
        rows.append(summary_row(
            task, f"spacy-crf FeatureCRF, 2^{run['n_buckets'].bit_length() - 1} buckets", "F1",
            dec["chunk_prf"]["f"], tr["total_s"], dec["decode_tokens_per_s"], tr["peak_rss_mb"],
            dec["peak_rss_mb"], tr["model_bytes"],
            note="" if run is ours else "hash-collision study"))
    peer = report.get("spacy_tagger")
    if peer:
        rows.append(summary_row(
            task, f"spaCy tagger over chunk tags ({peer['max_steps']} steps)", "F1",
            peer["chunk_prf"]["f"], peer["train"]["train_s"], peer["decode_tokens_per_s"],
            peer["train"]["peak_rss_mb"], peer["peak_rss_mb"], peer["weights_bytes"]))
    notes = [
        f"train {report['n_train_sentences']:,} sentences / {report['n_train_tokens']:,} tokens, "
        f"test {report['n_test_sentences']:,} / {report['n_test_tokens']:,}; chunk F1 as "
        "conlleval counts it",
        "both CRFs use CRFsuite's chunking template (words and the corpus POS column at -2..2, "
        "bigrams, trigrams); spaCy's tagger sees the words only",
        "train s: the whole `spacy train` for spaCy systems (init, dev evaluations and saves "
        f"included); crfsuite `fit` only (+ {sc['featurize_train_s']:.1f} s Python featurization)",
        "decode: Docs through `nlp.pipe`, best of the timed runs; crfsuite featurize + predict",
    ]
    if "collisions" in report:
        feats = report["collisions"]["features"]
        shares = ", ".join(
            f"2^{int(nb).bit_length() - 1}: {100 * b['fraction_sharing']:.1f}%"
            for nb, b in feats["buckets"].items())
        notes.append(f"{feats['n_distinct_features']:,} distinct hashed features; share of them "
                     f"in a bucket with another: {shares}")
    title = "CoNLL-2000 chunking" + (" (quick)" if report["quick"] else "")
    command = (f"python benchmarks/conll2000.py --quick" if report["quick"] else
               f"python benchmarks/conll2000.py --out benchmarks/results/conll2000.json")
    return make_summary(title, command, rows, notes)


def run_spacy_tagger(args: argparse.Namespace, train_path: Path, test_path: Path,
                     train_limit: int, test_limit: int, corpus: Dict[str, Path],
                     workdir: Path) -> Dict[str, Any]:
    """spaCy's own ``tagger`` (default CPU config) trained on the chunk tags as
    ``Token.tag_``, a fixed number of steps; it reads the words only (no POS
    column: its tok2vec has no input for it). Like the CRF, it gets the test set
    as dev (CoNLL-2000 has no dev split), so ``model-last`` is scored, not
    ``model-best``."""
    from spacy_peer import make_default_config, phase_decode, relabel_docbin, train_fixed_steps

    steps, every = args.tagger_max_steps, max(1, args.tagger_max_steps // 4)
    log(f"[4] spaCy tagger over the chunk tags ({steps} steps)")
    relabelled = {}
    for split, path, limit in (("train", train_path, train_limit), ("dev", test_path, test_limit)):
        tags = [[c[2] for c in s] for s in read_columns(path, limit)]
        relabelled[split] = workdir / f"tagger_{split}.spacy"
        relabel_docbin(corpus["train" if split == "train" else "test"], relabelled[split], tags)
    init = make_default_config("tagger", workdir / "spacy_tagger_efficiency.cfg")
    out = workdir / "spacy_tagger"
    train = train_fixed_steps(Path(init["path"]), out, relabelled, steps, every,
                              workdir / "spacy_tagger.log")
    test = read_columns(test_path, test_limit)
    decode = run_isolated(phase_decode, str(out / "model-last"), [[c[0] for c in s] for s in test],
                          "tag_", args.decode_runs, ["tok2vec", "tagger"])
    gold = [[c[2] for c in s] for s in test]
    pred = decode.pop("pred")
    result = dict(decode, train=train, init_config_command=init["command"], max_steps=steps,
                  chunk_prf=chunk_prf(gold, pred), token_accuracy=token_accuracy(gold, pred))
    log(f"    spaCy tagger: F1 {100 * result['chunk_prf']['f']:.2f}, train {train['train_s']:.1f}s, "
        f"decode {result['decode_tokens_per_s']:,.0f} tokens/s")
    return result


def _per_cpu_s(result: Dict[str, Any]) -> float:
    """Decode tokens per CPU second of the best timed run."""
    return result["n_test_tokens"] / (result["decode_s"] * result["decode_cpu_share"])


def _log_system(name: str, train: Dict[str, Any], decode: Dict[str, Any]) -> None:
    train_s = train.get("train_s", train.get("total_s"))
    log(f"    {name}: F1 {100 * decode['chunk_prf']['f']:.2f} (seqeval {100 * decode['seqeval_f1']:.2f}), "
        f"train {train_s:.1f}s, decode {decode['decode_tokens_per_s']:,.0f} tokens/s")


def print_report(report: Dict[str, Any]) -> None:
    print("\n" + render_summary(report["summary"], level=2))
    sc, ours = report["crfsuite"], report["spacy_crf"]
    tr, dec = ours["train"], ours["decode"]
    r = report["ratios"]
    print(f"\n- decode throughput ours / crfsuite (featurize + predict): "
          f"{r['decode_tokens_per_s_ours_over_crfsuite']:.2f}x "
          f"(crfsuite predict only, pre-featurized: {sc['predict_only_tokens_per_s']:,.0f} tokens/s)")
    print(f"- training time ours / crfsuite: {r['train_s_ours_over_crfsuite']:.2f}x "
          f"(ours: {tr['total_s']:.1f}s total = init {tr['init_s']:.1f}s + loop {tr['loop_s']:.1f}s, "
          f"{tr['steps']} steps, ~{tr['updates_only_s_est']:.1f}s without its "
          f"{tr['n_dev_evaluations']} dev evaluations/checkpoints -> "
          f"{r['train_updates_only_s_ours_over_crfsuite']:.2f}x; crfsuite fit {sc['train_s']:.1f}s, "
          f"{sc['iterations']} iterations, + {sc['featurize_train_s']:.1f}s Python featurization)")
    print(f"- chunk F1 ours - crfsuite: {r['f1_ours_minus_crfsuite_points']:+.2f} points")
    print(f"- model size ours / crfsuite: {r['model_bytes_ours_over_crfsuite']:.1f}x")
    print(f"- by CPU time instead of wall time: decode {_per_cpu_s(dec):,.0f} vs "
          f"{_per_cpu_s(sc):,.0f} tokens per CPU s = "
          f"{r['decode_tokens_per_cpu_s_ours_over_crfsuite']:.2f}x; training "
          f"{tr['total_s'] * tr['cpu_share']:.1f} vs {sc['train_s'] * sc['train_cpu_share']:.1f} "
          f"CPU s = {r['train_cpu_s_ours_over_crfsuite']:.2f}x")
    if "collisions" in report:
        feats = report["collisions"]["features"]
        print(f"\n### Hash collisions ({feats['n_distinct_features']:,} distinct hashed features "
              f"in training, {feats['n_templates']} templates; crfsuite: "
              f"{sc['num_attributes']:,} attributes)\n")
        rows = []
        for run in report["collisions"]["runs"]:
            nb = run["n_buckets"]
            b = feats["buckets"][str(nb)]
            rows.append([f"2^{nb.bit_length() - 1}" if nb & (nb - 1) == 0 else str(nb),
                         f"{100 * run['decode']['chunk_prf']['f']:.2f}",
                         f"{100 * b['fraction_sharing']:.2f}%",
                         f"{100 * b['fraction_expected_uniform']:.2f}%",
                         mb(run["train"]["model_bytes"]), f"{run['train']['total_s']:.1f}",
                         f"{run['train']['peak_rss_mb']:.0f}"])
        print(markdown_table(["n_buckets", "chunk F1", "features sharing a bucket",
                              "(uniform hash)", "model MB", "train s", "train peak RSS MB"], rows))
    print_timing_footer(report, {
        "crfsuite fit": sc["train_cpu_share"], "crfsuite decode": sc["decode_cpu_share"],
        "spacy-crf train": tr["cpu_share"], "spacy-crf decode": dec["decode_cpu_share"]})


if __name__ == "__main__":
    sys.exit(main())
