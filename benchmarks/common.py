"""Helpers shared by the benchmarks: corpus reading, chunk scoring, timing,
phase isolation (one fresh process per phase, for clean peak RSS) and
in-process ``spacy train`` with a per-step clock.

Not part of the package: the benchmarks run from a checkout
(``python benchmarks/NAME.py``), with this directory on ``sys.path``.
"""

import json
import os
import platform
import resource
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"

Sentence = List[List[str]]  # one list of columns per token


# -- corpora ---------------------------------------------------------------

def read_columns(path: Path, limit: int = 0) -> List[Sentence]:
    """Whitespace-separated columns, one token a line, blank lines between sentences."""
    sentences: List[Sentence] = []
    current: Sentence = []
    with open(path, encoding="utf8") as f:
        for line in f:
            cols = line.split()
            if cols:
                current.append(cols)
            elif current:
                sentences.append(current)
                current = []
                if limit and len(sentences) >= limit:
                    return sentences
    if current:
        sentences.append(current)
    return sentences[:limit] if limit else sentences


def columns_text(sentences: Sequence[Sentence]) -> str:
    """Sentences back to the column format (for spaCy's converters)."""
    return "\n\n".join("\n".join(" ".join(cols) for cols in sent) for sent in sentences) + "\n"


# -- scoring ---------------------------------------------------------------

def chunk_prf(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> Dict[str, float]:
    """Micro chunk precision / recall / F1 over sentences, chunks read by
    ``spacy_crf.scoring.iob_chunks`` (conlleval's reading of IOB tags)."""
    from spacy_crf.scoring import iob_chunks

    n_gold = n_pred = n_correct = 0
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold sentences but {len(pred)} predicted")
    for g, p in zip(gold, pred):
        if len(g) != len(p):
            raise ValueError("gold and predicted sentences differ in length")
        gc, pc = set(iob_chunks(list(g))), set(iob_chunks(list(p)))
        n_gold += len(gc)
        n_pred += len(pc)
        n_correct += len(gc & pc)
    precision = n_correct / n_pred if n_pred else 0.0
    recall = n_correct / n_gold if n_gold else 0.0
    f = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"p": precision, "r": recall, "f": f,
            "n_gold": n_gold, "n_pred": n_pred, "n_correct": n_correct}


def seqeval_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> float:
    """seqeval's F1 in its default (conlleval-compatible) mode."""
    from seqeval.metrics import f1_score

    return float(f1_score([list(s) for s in gold], [list(s) for s in pred]))


def token_accuracy(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> float:
    n = sum(len(s) for s in gold)
    right = sum(a == b for g, p in zip(gold, pred) for a, b in zip(g, p))
    return right / n if n else 0.0


# -- measuring -------------------------------------------------------------

def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB (Linux: ru_maxrss is KB)."""
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024 if sys.platform != "darwin" else kb / 2**20


def best_of(n: int, fn: Callable[[], Any]) -> Dict[str, Any]:
    """Run ``fn`` n times; wall times of every run, the best, and the last result.

    ``cpu_share`` is the CPU time / wall time of the best run: well under 1
    for single-threaded code means it waited for a CPU other processes held.
    """
    times, cpu, result = [], [], None
    for _ in range(max(1, n)):
        with Stopwatch() as watch:
            result = fn()
        times.append(watch.wall_s)
        cpu.append(watch.cpu_share)
    best = times.index(min(times))
    return {"best_s": times[best], "runs_s": times, "cpu_share": cpu[best], "result": result}


class Stopwatch:
    """Wall time and CPU share (process CPU time / wall time) of a block."""

    def __enter__(self) -> "Stopwatch":
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.wall_s = time.perf_counter() - self._wall
        cpu_s = time.process_time() - self._cpu
        self.cpu_share = round(cpu_s / self.wall_s, 3) if self.wall_s else None


def disk_bytes(path: Path) -> int:
    """Apparent size of a file or of all files under a directory (``du -sb``)."""
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run_isolated(fn: Callable[..., Dict[str, Any]], *args: Any, **kwargs: Any) -> Dict[str, Any]:
    """Run one phase in a fresh (spawned) process, one at a time.

    The phase's result dict gets ``peak_rss_mb``: the child's own peak, so
    phases do not inherit each other's memory. ``fn`` must be importable
    (module level in a module or in the ``__main__`` script).
    """
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(_with_rss, fn, args, kwargs).result()


def _with_rss(fn: Callable[..., Dict[str, Any]], args, kwargs) -> Dict[str, Any]:
    load_before = os.getloadavg()[0]
    result = fn(*args, **kwargs)
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    result["load_avg_1min"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    return result


def environment() -> Dict[str, Any]:
    """Versions, machine and checkout state, for the JSON report."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for name in ("spacy-crf", "spacy", "thinc", "numba", "numpy", "sklearn-crfsuite",
                 "python-crfsuite", "seqeval"):
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    git = {}
    try:
        git["commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, text=True,
                                       capture_output=True, check=True).stdout.strip()
        # tracked files only, and not the benchmarks' own outputs (benchmarks/results/
        # rewritten by an earlier benchmark of the same run): changes to the code measured
        dirty = [line for line in subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT, text=True,
            capture_output=True, check=True).stdout.splitlines()
            if not line[3:].startswith("benchmarks/results/")]
        git["dirty_files"] = len(dirty)
    except (OSError, subprocess.CalledProcessError):
        pass
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "versions": versions,
        "git": git,
    }


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_json(path: Optional[Path], data: Dict[str, Any]) -> None:
    if path is None:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf8")


# -- spacy train, in process, with a clock on every step --------------------

STEP_CLOCK = "spacy-crf-bench.step_clock.v1"
_step_times: List[float] = []


def _register_step_clock() -> None:
    from spacy.util import registry

    if STEP_CLOCK in registry.callbacks:
        return

    @registry.callbacks(STEP_CLOCK)
    def make_step_clock() -> Callable[[Any, Dict[str, int]], None]:
        def before_update(nlp: Any, info: Dict[str, int]) -> None:
            _step_times.append(time.perf_counter())

        return before_update


def train_spacy(config_path: Path, output_dir: Path, overrides: Dict[str, Any],
                log_path: Optional[Path] = None) -> Dict[str, Any]:
    """``spacy train`` in this process (what ``spacy.cli.train.train`` does), timed.

    Returns the wall times of the whole run (init + loop + checkpoints),
    of ``init_nlp`` and of the loop, the number of optimizer steps, and an
    estimate of the loop without its dev evaluations and checkpoint saves
    (the inter-step gaps that contain an evaluation replaced by the median
    gap). The training table goes to ``log_path``.
    """
    from spacy import util
    from spacy.training.initialize import init_nlp
    from spacy.training.loop import train as train_nlp

    _register_step_clock()
    config = util.load_config(config_path, overrides=overrides, interpolate=False)
    config["training"]["before_update"] = {"@callbacks": STEP_CLOCK}
    eval_frequency = int(config["training"]["eval_frequency"])
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    del _step_times[:]
    out = open(log_path, "w", encoding="utf8") if log_path else open(os.devnull, "w")
    try:
        with Stopwatch() as watch:
            t0 = time.perf_counter()
            nlp = init_nlp(config, use_gpu=-1)
            t1 = time.perf_counter()
            train_nlp(nlp, output_dir, use_gpu=-1, stdout=out, stderr=out)
            t2 = time.perf_counter()
    finally:
        out.close()
    stamps = list(_step_times)
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    plain = sorted(g for i, g in enumerate(gaps) if i % eval_frequency)
    median = plain[len(plain) // 2] if plain else 0.0
    n_evals = sum(1 for i in range(len(stamps)) if i % eval_frequency == 0)
    update_s = sum(plain) + median * (n_evals + 1) if stamps else 0.0  # +1: the last step
    return {
        "total_s": t2 - t0,
        "cpu_share": watch.cpu_share,
        "init_s": t1 - t0,
        "loop_s": t2 - t1,
        "steps": len(stamps),
        "n_dev_evaluations": n_evals,
        "updates_only_s_est": update_s,
        "median_step_s": median,
        "config_overrides": overrides,
    }


#: processes whose CPU use would spoil a benchmark's timings
BUSY_PATTERNS = ("benchmarks/conll2000.py", "benchmarks/ewt_tree.py", "benchmarks/uner.py",
                 "benchmarks/ewt_upos.py", "benchmarks/scaling.py",
                 "spacy train")


def mb(n_bytes: float) -> str:
    """Bytes as MB with one decimal."""
    return f"{n_bytes / 2**20:.1f}"


def busy_processes(patterns: Sequence[str] = BUSY_PATTERNS) -> List[str]:
    """Command lines of other benchmark / ``spacy train`` processes (pgrep -f)."""
    mine = {os.getpid(), os.getppid()}
    found = []
    for pattern in patterns:
        proc = subprocess.run(["pgrep", "-af", pattern], capture_output=True, text=True)
        for line in proc.stdout.splitlines():
            pid, _, _ = line.partition(" ")
            if pid.isdigit() and int(pid) not in mine:
                found.append(line)
    return sorted(set(found))


def wait_until_quiet(poll_s: float, max_wait_s: float,
                     patterns: Sequence[str] = BUSY_PATTERNS) -> Dict[str, Any]:
    """Wait until no other benchmark or training runs, so timings are clean."""
    t0 = time.perf_counter()
    polls = 0
    while True:
        busy = busy_processes(patterns)
        if not busy:
            return {"waited_s": round(time.perf_counter() - t0, 1), "polls": polls, "quiet": True}
        if time.perf_counter() - t0 > max_wait_s:
            log(f"still busy after {max_wait_s:.0f}s, starting anyway: {busy}")
            return {"waited_s": round(time.perf_counter() - t0, 1), "polls": polls,
                    "quiet": False, "busy": busy}
        if polls == 0:
            log("waiting for other benchmark / spacy train processes to finish:")
            for line in busy:
                log(f"    {line[:160]}")
        polls += 1
        time.sleep(poll_s)


def add_run_arguments(parser, wait: bool = True) -> None:
    """The options every benchmark shares: decode repeats, workdir and, for the
    ones that wait for a quiet machine, how to wait."""
    parser.add_argument("--decode-runs", type=int, default=3, help="timed decode runs, best reported")
    if wait:
        parser.add_argument("--no-wait", action="store_true",
                            help="do not wait for other benchmark / spacy train processes to finish")
        parser.add_argument("--poll-s", type=float, default=30.0, help="seconds between busy checks")
        parser.add_argument("--max-wait-s", type=float, default=3 * 3600.0,
                            help="start anyway after this long (recorded in the JSON)")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="keep corpora, models and logs here (default: a temp dir, removed)")


#: sentences of train and of test a full run and a ``--quick`` one read
#: (label_scaling.py, many_entity_types.py)
SAMPLE_SENTENCES = {"train": (2000, 300), "test": (1000, 200)}


def add_sample_arguments(parser) -> None:
    """``--train-sentences`` and ``--test-sentences`` (set by
    :func:`sample_sizes` where left out), ``--epochs`` and ``--batch-size``:
    a plain ``nlp.update`` loop over a sample of a corpus."""
    for split, (full, quick) in SAMPLE_SENTENCES.items():
        parser.add_argument(f"--{split}-sentences", type=int, default=None,
                            help=f"first sentences of {split} (default {full:,}; --quick {quick})")
    parser.add_argument("--epochs", type=int, default=2,
                        help="the first loads the kernels: at least 2 for a clean per-token time")
    parser.add_argument("--batch-size", type=int, default=32)


def sample_sizes(args) -> None:
    """The sentences :func:`add_sample_arguments` left unset: a full run's, or ``--quick``'s."""
    for split, (full, quick) in SAMPLE_SENTENCES.items():
        if getattr(args, f"{split}_sentences") is None:
            setattr(args, f"{split}_sentences", quick if args.quick else full)


def time_pipe(nlp, make_docs: Callable[[], List[Any]], runs: int, warmup_docs: int) -> Dict[str, Any]:
    """Time ``nlp.pipe`` over fresh docs ``runs`` times (after a warm-up that loads
    or compiles the numba kernels, not timed); the docs of the last run are kept."""
    t0 = time.perf_counter()
    list(nlp.pipe(make_docs()[:warmup_docs], batch_size=1000))
    warmup_s = time.perf_counter() - t0
    times, shares, docs = [], [], []
    for _ in range(max(1, runs)):
        batch = make_docs()  # fresh, unannotated docs every run (not timed)
        with Stopwatch() as watch:
            docs = list(nlp.pipe(batch, batch_size=1000))
        times.append(watch.wall_s)
        shares.append(watch.cpu_share)
    return {"warmup_s": warmup_s, "times": times, "shares": shares, "docs": docs}


def run_in_workdir(args, prefix: str, run: Callable[[Path], Dict[str, Any]],
                   print_report: Callable[[Dict[str, Any]], None], wall0: float,
                   extra: Optional[Dict[str, Any]] = None) -> int:
    """Run a benchmark in ``args.workdir`` (or a temp dir, removed after), then
    print its report and write it to ``args.out``."""
    import shutil
    import tempfile

    keep = args.workdir is not None
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix=prefix))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        report = run(workdir)
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    report.update(extra or {})
    report["benchmark_wall_s"] = time.perf_counter() - wall0
    print_report(report)
    write_json(args.out, report)
    if args.out:
        log(f"wrote {args.out}")
    return 0


def print_timing_footer(report: Dict[str, Any], shares: Dict[str, Optional[float]]) -> None:
    """The end of every benchmark's report: how long it waited for a quiet
    machine, its wall time, the CPU share of each timed section, and a warning
    when one got less than 90% of a core (all timed code is single-threaded,
    so less means other processes held the CPU and the timing is pessimistic)."""
    wait = report.get("wait")
    if wait:
        print(f"- waited {wait['waited_s']:.0f}s for other benchmarks / spacy train to finish"
              + ("" if wait["quiet"] else " (gave up: machine busy)"))
    print(f"\nbenchmark wall time: {report['benchmark_wall_s']:.0f}s")
    print("CPU time / wall time of the timed sections: "
          + ", ".join(f"{k} {v:.2f}" for k, v in shares.items() if v is not None))
    if any(v is not None and v < 0.9 for v in shares.values()):
        print("WARNING: a timed section got less than 90% of a core: other processes were "
              "probably running, its timing is pessimistic")


def run_benchmark(args, inputs: Sequence[Path], prefix: str,
                  run: Callable[[Path], Dict[str, Any]],
                  print_report: Callable[[Dict[str, Any]], None]) -> int:
    """A benchmark's ``main`` after its arguments are parsed: check that the
    inputs exist, wait for a quiet machine (not with ``--quick`` or
    ``--no-wait``), then :func:`run_in_workdir`. Returns the exit code."""
    missing = [str(p) for p in inputs if not Path(p).exists()]
    if missing:
        print(f"not found: {', '.join(missing)}", file=sys.stderr)
        return 1
    wait = None
    if not args.quick and not args.no_wait:
        wait = wait_until_quiet(args.poll_s, args.max_wait_s)
        log(f"machine quiet after {wait['waited_s']:.0f}s" if wait["quiet"] else "machine busy")
    return run_in_workdir(args, prefix, run, print_report, time.perf_counter(),
                          extra={"wait": wait})


def train_spacy_subprocess(config: Path, output: Path, corpus: Dict[str, Path],
                           overrides: List[str], log_path: Path,
                           cwd: Path = REPO_ROOT) -> Dict[str, Any]:
    """``python -m spacy train`` as a subprocess, timed (wall and children's CPU)."""
    cmd = [sys.executable, "-m", "spacy", "train", str(config), "--output", str(output),
           "--paths.train", str(corpus["train"]), "--paths.dev", str(corpus["dev"]), *overrides]
    load_before = os.getloadavg()[0]
    with open(log_path, "w", encoding="utf8") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=str(cwd))
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own CPU time and peak RSS
        wall = time.perf_counter() - t0
    returncode = os.waitstatus_to_exitcode(status)
    text = log_path.read_text(encoding="utf8")
    if returncode:
        raise RuntimeError(f"spacy train failed ({returncode}): {' '.join(cmd)}\n{text[-3000:]}")
    rows = [line.split() for line in text.splitlines()]
    rows = [r for r in rows if len(r) >= 3 and r[0].isdigit() and r[1].isdigit()]
    cpu = usage.ru_utime + usage.ru_stime
    return {
        "command": " ".join(["python", *cmd[1:]]),
        "train_s": wall,
        "cpu_share": round(cpu / wall, 3) if wall else None,
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "load_avg_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "n_dev_evaluations": len(rows),
        "last_step": int(rows[-1][1]) if rows else None,
        "last_epoch": int(rows[-1][0]) if rows else None,
        "log_tail": "\n".join(text.splitlines()[-(len(rows) + 4):]),
    }


# -- the one summary table every benchmark writes --------------------------------
#
# Each benchmark's JSON carries ``summary``: a title, the command that made it,
# notes and one row per system with the same columns. ``benchmarks/results.py``
# renders the summaries of all JSON files into the README, and each benchmark
# prints its own with the same function, so the README table is the benchmark's
# output, not a copy of it.

SUMMARY_COLUMNS = ("task", "system", "score", "train s", "decode tokens/s",
                   "peak RSS MB train / decode", "model MB")


def summary_row(task: str, system: str, metric: str, score: Optional[float],
                train_s: Optional[float], decode_tokens_per_s: Optional[float],
                train_peak_mb: Optional[float], decode_peak_mb: Optional[float],
                model_bytes: Optional[int], note: str = "") -> Dict[str, Any]:
    """One system's row. ``score`` is a fraction (rendered as points with its
    ``metric`` name, e.g. "F1" or "acc"); ``decode_peak_mb`` is None where the
    system trains and decodes in one process (its peak is ``train_peak_mb``)."""
    return {"task": task, "system": system, "metric": metric, "score": score,
            "train_s": train_s, "decode_tokens_per_s": decode_tokens_per_s,
            "train_peak_mb": train_peak_mb, "decode_peak_mb": decode_peak_mb,
            "model_bytes": model_bytes, "note": note}


def print_rows(rows: Sequence[Dict[str, Any]], notes: Sequence[str] = ()) -> None:
    """A summary's rows as lines (score, then its note, train time and decode
    speed where it has them), and its notes."""
    for row in rows:
        parts = [row["note"]] if row["note"] else []
        if row["train_s"] is not None:
            parts.append(f"trained in {row['train_s']:.1f} s")
        if row["decode_tokens_per_s"] is not None:
            parts.append(f"{row['decode_tokens_per_s']:,.0f} tok/s")
        print(f"{row['system']}: {100 * row['score']:.2f} ({'; '.join(parts)})")
    for note in notes:
        print(f"- {note}")


def make_summary(title: str, command: str, rows: List[Dict[str, Any]],
                 notes: Sequence[str] = (),
                 tables: Sequence[Dict[str, Any]] = ()) -> Dict[str, Any]:
    """A benchmark's summary: ``rows`` of ``summary_row`` (may be empty), and
    ``tables`` of its own shape (``{"caption", "headers", "rows"}``, cells as
    rendered strings) for figures that are not one row per system."""
    return {"title": title, "command": command, "rows": rows, "notes": list(notes),
            "tables": list(tables)}


def _cell(value: Optional[float], fmt: str) -> str:
    return "" if value is None else format(value, fmt)


def render_summary(summary: Dict[str, Any], level: int = 3) -> str:
    """Markdown: heading, command, the table, notes."""
    rows = []
    for r in summary["rows"]:
        if r["decode_peak_mb"] is None:
            peak = _cell(r["train_peak_mb"], ".0f") + (" (one process)" if r["train_peak_mb"] else "")
        else:
            peak = f"{_cell(r['train_peak_mb'], '.0f')} / {_cell(r['decode_peak_mb'], '.0f')}"
        score = "" if r["score"] is None else f"{r['metric']} {100 * r['score']:.2f}"
        rows.append([r["task"], r["system"] + (f" ({r['note']})" if r["note"] else ""), score,
                     _cell(r["train_s"], ".1f"), _cell(r["decode_tokens_per_s"], ",.0f"), peak,
                     "" if r["model_bytes"] is None else mb(r["model_bytes"])])
    parts = [f"{'#' * level} {summary['title']}", "", f"`{summary['command']}`"]
    if rows:
        parts += ["", markdown_table(SUMMARY_COLUMNS, rows)]
    for table in summary.get("tables", []):
        parts += ["", table["caption"], "", markdown_table(table["headers"], table["rows"])]
    if summary["notes"]:
        parts += [""] + [f"- {note}" for note in summary["notes"]]
    return "\n".join(parts) + "\n"


def score_and_decode(model: str, test_path: str, copy: Sequence[str], runs: int) -> Dict[str, Any]:
    """Test score (``spacy_crf.evaluate``) and decode speed (``nlp.pipe``, best of
    ``runs`` after a warm-up) of a saved pipeline, its docs read as training read
    them (``copy``: the attributes its augmenter copied), and its crf_tagger's cfg."""
    import spacy
    from spacy.training import Corpus

    from spacy_crf.augmenters import create_copy_attrs
    from spacy_crf.evaluation import evaluate

    nlp = spacy.load(model)
    scores = evaluate(nlp, Path(test_path), list(copy))
    augmenter = create_copy_attrs(list(copy)) if copy else None
    docs = [eg.predicted for eg in Corpus(test_path, augmenter=augmenter)(nlp)]
    timing = time_pipe(nlp, lambda: [doc.copy() for doc in docs], runs, warmup_docs=200)
    best_s = min(timing["times"])
    n_tokens = sum(len(doc) for doc in docs)
    tagger = nlp.get_pipe("crf_tagger")
    return {"score": scores["crf_score"], "n_tokens": n_tokens, "decode_s": best_s,
            "decode_tokens_per_s": n_tokens / best_s, "n_labels": len(tagger.tags),
            "cfg": {k: v for k, v in tagger.cfg.items() if k != "labels"}}


#: a config that names crf_taggers and their targets only, as a new user writes it
#: before ``spacy init fill-config`` completes it (trainers.py, morph.py,
#: lemma_senter.py; configs/ewt_pipeline.cfg's test): :func:`factory_config`
FACTORY_CONFIG = """
[paths]
train = null
dev = null

[nlp]
lang = "{lang}"
pipeline = {pipeline}

[components]
{components}
[corpora]

[corpora.train]
@readers = "spacy.Corpus.v1"
path = ${{paths.train}}

[corpora.dev]
@readers = "spacy.Corpus.v1"
path = ${{paths.dev}}

[training]

[initialize]
"""
FACTORY_COMPONENT = """
[components.{name}]
factory = "crf_tagger"
target = "{target}"
"""


def factory_config(targets: Dict[str, str], lang: str = "en") -> str:
    """:data:`FACTORY_CONFIG` with a crf_tagger a ``{name: target}`` item, in order."""
    return FACTORY_CONFIG.format(
        lang=lang, pipeline=json.dumps(list(targets)),
        components="".join(FACTORY_COMPONENT.format(name=name, target=target)
                           for name, target in targets.items()))


def filled_factory_config(workdir: Path, stem: str, target: str, lang: str = "en",
                          name: str = "crf_tagger") -> Path:
    """``spacy init fill-config`` of :func:`factory_config` for one component
    (its output in ``workdir / f"{stem}_fill.log"``): the config a new user trains."""
    base = workdir / f"{stem}_base.cfg"
    base.write_text(factory_config({name: target}, lang), encoding="utf8")
    filled = workdir / f"{stem}_filled.cfg"
    with open(workdir / f"{stem}_fill.log", "w", encoding="utf8") as log_file:
        subprocess.run([sys.executable, "-m", "spacy", "init", "fill-config", str(base),
                        str(filled)], check=True, stdout=log_file, stderr=subprocess.STDOUT,
                       cwd=str(REPO_ROOT))
    return filled



# -- UD corpora converted by spaCy, and the plain loop over them (morph.py, lemma_senter.py) --

def conllu_head(src: Path, dst: Path, limit: int) -> Path:
    """The first ``limit`` sentences of a CoNLL-U file (``--quick``), in the work dir."""
    blocks = src.read_text(encoding="utf8").split("\n\n")
    dst.write_text("\n\n".join(b for b in blocks[:limit] if b.strip()) + "\n\n", encoding="utf8")
    return dst


def convert_conllu(src: Path, out_dir: Path, n_sents: int, line_breaks: bool = False) -> Path:
    """``src`` as a ``.spacy`` file in ``out_dir`` (named after it), by spaCy's
    CoNLL-U converter.

    Parameters
    ----------
    src : Path
        A CoNLL-U file.
    out_dir : Path
        Where the ``.spacy`` file goes.
    n_sents : int
        Sentences a doc, as ``spacy convert -c conllu -n N`` joins them
        (consecutive sentences, across document marks: spaCy's converter drops
        the comment lines, ``# newdoc`` among them). 0: one doc per document
        of the corpus, cut at its ``# newdoc`` marks, as ``spacy crf-convert
        conllu`` cuts them (:func:`spacy_crf.conllu_documents.conllu_documents`,
        which reads the sentences with spaCy's converter).
    line_breaks : bool
        End each sentence that a paragraph follows with a line-break token
        (``crf-convert conllu --line-breaks``), as raw text has it.

    Returns
    -------
    Path
        The written ``.spacy`` file.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    if n_sents > 0 and not line_breaks:
        subprocess.run([sys.executable, "-m", "spacy", "convert", str(src), str(out_dir), "-c",
                        "conllu", "-n", str(n_sents)], check=True, capture_output=True, text=True)
        return out_dir / f"{src.stem}.spacy"
    from spacy.tokens import DocBin

    from spacy_crf.conllu_documents import conllu_documents

    docs = conllu_documents(src.read_text(encoding="utf8"), n_sents, line_breaks)
    out = out_dir / f"{src.stem}.spacy"
    DocBin(docs=docs, store_user_data=True).to_disk(out)
    return out


def ud_sources(data_dir: Path, folder: str, prefix: str, out_dir: Path, limit: int = 0,
               splits: Sequence[str] = ("train", "dev", "test")) -> Dict[str, Path]:
    """The CoNLL-U file of each split of a UD treebank (``data_dir / folder /
    f"{prefix}-{split}.conllu"``); ``limit``: a copy of its first sentences in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split in splits:
        src = data_dir / folder / f"{prefix}-{split}.conllu"
        paths[split] = conllu_head(src, out_dir / src.name, limit) if limit else src
    return paths


def convert_ud(data_dir: Path, folder: str, prefix: str, out_dir: Path, limit: int = 0,
               n_sents: int = 1, splits: Sequence[str] = ("train", "dev", "test")) -> Dict[str, Path]:
    """Train, dev and test of a UD treebank (:func:`ud_sources`) converted by
    :func:`convert_conllu` into ``out_dir``; ``limit``: the first sentences of
    each split only (copied into ``out_dir`` first)."""
    return {split: convert_conllu(src, out_dir, n_sents)
            for split, src in ud_sources(data_dir, folder, prefix, out_dir, limit, splits).items()}


def add_uner_entities(corpus: Path, conllu: Path, iob2: Optional[Path]) -> Dict[str, Any]:
    """Universal NER's entities on the docs of ``corpus`` (a ``.spacy`` file that
    :func:`convert_conllu` made from ``conllu``), rewritten in place.

    The docs hold the CoNLL-U file's sentences in order (its syntactic words,
    each sentence perhaps closed by a line-break token: ``line_breaks``).
    Each sentence whose ``# sent_id`` the UNER file ``iob2`` has, with the same
    tokens, gets its entities (``spacy_crf.converters.convert_uner``'s reading;
    its other tokens outside, "O"); every other sentence stays unannotated
    (missing, not "O": a scorer skips it, a CRF learns nothing from it there).
    ``iob2`` None or absent: no sentence matches.

    Returns
    -------
    dict
        ``sentences``, ``matched``, ``unmatched`` (``no_sent_id``: UNER lacks
        the id; ``tokens_differ``: it has it with other tokens), the first
        unmatched ids, the entities set by type, and the UNER file.
    """
    from spacy.tokens import DocBin, Span
    from spacy.vocab import Vocab

    from spacy_crf.conllu_documents import LINE_BREAK
    from spacy_crf.converters import convert_uner, read_conllu

    vocab = Vocab()
    uner = {}
    if iob2 is not None and Path(iob2).exists():
        for doc in convert_uner(Path(iob2).read_text(encoding="utf8"), vocab):
            uner[doc.user_data[("spacy_crf", "sent_id")]] = (
                [t.text for t in doc], [(e.start, e.end, e.label_) for e in doc.ents])
    sentences = [(sid, [r[1] for r in rows])
                 for sid, rows in read_conllu(Path(conllu).read_text(encoding="utf8")) if rows]
    docs = list(DocBin().from_disk(corpus).get_docs(vocab))
    # a line-break token (convert_conllu's line_breaks) closes a sentence: outside
    n_words = sum(1 for d in docs for t in d if t.text != LINE_BREAK)
    if n_words != sum(len(words) for _, words in sentences):
        raise ValueError(f"{corpus}: its docs' tokens are not {conllu}'s syntactic words")
    unmatched: Dict[str, List[str]] = {"no_sent_id": [], "tokens_differ": []}
    labels: Dict[str, int] = {}
    queue = iter(sentences)
    for doc in docs:
        entities, missing, start = [], [], 0
        while start < len(doc):
            sid, words = next(queue)
            end = start + len(words)
            if [t.text for t in doc[start:end]] != words:
                raise ValueError(f"{corpus}: sentence {sid} is not where its doc has it")
            found = uner.get(sid)
            if found is None or found[0] != words:
                unmatched["no_sent_id" if found is None else "tokens_differ"].append(sid)
                missing.append(Span(doc, start, end))
            else:
                for s, e, label in found[1]:
                    entities.append(Span(doc, start + s, start + e, label))
                    labels[label] = labels.get(label, 0) + 1
            start = end + (end < len(doc) and doc[end].text == LINE_BREAK)
        doc.set_ents(entities, missing=missing, default="outside")
    DocBin(docs=docs, store_user_data=True).to_disk(corpus)
    n_unmatched = sum(len(ids) for ids in unmatched.values())
    return {"uner_file": str(iob2) if uner else None, "sentences": len(sentences),
            "matched": len(sentences) - n_unmatched,
            "unmatched": {k: len(ids) for k, ids in unmatched.items()},
            "unmatched_ids": {k: ids[:20] for k, ids in unmatched.items() if ids},
            "entities": dict(sorted(labels.items()))}


def phase_plain_loop(lang: str, target: str, train_path: str, out_dir: str, epochs: int,
                     batch_size: int, model: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Factory defaults for ``target``, nlp.initialize()'s optimizer, the plain loop
    (``defaults.update_loop``) over the docs of a ``.spacy`` file (predicted docs of
    their words and spaces); the pipeline is saved to ``out_dir``. ``model``:
    settings that replace the factory's in its model block (the rest as it is)."""
    import spacy
    from spacy.tokens import DocBin
    from spacy.training import Example

    from spacy_crf.util import tokens_only

    from defaults import update_loop

    nlp = spacy.blank(lang)
    config: Dict[str, Any] = {"target": target}
    if model:
        config["model"] = {**nlp.get_factory_meta("crf_tagger").default_config["model"], **model}
    nlp.add_pipe("crf_tagger", config=config)
    refs = list(DocBin().from_disk(train_path).get_docs(nlp.vocab))
    examples = [Example(tokens_only(d, nlp.vocab), d) for d in refs]
    train_s, _ = update_loop(nlp, examples, epochs, batch_size)
    nlp.to_disk(out_dir)
    pipe = nlp.get_pipe("crf_tagger")
    return {"train_s": train_s, "n_labels": len(pipe.tags),
            "structure": f"{pipe.structure_spec.describe()} [{pipe.structure_spec.strategy_key}]",
            "model": out_dir}


def slow_decodes(report: Dict[str, Any]) -> List[str]:
    """A note naming the decode timings that got less than 90% of a core
    (``report["tasks"][task]["systems"][name]["decode"]["decode_cpu_share"]``)."""
    slow = [f"{result['title']} {name} ({r['decode']['decode_cpu_share']:.2f})"
            for result in report["tasks"].values() for name, r in result["systems"].items()
            if (r["decode"].get("decode_cpu_share") or 1.0) < 0.9]
    return ([f"Decode timings that got less than 90% of a core (CPU time / wall time; "
             f"other processes held the CPU, the tokens/s are pessimistic): {', '.join(slow)}"]
            if slow else [])


def describe_load(before: List[float], after: List[float], busy: List[str]) -> str:
    """The machine's load at the start and end of a run, in words."""
    text = (f"2-core machine shared with other work; 1/5/15-min load averages "
            f"{'/'.join(f'{v:.1f}' for v in before)} at the start and "
            f"{'/'.join(f'{v:.1f}' for v in after)} at the end")
    if busy:
        text += f"; {len(busy)} other benchmark or spacy train processes running at the start"
    return text + " (each phase's 1-min load is in the JSON)"


def verdict(ok: bool) -> str:
    """A goal's result cell."""
    return "pass" if ok else "FAIL"


def command_line(script: str, args: Any, parser: Any, names: Sequence[str]) -> str:
    """The command that made a run, for its report: ``python benchmarks/SCRIPT``,
    ``--quick`` if given, and the options of ``names`` (argparse dests) whose
    values differ from their defaults."""
    command = f"python benchmarks/{script}" + (" --quick" if args.quick else "")
    for name in names:
        value = getattr(args, name)
        if value != parser.get_default(name):
            command += f" --{name.replace('_', '-')} " + (
                " ".join(value) if isinstance(value, list) else str(value))
    return command


def task_runner(benchmark: str, command: str, settings: Dict[str, Any], tasks: Sequence[str],
                run_task: Callable[[str, Path], Dict[str, Any]],
                summarize: Callable[[Dict[str, Any]], Dict[str, Any]]
                ) -> Callable[[Path], Dict[str, Any]]:
    """The ``run`` of :func:`run_benchmark` for a benchmark of tasks: its report
    (environment, settings, ``tasks``: ``run_task(task, workdir)`` of each, the
    machine's load, wall time, ``summary``: ``summarize(report)``)."""

    def run(workdir: Path) -> Dict[str, Any]:
        load0, busy = list(os.getloadavg()), busy_processes()
        report: Dict[str, Any] = {"benchmark": benchmark, "command": command,
                                  "quick": "--quick" in command.split(),
                                  "environment": environment(), "settings": settings,
                                  "tasks": {}}
        t0 = time.perf_counter()
        for task in tasks:
            report["tasks"][task] = run_task(task, workdir)
        load1 = list(os.getloadavg())
        report["load"] = {"start": load0, "end": load1, "busy_at_start": busy,
                          "describe": describe_load(load0, load1, busy)}
        report["benchmark_wall_s"] = time.perf_counter() - t0
        report["summary"] = summarize(report)
        return report

    return run


def add_task_arguments(parser: Any, tasks: Sequence[str], default: Sequence[str]) -> None:
    """The options of a benchmark of tasks and systems trained by a plain loop
    and ``spacy train``: data, tasks, systems, the loop's epochs and batch size,
    ``--quick``, ``--out``, then :func:`add_run_arguments`'s."""
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA)
    parser.add_argument("--tasks", nargs="+", default=list(default), choices=list(tasks))
    parser.add_argument("--systems", nargs="+", default=[],
                        help="run only the systems whose names hold one of these strings")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--quick", action="store_true",
                        help="first 300 sentences of each split, short trainings")
    parser.add_argument("--out", type=Path, default=None)
    add_run_arguments(parser)
