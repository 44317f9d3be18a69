"""1,000 entity types on real entities: the factory defaults against spaCy's ``ner`` (#51).

    python benchmarks/many_entity_types.py --out /tmp/many_types.json            # full run
    python benchmarks/many_entity_types.py --quick --out /tmp/many_types_q.json  # sample, < 3 min
    python benchmarks/many_entity_types.py --systems crf_defaults crf_order1 spacy_ner \
        --out /tmp/many_types_order1.json            # and the full chain (slow)

Issue #51 asks that "1,000 entity types train as spaCy's ner does"; spaCy's
own ``test_issue2800`` adds 1,000 entity types to a blank English pipeline.
Here every system gets ``--types`` (1,000) entity types and trains on real
entities:

* **Data**: Universal NER English EWT (IOB2, PER / ORG / LOC; columns index,
  word, tag, ...; ``#`` comment lines; a blank line between sentences), read
  with ``uner.read_iob2``. The full run reads ``--data-dir`` (default
  ``../shared/data``, folder ``uner_english_ewt``): the first
  ``--train-sentences`` (2,000) of ``en_ewt-ud-train.v0-normalized.iob2`` and
  the first ``--test-sentences`` (1,000) of ``en_ewt-ud-test.iob2``.
  ``--quick`` reads the shipped sample ``assets/ewt_sample/en_ewt-{train,test}.iob2``
  (300 / 200 sentences).
* **Labels**: the 3 real types plus synthetic ones ``T0``, ``T1``, ... up to
  ``--types`` in all, each given to the component with ``add_label`` before
  ``nlp.initialize`` (as ``test_issue2800`` does): 4 x types + 1 BILUO tags
  (4,001 at 1,000 types), of which the data uses 13.
* **Systems**, each in a fresh process (``common.run_isolated``, so the peak
  RSS is its own):

  - ``crf_defaults``: ``spacy.blank("en")``, ``nlp.add_pipe("crf_tagger",
    config={"target": "ents"})`` with every factory default (above 200 tags a
    pruned chain; its structure, ``candidates`` and ``margin`` are recorded);
  - ``crf_order1`` (not run unless named in ``--systems``: about 45 tokens/s
    at 1,000 types): the same with the full first-order chain
    (``spacy-crf.Chain.v1``, order 1), the defaults before the pruned chain;
  - ``spacy_ner``: ``spacy.blank("en")``, ``nlp.add_pipe("ner")`` (spaCy's
    default ner model, its own tok2vec), the same labels by ``add_label``.

* **Measured**: ``nlp.initialize(lambda: examples)`` and ``--epochs`` (2) of
  ``nlp.update(batch, sgd=optimizer, losses=losses)`` in shuffled batches of
  ``--batch-size`` (32, a fixed seed): training tokens/s of the last epoch
  (the first loads the kernels) and the seconds of the whole loop with the
  initialize; decode tokens/s over the test sentences (``nlp.pipe`` on fresh
  ``nlp.make_doc`` docs of their words, batch 1000, best of ``--decode-runs``
  after a warm-up: ``common.time_pipe``); ``nlp.evaluate`` on the test
  examples (ents P / R / F); the process's peak RSS; the saved pipeline's size
  on disk (``nlp.to_disk``). Warnings raised in a system's process (W039,
  a wide table's rows) are kept in the JSON.

The notes give crf_defaults over spacy_ner: training tokens/s and decode
tokens/s. A full run first waits until no other benchmark or ``spacy train``
process is running (``--no-wait`` to skip).
"""

import argparse
import random
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (SHARED_DATA, add_run_arguments, add_sample_arguments,  # noqa: E402
                    disk_bytes, environment, log, make_summary, markdown_table, mb,
                    render_summary, run_benchmark, run_isolated, sample_sizes, summary_row,
                    time_pipe)
from uner import FULL_FILES, SAMPLE, UNER_SUBDIR, read_iob2  # noqa: E402

REAL_TYPES = ("PER", "ORG", "LOC")
#: component config of each crf system (the factory's defaults otherwise); spacy_ner apart
CRF_SYSTEMS: Dict[str, Dict[str, Any]] = {
    "crf_defaults": {"target": "ents"},
    "crf_order1": {"target": "ents",
                   "structure": {"@structures": "spacy-crf.Chain.v1", "order": 1}},
}
SYSTEMS = (*CRF_SYSTEMS, "spacy_ner")
DEFAULT_SYSTEMS = ("crf_defaults", "spacy_ner")
SYSTEM_NAMES = {
    "crf_defaults": 'crf_tagger, factory defaults (target "ents")',
    "crf_order1": "crf_tagger, full chain (Chain.v1 order 1)",
    "spacy_ner": "spaCy ner (default model)",
}
SEED = 0

Sentences = List[Tuple[List[str], List[str]]]  # (words, IOB2 tags)


# -- data -----------------------------------------------------------------------------

def data_files(data_dir: Path, quick: bool) -> Dict[str, Path]:
    """The train and test IOB2 files (the shipped sample with ``quick``)."""
    if quick:
        return {s: SAMPLE / f"en_ewt-{s}.iob2" for s in ("train", "test")}
    return {s: data_dir / UNER_SUBDIR / FULL_FILES[s] for s in ("train", "test")}


def entity_types(n_types: int) -> List[str]:
    """The real types, then synthetic ``T0``, ``T1``, ... up to ``n_types`` in all."""
    return [*REAL_TYPES, *(f"T{i}" for i in range(max(0, n_types - len(REAL_TYPES))))]


def corpus_stats(sentences: Sentences) -> Dict[str, Any]:
    entities: Dict[str, int] = {}
    for _, tags in sentences:
        for tag in tags:
            if tag.startswith("B-"):
                entities[tag[2:]] = entities.get(tag[2:], 0) + 1
    return {"sentences": len(sentences), "tokens": sum(len(w) for w, _ in sentences),
            "entities": dict(sorted(entities.items()))}


# -- one system, in a fresh process -------------------------------------------------------

def train_loop(nlp: Any, examples: List[Any], epochs: int, batch_size: int) -> Dict[str, Any]:
    """``nlp.initialize(lambda: examples)`` and ``epochs`` shuffled passes of
    ``nlp.update`` (seed :data:`SEED`): the seconds of each part and the losses."""
    from spacy.util import minibatch

    start = time.perf_counter()
    optimizer = nlp.initialize(lambda: examples)
    initialize_s = time.perf_counter() - start
    rng = random.Random(SEED)
    order = list(examples)
    epoch_s, losses_by_epoch = [], []
    for _ in range(epochs):
        epoch_start = time.perf_counter()
        rng.shuffle(order)
        losses: Dict[str, float] = {}
        for batch in minibatch(order, size=batch_size):
            nlp.update(batch, sgd=optimizer, losses=losses)
        epoch_s.append(time.perf_counter() - epoch_start)
        losses_by_epoch.append({k: float(v) for k, v in losses.items()})
    return {"train_s": time.perf_counter() - start, "initialize_s": initialize_s,
            "epoch_s": epoch_s, "losses": losses_by_epoch}


def phase_system(system: str, n_types: int, train: Sentences, test: Sentences, epochs: int,
                 batch_size: int, decode_runs: int, out_dir: str) -> Dict[str, Any]:
    """Build ``system`` with ``n_types`` entity types, train, save, decode, score."""
    import spacy
    from spacy.tokens import Doc
    from spacy.training import Example
    from spacy.util import fix_random_seed

    fix_random_seed(SEED)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nlp = spacy.blank("en")
        name = "ner" if system == "spacy_ner" else "crf_tagger"
        pipe = nlp.add_pipe(name, config=CRF_SYSTEMS.get(system, {}))
        for label in entity_types(n_types):
            pipe.add_label(label)
        examples = [Example(Doc(nlp.vocab, words=w), Doc(nlp.vocab, words=w, ents=t))
                    for w, t in train]
        loop = train_loop(nlp, examples, epochs, batch_size)
        epoch_tokens = sum(len(w) for w, _ in train)
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        nlp.to_disk(out)
        texts = [" ".join(w) for w, _ in test]
        timing = time_pipe(nlp, lambda: [nlp.make_doc(t) for t in texts], decode_runs,
                           warmup_docs=200)
        best = min(timing["times"])
        n_tokens = sum(len(d) for d in timing["docs"])
        scores = nlp.evaluate([Example(Doc(nlp.vocab, words=w), Doc(nlp.vocab, words=w, ents=t))
                               for w, t in test])
    result: Dict[str, Any] = {
        "system": system, "entity_types": n_types, "component": name,
        "n_moves_or_tags": len(pipe.move_names) if name == "ner" else len(pipe.tags),
        "labels": len(pipe.labels),
        **loop,
        "train_tokens_per_epoch": epoch_tokens,
        # the last epoch's: the first calls load (or compile) the kernels
        "train_tokens_per_s": epoch_tokens / loop["epoch_s"][-1],
        "decode_tokens": n_tokens, "decode_runs_s": timing["times"],
        "decode_warmup_s": timing["warmup_s"],
        "decode_cpu_share": timing["shares"][timing["times"].index(best)],
        "decode_tokens_per_s": n_tokens / best,
        "ents_p": scores["ents_p"], "ents_r": scores["ents_r"], "ents_f": scores["ents_f"],
        "ents_per_type": {t: s for t, s in (scores.get("ents_per_type") or {}).items()
                          if t in REAL_TYPES},
        "model_bytes": disk_bytes(out), "component_bytes": disk_bytes(out / name),
        "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
    }
    if name == "crf_tagger":
        from spacy_crf.models.hashed_linear import NAME as HASHED_TABLE

        result.update({
            "structure": pipe.crf_structure.name,
            "structure_describe": pipe.structure_spec.describe(),
            "candidates": pipe.cfg.get("candidates"), "margin": pipe.cfg.get("margin"),
            "table_shapes": [list(node.get_param("W").shape) for node in pipe.model.walk()
                             if node.name == HASHED_TABLE and node.has_param("W")
                             and node.get_param("W") is not None]})
    else:
        result["structure"] = "transition-based"
    return result


# -- the run and its report -------------------------------------------------------------

def run(args: argparse.Namespace, files: Dict[str, Path], workdir: Path) -> Dict[str, Any]:
    train = read_iob2(files["train"])[:args.train_sentences]
    test = read_iob2(files["test"])[:args.test_sentences]
    report: Dict[str, Any] = {
        "benchmark": "many_entity_types", "quick": args.quick,
        "command": command_line(args), "environment": environment(),
        "data": {s: str(p) for s, p in files.items()},
        "settings": {"types": args.types, "systems": list(args.systems), "epochs": args.epochs,
                     "batch_size": args.batch_size, "decode_runs": args.decode_runs,
                     "train_sentences": args.train_sentences,
                     "test_sentences": args.test_sentences, "seed": SEED},
        "corpus": {"train": corpus_stats(train), "test": corpus_stats(test)},
        "systems": {},
    }
    c = report["corpus"]
    log(f"train {c['train']['sentences']} sentences / {c['train']['tokens']} tokens "
        f"{c['train']['entities']}, test {c['test']['sentences']} / {c['test']['tokens']} "
        f"{c['test']['entities']}; {args.types} entity types")
    for system in args.systems:
        log(f"{system}: training ({args.epochs} epochs)")
        try:
            r = run_isolated(phase_system, system, args.types, train, test, args.epochs,
                             args.batch_size, args.decode_runs, str(workdir / system))
        except Exception as err:  # noqa: BLE001 (a failed system is a result here)
            r = {"system": system, "error": f"{type(err).__name__}: {err}"}
            log(f"    {system} FAILED: {r['error'][:500]}")
        else:
            log(f"    {r['n_moves_or_tags']} tags/moves, {r['structure']}: train "
                f"{r['train_tokens_per_s']:,.0f} tok/s (last epoch), {r['train_s']:.1f}s in all; "
                f"decode {r['decode_tokens_per_s']:,.0f} tok/s; ents F {100 * r['ents_f']:.2f}; "
                f"peak {r['peak_rss_mb']:,.0f} MB; model {mb(r['model_bytes'])} MB"
                + (f"; {len(r['warnings'])} warning(s)" if r["warnings"] else ""))
        report["systems"][system] = r
    ours, ner = report["systems"].get("crf_defaults"), report["systems"].get("spacy_ner")
    if ours and ner and "error" not in ours and "error" not in ner:
        report["ratios"] = {
            "train_tokens_per_s_crf_defaults_over_spacy_ner":
                ours["train_tokens_per_s"] / ner["train_tokens_per_s"],
            "decode_tokens_per_s_crf_defaults_over_spacy_ner":
                ours["decode_tokens_per_s"] / ner["decode_tokens_per_s"]}
    report["summary"] = many_types_summary(report)
    return report


def command_line(args: argparse.Namespace) -> str:
    command = "python benchmarks/many_entity_types.py" + (" --quick" if args.quick else "")
    if args.out:
        command += f" --out {args.out}"
    return command


def structure_cell(r: Dict[str, Any]) -> str:
    if r["structure"] == "transition-based":
        return r["structure"]
    extra = ", ".join(f"{k} {r[k]}" for k in ("candidates", "margin") if r.get(k) is not None)
    return r["structure"] + (f" ({extra})" if extra else "")


def many_types_summary(report: Dict[str, Any]) -> Dict[str, Any]:
    """One summary row per system (``common.summary_row``), the benchmark's own
    table and notes."""
    settings, c = report["settings"], report["corpus"]
    task = f"UNER EWT, {settings['types']:,} entity types"
    rows, table = [], []
    for system, r in report["systems"].items():
        if "error" in r:
            table.append([system, r["error"][:120], "", "", "", "", "", "", ""])
            continue
        rows.append(summary_row(task, SYSTEM_NAMES[system], "F1", r["ents_f"], r["train_s"],
                                r["decode_tokens_per_s"], r["peak_rss_mb"], None,
                                r["model_bytes"]))
        table.append([system, f"{r['n_moves_or_tags']:,}", structure_cell(r),
                      f"{r['train_tokens_per_s']:,.0f}", f"{r['train_s']:.1f}",
                      f"{r['decode_tokens_per_s']:,.0f}", f"{100 * r['ents_f']:.2f}",
                      f"{r['peak_rss_mb']:,.0f}", mb(r["model_bytes"])])
    notes = [
        f"data: {'QUICK: the shipped sample' if report['quick'] else 'UNER English EWT'}, the "
        f"first {c['train']['sentences']:,} train sentences ({c['train']['tokens']:,} tokens) "
        f"and {c['test']['sentences']:,} test sentences ({c['test']['tokens']:,} tokens, "
        f"{sum(c['test']['entities'].values())} entities of PER / ORG / LOC)",
        f"every system gets {settings['types']:,} entity types by add_label before "
        f"nlp.initialize (3 real, the rest synthetic T0, T1, ...: test_issue2800's setup); "
        f"tags: the crf_tagger's BILUO tags, the ner's moves",
        f"train: nlp.initialize and {settings['epochs']} epochs of nlp.update, batches of "
        f"{settings['batch_size']}; tok/s of the last epoch; train s: the whole loop with the "
        f"initialize. decode: nlp.pipe on fresh nlp.make_doc docs, best of "
        f"{settings['decode_runs']}; ents F: nlp.evaluate; peak RSS: the system's process; "
        f"model MB: the saved pipeline directory",
    ]
    ratios = report.get("ratios")
    if ratios:
        notes.append(
            f"crf_defaults over spacy_ner: training tokens/s "
            f"{ratios['train_tokens_per_s_crf_defaults_over_spacy_ner']:.2f}x, decode tokens/s "
            f"{ratios['decode_tokens_per_s_crf_defaults_over_spacy_ner']:.2f}x")
    for system, r in report["systems"].items():
        for w in r.get("warnings", []):
            notes.append(f"{system} warned: {w[:300]}")
    tables = [{"caption": f"{settings['types']:,} entity types, each system in a fresh process:",
               "headers": ["system", "tags", "structure", "train tok/s (last epoch)", "train s",
                           "decode tok/s", "ents F", "peak RSS MB", "model MB"],
               "rows": table}]
    title = f"{settings['types']:,} entity types on UNER English EWT" + (
        " (quick)" if report["quick"] else "")
    return make_summary(title, report["command"], rows, notes, tables)


def print_report(report: Dict[str, Any]) -> None:
    print("\n" + render_summary(report["summary"], level=2))
    print("Where the time went (the JSON has every figure):")
    print(markdown_table(
        ["system", "initialize s", "epoch s", "losses (last epoch)", "decode cpu share",
         "table shapes"],
        [[s, f"{r['initialize_s']:.1f}", " / ".join(f"{t:.1f}" for t in r["epoch_s"]),
          ", ".join(f"{k} {v:,.1f}" for k, v in r["losses"][-1].items()) if r["losses"] else "",
          r["decode_cpu_share"], " ".join("x".join(map(str, t)) for t in r.get("table_shapes", []))]
         for s, r in report["systems"].items() if "error" not in r]))
    wait = report.get("wait")
    if wait:
        print(f"\nwaited {wait['waited_s']:.0f}s for a quiet machine"
              + ("" if wait["quiet"] else " (gave up: busy)"))
    print(f"\nbenchmark wall time: {report['benchmark_wall_s']:.0f}s")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA,
                        help=f"folder holding {UNER_SUBDIR}/ (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=None, help="write every number here (JSON)")
    parser.add_argument("--quick", action="store_true",
                        help="the shipped sample (300 train / 200 test sentences), no quiet wait")
    parser.add_argument("--types", type=int, default=1000,
                        help="entity types of every system, the 3 real ones among them")
    parser.add_argument("--systems", nargs="+", default=list(DEFAULT_SYSTEMS),
                        choices=list(SYSTEMS),
                        help="crf_order1 (the full chain) is slow: ~45 tokens/s at 1,000 types")
    add_sample_arguments(parser)
    add_run_arguments(parser)
    args = parser.parse_args(argv)
    sample_sizes(args)
    files = data_files(args.data_dir, args.quick)
    return run_benchmark(args, list(files.values()), "many_entity_types_",
                         lambda workdir: run(args, files, workdir), print_report)


if __name__ == "__main__":
    sys.exit(main())
