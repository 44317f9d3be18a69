"""The semi-Markov CRF against the chains, on entities and on chunks as spans, in one run.

* Universal NER English EWT (``doc.ents``): the BILUO chain
  (``configs/uner_ner.cfg``), the same at ``order = 2``, and the semi-Markov
  CRF (``configs/uner_ner_semi_markov.cfg``); then both structures with the
  factory defaults (a config from ``spacy init fill-config`` naming only the
  target and the structure, trained for as many epochs as the shipped configs).
* CoNLL-2000 chunks as ``doc.spans["chunks"]``: the BIO chain
  (``configs/conll2000_spans.cfg``) against the semi-Markov CRF
  (``configs/conll2000_spans_semi_markov.cfg``).

Each system trains with ``spacy train`` in a fresh process (whole process timed,
its own peak RSS), is scored on test in another (``spacy_crf.evaluate``) and
timed decoding the test docs with ``nlp.pipe`` (best of three after a warm-up).
Then the kernels alone: Viterbi and forward-backward of the semi-Markov CRF
against the maximum segment length, next to the chain, at UNER's 13 tags.

    python benchmarks/semi_markov.py --data-dir ../shared/data --out benchmarks/results/semi_markov.json
    python benchmarks/semi_markov.py --quick     # 300 sentences per split, a smoke run
"""

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (SHARED_DATA, disk_bytes, environment, log, make_summary,  # noqa: E402
                    render_summary, run_isolated, score_and_decode, summary_row, write_json)
from trainers import CONFIGS, REPO_ROOT, UNER_TRAIN, read_task, timed_process, to_docbin  # noqa: E402

KERNEL_LENGTHS = (1, 2, 4, 6, 8, 10)
KERNEL_TOKENS, KERNEL_SENTENCE = 20000, 20
TITLES = {"ner": "Universal NER English EWT", "spans": "CoNLL-2000 chunks as spans"}
COPY = {"ner": [], "spans": ["TAG"]}
#: (system, config, extra spacy train arguments) per task
SYSTEMS = {
    "ner": [("BILUO chain", "uner_ner.cfg", []),
            ("BILUO chain, order 2", "uner_ner.cfg", ["--components.crf_tagger.structure.order", "2"]),
            ("semi-Markov", "uner_ner_semi_markov.cfg", []),
            ("BILUO chain, factory defaults", "defaults:chain", []),
            ("semi-Markov, factory defaults", "defaults:semi_markov", [])],
    "spans": [("BIO chain", "conll2000_spans.cfg", []),
              ("semi-Markov", "conll2000_spans_semi_markov.cfg", [])],
}
DEFAULT_EPOCHS = 8  # the shipped UNER configs' max_epochs


def defaults_config(structure: str, workdir: Path) -> Path:
    """What ``spacy init fill-config`` makes of a config naming only the
    component, its target and its structure."""
    base = workdir / f"defaults_{structure}_base.cfg"
    base.write_text(
        "[paths]\ntrain = null\ndev = null\n\n[nlp]\nlang = \"en\"\npipeline = [\"crf_tagger\"]\n\n"
        "[components]\n\n[components.crf_tagger]\nfactory = \"crf_tagger\"\ntarget = \"ents\"\n"
        f"structure = \"{structure}\"\n\n[corpora]\n\n[corpora.train]\n@readers = \"spacy.Corpus.v1\"\n"
        "path = ${paths.train}\n\n[corpora.dev]\n@readers = \"spacy.Corpus.v1\"\npath = ${paths.dev}\n\n"
        "[training]\n", encoding="utf8")
    full = workdir / f"defaults_{structure}.cfg"
    subprocess.run([sys.executable, "-m", "spacy", "init", "fill-config", str(base), str(full)],
                   check=True, capture_output=True, cwd=str(REPO_ROOT))
    return full


def spans_corpus(data_dir: Path, workdir: Path, limit: int) -> Dict[str, Path]:
    """CoNLL-2000 through ``python -m spacy_crf.convert chunks`` (dev is test)."""
    out = {}
    for name in ("train", "test"):
        src = data_dir / "conll2000" / f"{name}.txt"
        if limit:
            sents = src.read_text(encoding="utf8").strip().split("\n\n")[:limit]
            src = workdir / f"conll2000_{name}_{limit}.txt"
            src.write_text("\n\n".join(sents) + "\n", encoding="utf8")
        out[name] = workdir / f"spans_{name}.spacy"
        subprocess.run([sys.executable, "-m", "spacy_crf.convert", "chunks", str(src),
                        str(out[name])], check=True, capture_output=True, cwd=str(REPO_ROOT))
    return {"train": out["train"], "dev": out["test"], "test": out["test"]}


def phase_score_and_decode(task: str, model: str, test_path: str, runs: int) -> Dict[str, Any]:
    """Test score and decode speed of a saved pipeline (docs read as training read them)."""
    result = score_and_decode(model, test_path, COPY[task], runs)
    result["segment_length"] = result.pop("cfg").get("segment_length")
    return result


def run_task(task: str, data_dir: Path, workdir: Path, limit: int, runs: int,
             uner_train: str = UNER_TRAIN) -> Dict[str, Any]:
    if task == "ner":
        sents = read_task("ner", data_dir, limit, uner_train)
        corpus = {name: to_docbin("ner", s, workdir / f"ner_{name}.spacy") for name, s in sents.items()}
    else:
        corpus = spans_corpus(data_dir, workdir, limit)
    every = ["--training.eval_frequency", "20"] if limit else []
    rows: Dict[str, Dict[str, Any]] = {}
    for name, config, extra in SYSTEMS[task]:
        out = workdir / f"{task}_{name.replace(' ', '_').replace(',', '')}"
        if config.startswith("defaults:"):
            path = defaults_config(config.split(":")[1], workdir)
            extra = ["--training.max_epochs", str(DEFAULT_EPOCHS), "--training.max_steps", "0"]
        else:
            path = CONFIGS / config
        cmd = [sys.executable, "-m", "spacy", "train", str(path), "--output", str(out),
               "--paths.train", str(corpus["train"]), "--paths.dev", str(corpus["dev"]), *extra]
        log(f"{task}: {name}, spacy train")
        result = timed_process(cmd + every, workdir / f"{out.name}.log")
        result["config"] = config
        scored = run_isolated(phase_score_and_decode, task, str(out / "model-best"),
                              str(corpus["test"]), runs)
        result.update({k: v for k, v in scored.items() if k != "peak_rss_mb"})
        result["decode_peak_rss_mb"] = scored["peak_rss_mb"]
        result["model_bytes"] = disk_bytes(out / "model-best")
        rows[name] = result
        log(f"  {100 * result['score']:.2f} in {result['train_s']:.1f} s, "
            f"{result['decode_tokens_per_s']:,.0f} tok/s")
    return {"systems": rows}


def time_kernels(runs: int, seed: int = 0) -> List[Dict[str, Any]]:
    """Microseconds per token of Viterbi and forward-backward: the chain, and the
    semi-Markov CRF at each maximum segment length, at UNER's tags (BILUO, 3 types)."""
    import numpy as np

    from spacy_crf import inference, schemes
    from spacy_crf.models.potentials import CRFScores
    from spacy_crf.structures import ChainLayout
    from spacy_crf.structures.semi_markov import SemiMarkovLayout, segment_tables

    tags = schemes.tag_set(["LOC", "ORG", "PER"], "BILUO")
    L = len(tags)
    rng = np.random.default_rng(seed)
    n_seqs = KERNEL_TOKENS // KERNEL_SENTENCE
    N = n_seqs * KERNEL_SENTENCE
    lengths = np.full(n_seqs, KERNEL_SENTENCE, dtype=np.int64)
    base = CRFScores.of(rng.standard_normal((N, L)), transitions=rng.standard_normal((L, L)),
                        start=rng.standard_normal(L), end=rng.standard_normal(L),
                        pair=np.zeros((1, L, L)), root=np.zeros(L))
    cases = [("chain", ChainLayout(lengths), base)]
    for D in KERNEL_LENGTHS:
        scores = base.replace(segments=rng.standard_normal((N, D, L)))
        cases.append((f"semi-Markov, D = {D}",
                      SemiMarkovLayout(lengths, D, **segment_tables(tags, "BILUO", D)), scores))
    out = []
    for name, layout, scores in cases:
        row: Dict[str, Any] = {"system": name, "labels": L, "tokens": N}
        for what, fn in (("viterbi", inference.viterbi), ("marginals", inference.marginals)):
            fn(scores, layout)  # warm up: load the numba cache
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                fn(scores, layout)
                times.append(time.perf_counter() - start)
            row[what] = round(1e6 * min(times) / N, 3)
        out.append(row)
        log(f"  {name:<22} viterbi {row['viterbi']:>8} us/tok, marginals {row['marginals']:>8} us/tok")
    return out


def summary(report: Dict[str, Any]) -> Dict[str, Any]:
    rows, notes = [], []
    for task, result in report["tasks"].items():
        for name, r in result["systems"].items():
            note = f"{r['n_labels']} tags" + (f", segments up to {r['segment_length']}"
                                                 if r.get("segment_length") else "")
            rows.append(summary_row(TITLES[task], name, "F1", r["score"], r["train_s"],
                                    r["decode_tokens_per_s"], r.get("peak_rss_mb"),
                                    r.get("decode_peak_rss_mb"), r["model_bytes"], note))
        systems = result["systems"]
        chain = systems.get("BILUO chain") or systems.get("BIO chain")
        semi = systems.get("semi-Markov")
        if chain and semi:
            notes.append(f"{TITLES[task]}: semi-Markov {100 * (semi['score'] - chain['score']):+.2f} "
                         f"points, {semi['train_s'] / chain['train_s']:.1f}x the training time, "
                         f"{chain['decode_tokens_per_s'] / semi['decode_tokens_per_s']:.1f}x slower "
                         f"decoding")
    notes.append("spacy train of the shipped config (factory defaults: spacy init fill-config, "
                 f"{DEFAULT_EPOCHS} epochs), the whole process; decoding is nlp.pipe over the "
                 "test docs in a fresh process")
    tables = []
    kernels = report.get("kernels")
    if kernels:
        tables.append({
            "caption": f"Kernels alone, microseconds per token, random scores, {kernels[0]['labels']} "
                       f"BILUO tags, {kernels[0]['tokens']:,} tokens in sentences of "
                       f"{KERNEL_SENTENCE} (`{report['command']}`):",
            "headers": ["system", "Viterbi", "forward-backward"],
            "rows": [[k["system"], str(k["viterbi"]), str(k["marginals"])] for k in kernels]})
    return make_summary("Semi-Markov CRF against the chains", report["command"], rows, notes, tables)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/spacy_crf_semi_markov"))
    parser.add_argument("--tasks", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS))
    parser.add_argument("--uner-train", default=UNER_TRAIN)
    parser.add_argument("--quick", action="store_true", help="300 sentences per split")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/semi_markov.py" + (" --quick" if args.quick else "")
    if args.tasks != list(SYSTEMS):
        command += " --tasks " + " ".join(args.tasks)
    report: Dict[str, Any] = {"benchmark": "semi_markov", "command": command, "quick": args.quick,
                              "environment": environment(), "tasks": {}}
    start = time.perf_counter()
    for task in args.tasks:
        report["tasks"][task] = run_task(task, args.data_dir, args.workdir,
                                         300 if args.quick else 0, 3, args.uner_train)
    report["kernels"] = time_kernels(3)
    report["benchmark_wall_s"] = time.perf_counter() - start
    report["summary"] = summary(report)
    print(render_summary(report["summary"]))
    write_json(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
