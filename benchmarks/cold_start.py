"""Cold start: how long a new user waits before the first result (issue #32).

Each figure is a fresh process, run with an empty kernel cache
(``SPACY_CRF_NUMBA_CACHE`` naming a new directory, as in a new venv, container
or CI job) and again with the cache the cold run filled (warm). The table
cache (``SPACY_CRF_CACHE``: the Brown clusters, usual case and lemma tables
built from spacy-lookups-data at the first ``initialize``, once per user) is a
directory of the run's own: empty for the first row, **quick start, new
user** (the README's Python example as a new user's first run after install,
both caches empty, then again with both filled), and filled by it for every
later row. The cold run is measured twice: as a fresh install runs, starting from the kernels the
package ships compiled (``spacy_crf/_kernels/prebuilt.py``), and with those
switched off (``SPACY_CRF_PREBUILT=off``: every kernel compiles on this
machine, as it did before they were shipped, or where no archive matches the
installed numba and Python):

* **quick start**: the README's Python example (a 3-word example, 20 updates,
  one prediction), with the time of ``initialize``, the first update and the
  first prediction, and the seconds each kernel takes to compile (numba's
  compile events); the anchor is the same script with spaCy's own ``tagger``
  (nothing to compile);
* **first prediction**: ``spacy.load`` of the pipeline the quick start saved
  and one ``nlp(text)``; the anchor is ``spacy.blank("en")`` and one ``nlp(text)``;
* **one epoch**: ``nlp.initialize`` and one epoch of ``nlp.update`` over the
  600 sentences of the shipped EWT sample (UPOS, batches of 32, factory
  defaults without a cluster table);
* **a second copy of the code**: the quick start from a copy of the package
  (a new venv, clone or install of the same code on the same machine), with
  an empty shared cache and the shipped kernels off (cold), then from a second
  copy (warm: it reads what the first compiled, ``_kernels/shared_cache.py``).

Run from a checkout::

    python benchmarks/cold_start.py --out /tmp/cold_start.json
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "assets" / "ewt_sample" / "en_ewt-train.conllu"

#: a numba compile-event listener: seconds spent compiling each kernel, less
#: the kernels it calls (they compile inside it), in ``KERNEL_SECONDS``
COMPILE_CLOCK = """
import collections, time
from numba.core import event
KERNEL_SECONDS = collections.defaultdict(float)
_open = []

class _Clock(event.Listener):
    def on_start(self, ev):
        _open.append([time.perf_counter(), 0.0])

    def on_end(self, ev):
        started, inner = _open.pop()
        took = time.perf_counter() - started
        if _open:
            _open[-1][1] += took
        func = getattr((ev.data or {}).get("dispatcher"), "py_func", None)
        name = f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', '?')}"
        KERNEL_SECONDS[name] += took - inner

event.register("numba:compile", _Clock())
"""

QUICK_START = COMPILE_CLOCK + """
import json, sys, time
t0 = time.perf_counter()
import spacy
from spacy.training import Example
nlp = spacy.blank("en")
nlp.add_pipe(sys.argv[1], config={"target": "tag"} if sys.argv[1] == "crf_tagger" else {})
examples = [Example.from_dict(nlp.make_doc("the cat sat"), {"tags": ["DT", "NN", "VBD"]})]
t1 = time.perf_counter()
optimizer = nlp.initialize(lambda: examples)
t2 = time.perf_counter()
nlp.update(examples, sgd=optimizer)
t3 = time.perf_counter()
for _ in range(19):
    nlp.update(examples, sgd=optimizer)
t4 = time.perf_counter()
doc = nlp("the dog sat")
t5 = time.perf_counter()
nlp.to_disk(sys.argv[2])
print(json.dumps({"import_and_setup_s": t1 - t0, "initialize_s": t2 - t1,
                  "first_update_s": t3 - t2, "first_prediction_s": t5 - t4, "total_s": t5 - t0,
                  "compile_by_kernel": dict(KERNEL_SECONDS)}))
"""

FIRST_PREDICTION = """
import json, sys, time
t0 = time.perf_counter()
import spacy
nlp = spacy.load(sys.argv[1]) if sys.argv[1] != "blank" else spacy.blank("en")
doc = nlp("The quick brown fox jumps over the lazy dog .")
print(json.dumps({"total_s": time.perf_counter() - t0}))
"""

ONE_EPOCH = """
import json, random, sys, time
t0 = time.perf_counter()
import spacy
from spacy.training import Example
from spacy.util import minibatch
from spacy_crf.converters import read_conllu_upos
nlp = spacy.blank("en")
nlp.add_pipe("crf_tagger", config={"target": "pos", "model": {
    "@architectures": "spacy-crf.FeatureCRF.v2", "cluster_templates": None}})
examples = [Example.from_dict(spacy.tokens.Doc(nlp.vocab, words=w), {"pos": t})
            for w, t in read_conllu_upos(sys.argv[1])]
t1 = time.perf_counter()
optimizer = nlp.initialize(lambda: examples)
random.seed(0)
random.shuffle(examples)
for batch in minibatch(examples, size=32):
    nlp.update(batch, sgd=optimizer)
t2 = time.perf_counter()
print(json.dumps({"epoch_s": t2 - t1, "total_s": t2 - t0}))
"""


def run(script: str, args: List[str], cache: Path, tables: Path, code: Optional[Path] = None,
        shipped: bool = True) -> Dict[str, Any]:
    """One fresh process with ``cache`` as spacy-crf's kernel cache and
    ``tables`` as its table cache; its own timings and the process's wall
    time. ``code``: a directory holding a copy of the package to run instead;
    ``shipped=False`` switches the kernels the package ships compiled off."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("NUMBA_CACHE_DIR", "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")}
    env.update(SPACY_CRF_NUMBA_CACHE=str(cache), SPACY_CRF_CACHE=str(tables),
               SPACY_CRF_PREBUILT="" if shipped else "off")
    if code is not None:
        env.update(PYTHONPATH=str(code))
    start = time.perf_counter()
    # run from the work directory: ``python -c`` puts the current directory
    # first on sys.path, so from a checkout the checkout's package would be
    # imported, not ``code``'s copy
    proc = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True,
                          text=True, timeout=900, cwd=str(tables.parent))
    wall = time.perf_counter() - start
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["process_wall_s"] = wall
    result["notice"] = "compiling its CRF kernels" in proc.stderr
    return result


def cold_and_warm(script: str, args: List[str], work: Path, name: str,
                  shipped: bool = True) -> Dict[str, Any]:
    cache = work / f"cache-{name}"
    cache.mkdir()
    tables = work / "tables"
    return {"cold": run(script, args, cache, tables, shipped=shipped),
            "warm": run(script, args, cache, tables, shipped=shipped)}


def measure(work: Path) -> Dict[str, Any]:
    report: Dict[str, Any] = {}
    # first, while the run's table cache (work/tables) is still empty: a new
    # user's first quick start builds the tables; every later row reads them
    report["quick start, crf_tagger, new user"] = cold_and_warm(
        QUICK_START, ["crf_tagger", str(work / "crf-new")], work, "new")
    for shipped, how in ((True, ""), (False, ", compiled here")):
        tag = "" if shipped else "-here"
        report[f"quick start, crf_tagger{how}"] = cold_and_warm(
            QUICK_START, ["crf_tagger", str(work / f"crf{tag}")], work, f"quick{tag}", shipped)
        report[f"first prediction, crf_tagger{how}"] = cold_and_warm(
            FIRST_PREDICTION, [str(work / f"crf{tag}")], work, f"first{tag}", shipped)
        report[f"one epoch, 600 sentences{how}"] = cold_and_warm(
            ONE_EPOCH, [str(SAMPLE)], work, f"epoch{tag}", shipped)
    report["quick start, spaCy tagger (anchor)"] = cold_and_warm(
        QUICK_START, ["tagger", str(work / "tagger")], work, "tagger")
    report["first prediction, blank spaCy (anchor)"] = cold_and_warm(FIRST_PREDICTION, ["blank"],
                                                                     work, "blank")
    # a new venv, clone or install of the same code on the same machine: a copy
    # of the package elsewhere, with new file times, reads the kernels the
    # first copy compiled (spacy-crf's shared cache, _kernels/shared_cache.py)
    shared = work / "shared-cache"
    copies = []
    for name in ("first", "second"):
        copy = work / f"code-{name}"
        shutil.copytree(ROOT / "spacy_crf", copy / "spacy_crf",
                        ignore=shutil.ignore_patterns("__pycache__"))
        copies.append(copy)
    report["quick start, a second copy of the code"] = {
        "cold": run(QUICK_START, ["crf_tagger", str(work / "crf-first")], shared,
                    work / "tables", copies[0], shipped=False),
        "warm": run(QUICK_START, ["crf_tagger", str(work / "crf-second")], shared,
                    work / "tables", copies[1], shipped=False)}
    return report


def print_report(report: Dict[str, Any]) -> None:
    print(f"{'figure':42} {'cold s':>8} {'warm s':>8}  cold breakdown")
    for name, runs in report.items():
        cold, warm = runs["cold"], runs["warm"]
        parts = ", ".join(f"{k[:-2]} {v:.2f}" for k, v in cold.items()
                          if k.endswith("_s") and k not in ("total_s", "process_wall_s"))
        print(f"{name:42} {cold['process_wall_s']:8.2f} {warm['process_wall_s']:8.2f}  "
              f"{parts}{'; notice printed' if cold['notice'] else ''}")
    new, known = report["quick start, crf_tagger, new user"], report["quick start, crf_tagger"]
    print(f"\nnew user: {new['cold']['process_wall_s']:.2f} s the first time (the kernel and "
          f"table caches empty: initialize {new['cold']['initialize_s']:.2f} s, against "
          f"{known['cold']['initialize_s']:.2f} s with the tables cached), "
          f"{new['warm']['process_wall_s']:.2f} s later")
    kernels = report["quick start, crf_tagger, compiled here"]["cold"].get("compile_by_kernel") or {}
    shipped = report["quick start, crf_tagger"]["cold"].get("compile_by_kernel") or {}
    print(f"\nquick start, cold from the shipped kernels: {sum(shipped.values()):.2f} s compiling "
          f"({len([k for k in shipped if k.startswith('spacy_crf.')])} kernels of spacy_crf)")
    if kernels:
        ours = {k: v for k, v in kernels.items() if k.startswith("spacy_crf.")}
        print(f"\nquick start, cold, compiled here: {sum(kernels.values()):.2f} s compiling ({sum(ours.values()):.2f} s "
              f"in {len(ours)} kernels of spacy_crf, the rest numba's own numpy functions); "
              "seconds per kernel, less the kernels it calls:")
        for name, seconds in sorted(ours.items(), key=lambda kv: -kv[1])[:12]:
            print(f"  {seconds:6.2f}  {name}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cold_start_") as tmp:
        report = measure(Path(tmp))
    print_report(report)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2), encoding="utf8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
