"""Morphology (target ``morph``) against spaCy's morphologizer and sklearn-crfsuite,
with the UPOS model's decode speed beside it, in one run (issue #51's acceptance).

UD English EWT (``--data-dir``, folder ``ud_english_ewt``: ``en_ewt-ud-{train,dev,test}.conllu``),
converted with ``spacy convert -c conllu -n 1`` into the work directory; trained
on train, scored on test. Each system trains in a fresh process and is decoded
in another fresh process (the spaCy pipelines), so peak RSS is per phase:

1. **factory defaults, nlp.update loop**: ``nlp.add_pipe("crf_tagger",
   config={"target": "morph"})`` (the pruned chain ``spacy-crf.PrunedChain.v1``,
   8 candidates, the factory's default model, factored over the labels' parts),
   ``nlp.initialize()``'s optimizer, 5 shuffled epochs of ``nlp.update`` in
   batches of 32 sentences;
1b. **the same with a weight per label**: the factory's model with
   ``factored = false``, the same loop (what factoring changes);
2. **factory defaults, spacy train (filled config)**: ``spacy init fill-config``
   of a config naming only ``[components.morph] factory = "crf_tagger"
   target = "morph"`` (and the corpora), trained by ``spacy train`` as filled;
3. **tuned config, spacy train**: ``configs/ewt_morph.cfg``;
4. **spaCy morphologizer**: ``spacy init config -p morphologizer -o efficiency``
   (CPU), ``spacy train`` with a fixed step budget (``--morphologizer-steps``,
   patience 0), model-best;
5. **sklearn-crfsuite**: the joined labels (``"Number=Sing|POS=NOUN"``, as the
   morph target makes them) over the tuned config's templates and cluster
   templates rendered by ``crfsuite_peer.py``; L-BFGS, c1 0.1, c2 0.01,
   ``max_iterations`` capped (``--crfsuite-iterations``, default 40: with 321
   labels an iteration takes ~25 s on 2 busy cores, where 100 would take the
   benchmark past an hour; the cap is in the JSON and the table);
6. **UPOS model**: ``config={"target": "pos"}`` factory defaults, the same loop,
   for its decode speed (the morph/UPOS ratio) and its pos_acc.

UD Greek GDT (``ud_greek_gdt``, ``--tasks gdt``; licensed non-commercial, read
from the data directory and never copied into the repository): rows 1, 1b and 6.

Every system is scored by one function (spaCy's ``morphologizer_score``:
``morph_acc``, ``pos_acc``) on Docs made from the gold test words, predictions
read back as joined labels. Decode tokens/s: ``nlp.pipe`` (batch 1000) over those
Docs, best of ``--decode-runs`` after a warm-up; for crfsuite featurize + predict.
Model MB: the components' directories (crfsuite: its model file).

    python benchmarks/morph.py --data-dir ../shared/data --out benchmarks/results/morph.json
    python benchmarks/morph.py --quick --no-wait --out /tmp/morph_quick.json   # 300 sentences
    # factored against a weight per label, and the UPOS model, on both treebanks (~8 min):
    python benchmarks/morph.py --data-dir ../shared/data --systems "nlp.update loop" --out benchmarks/results/morph_factored.json
"""

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (REPO_ROOT, add_task_arguments, command_line,  # noqa: E402
                    convert_ud, disk_bytes, filled_factory_config, log, make_summary,
                    phase_plain_loop, render_summary, run_benchmark, run_isolated, slow_decodes,
                    summary_row, task_runner, time_pipe, train_spacy_subprocess, verdict)

TASKS = {
    "ewt": {"title": "UD English EWT", "lang": "en", "dir": "ud_english_ewt", "prefix": "en_ewt-ud"},
    "gdt": {"title": "UD Greek GDT", "lang": "el", "dir": "ud_greek_gdt", "prefix": "el_gdt-ud"},
}
TUNED_CONFIG = REPO_ROOT / "configs" / "ewt_morph.cfg"
PLAIN = "factory defaults, nlp.update loop"
FILLED = "factory defaults, spacy train (filled config)"
TUNED = "tuned config (configs/ewt_morph.cfg), spacy train"
MORPHOLOGIZER = "spaCy morphologizer (efficiency config)"
CRFSUITE = "sklearn-crfsuite"
UPOS = "UPOS model (target pos), factory defaults, nlp.update loop"
#: the factory's model with a weight per label, not per label part
PER_LABEL = "factory defaults but factored = false (a weight per label), nlp.update loop"
#: issue #51's goals
GOALS = {"ufeats": 0.964, "tok_s": 400_000, "ratio": 0.4, "rss_mb": 1.2 * 1024,
         "model_mb": 40, "gdt_ufeats": 0.915}

# -- data --------------------------------------------------------------------------

def prepare(task: str, data_dir: Path, workdir: Path, limit: int) -> Dict[str, Path]:
    """``spacy convert -c conllu -n 1`` of train, dev and test into the work dir."""
    spec = TASKS[task]
    return convert_ud(data_dir, spec["dir"], spec["prefix"], workdir / f"{task}_corpus", limit)


def joined_labels(path: Path, lang: str) -> List[Any]:
    """(words, joined labels) of every doc of a ``.spacy`` file, the labels as the
    morph target makes them (``"_"`` where a token has neither FEATS nor POS)."""
    import spacy
    from spacy.tokens import DocBin

    from spacy_crf.targets import make_target

    target = make_target("morph")
    vocab = spacy.blank(lang).vocab
    return [([t.text for t in doc],
             [target.label_of(vocab, t.morph.key, t.pos) or "_" for t in doc])
            for doc in DocBin().from_disk(path).get_docs(vocab)]


def score_labels(test_path: Path, lang: str, pred: Sequence[Sequence[str]]) -> Dict[str, Any]:
    """spaCy's ``morphologizer_score`` of predicted joined labels against the test docs
    (predicted Docs with the gold words: one scoring for every system)."""
    import spacy
    from spacy.morphology import Morphology
    from spacy.pipeline.morphologizer import morphologizer_score
    from spacy.tokens import DocBin
    from spacy.training import Example

    from spacy_crf.targets import make_target
    from spacy_crf.util import tokens_only

    target = make_target("morph")
    vocab = spacy.blank(lang).vocab
    gold = list(DocBin().from_disk(test_path).get_docs(vocab))
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} test docs but {len(pred)} predicted")
    examples = []
    right = total = 0
    for ref, labels in zip(gold, pred):
        if len(ref) != len(labels):
            raise ValueError("a predicted doc differs in length from its gold doc")
        doc = tokens_only(ref, vocab)
        for token, label in zip(doc, labels):
            feats = Morphology.feats_to_dict(label) if label and label != "_" else {}
            token.pos_ = feats.pop("POS", "")
            token.set_morph(Morphology.dict_to_feats(feats) or "_")
        examples.append(Example(doc, ref))
        right += sum(g == p for g, p in zip(joined_row(ref, target), labels))
        total += len(labels)
    scores = morphologizer_score(examples)
    return {"morph_acc": scores["morph_acc"], "pos_acc": scores["pos_acc"],
            "joined_acc": right / total if total else 0.0, "n_tokens": total,
            "morph_per_feat": {k: v["f"] for k, v in (scores.get("morph_per_feat") or {}).items()}}


def joined_row(doc: Any, target: Any) -> List[str]:
    """The joined labels of a doc's tokens (``"_"`` for neither FEATS nor POS)."""
    return [target.label_of(doc.vocab, t.morph.key, t.pos) or "_" for t in doc]


# -- phases (each in a fresh process) -----------------------------------------------

def phase_decode(model_dir: str, test_path: str, decode_runs: int) -> Dict[str, Any]:
    """Load a saved pipeline, tag Docs of the gold test words (``nlp.pipe``, best of
    ``decode_runs`` after a warm-up), read the predictions back as joined labels."""
    import spacy
    from spacy.tokens import Doc, DocBin

    from spacy_crf.targets import make_target

    target = make_target("morph")
    nlp = spacy.load(model_dir)
    words = [[t.text for t in d] for d in DocBin().from_disk(test_path).get_docs(nlp.vocab)]
    timing = time_pipe(nlp, lambda: [Doc(nlp.vocab, words=w) for w in words], decode_runs,
                       warmup_docs=200)
    best = min(timing["times"])
    n_tokens = sum(len(w) for w in words)
    pred = [[target.label_of(nlp.vocab, t.morph.key, t.pos) or "_" for t in doc]
            for doc in timing["docs"]]
    components = {name: disk_bytes(Path(model_dir) / name) for name in nlp.pipe_names}
    n_labels = {name: len(getattr(nlp.get_pipe(name), "labels", ()) or ())
                for name in nlp.pipe_names}
    structures = {name: nlp.get_pipe(name).structure_spec.describe() for name in nlp.pipe_names
                  if hasattr(nlp.get_pipe(name), "structure_spec")}
    return {"decode_s": best, "decode_runs_s": timing["times"],
            "decode_cpu_share": timing["shares"][timing["times"].index(best)],
            "decode_tokens_per_s": n_tokens / best, "n_test_tokens": n_tokens,
            "model_bytes": sum(components.values()), "component_bytes": components,
            "n_labels": n_labels, "structures": structures, "pred": pred}


def filled_config(lang: str, workdir: Path) -> Path:
    """The factory config of a component named ``morph`` (issue #51), filled."""
    return filled_factory_config(workdir, f"morph_factory_{lang}", "morph", lang=lang,
                                 name="morph")


# -- the run -----------------------------------------------------------------------

def decoded(row: Dict[str, Any], model_dir: Path, corpus: Dict[str, Path], lang: str,
            decode_runs: int) -> Dict[str, Any]:
    """Decode and score a saved pipeline; its figures merged into ``row``."""
    result = run_isolated(phase_decode, str(model_dir), str(corpus["test"]), decode_runs)
    row["scores"] = score_labels(corpus["test"], lang, result.pop("pred"))
    row["decode"] = result
    return row


def run_task(task: str, args: Any, workdir: Path) -> Dict[str, Any]:
    spec, lang = TASKS[task], TASKS[task]["lang"]
    limit = 300 if args.quick else 0
    log(f"{task}: converting")
    corpus = prepare(task, args.data_dir, workdir, limit)
    train_counts = joined_labels(corpus["train"], lang)
    n_labels = len({lab for _, labs in train_counts for lab in labs})
    rows: Dict[str, Dict[str, Any]] = {}
    quick_train = (["--training.max_steps", "100", "--training.eval_frequency", "50"]
                   if args.quick else [])
    systems = ([PLAIN, PER_LABEL, FILLED, TUNED, MORPHOLOGIZER, CRFSUITE, UPOS] if task == "ewt"
               else [PLAIN, PER_LABEL, UPOS])
    systems = [s for s in systems if not args.systems or any(k in s for k in args.systems)]
    for name in systems:
        log(f"{task}: {name}")
        out = workdir / f"{task}_{len(rows)}"
        if name in (PLAIN, PER_LABEL, UPOS):
            row = run_isolated(phase_plain_loop, lang, "pos" if name == UPOS else "morph",
                               str(corpus["train"]), str(out), args.epochs, args.batch_size,
                               {"factored": False} if name == PER_LABEL else None)
            row["train_peak_rss_mb"] = row.pop("peak_rss_mb")
            rows[name] = decoded(row, out, corpus, lang, args.decode_runs)
        elif name in (FILLED, TUNED):
            config = filled_config(lang, workdir) if name == FILLED else TUNED_CONFIG
            row = train_spacy_subprocess(config, out, corpus, quick_train,
                                         workdir / f"{out.name}.log")
            row["config"] = str(config.relative_to(REPO_ROOT)) if name == TUNED else \
                "spacy init fill-config of [components.morph] factory crf_tagger target morph"
            row["train_peak_rss_mb"] = row.pop("peak_rss_mb")
            rows[name] = decoded(row, out / "model-best", corpus, lang, args.decode_runs)
        elif name == MORPHOLOGIZER:
            from spacy_peer import make_default_config, train_fixed_steps

            made = make_default_config("morphologizer", workdir / f"morphologizer_{lang}.cfg", lang)
            steps = 100 if args.quick else args.morphologizer_steps
            row = train_fixed_steps(Path(made["path"]), out, corpus, steps,
                                    50 if args.quick else 200, workdir / f"{out.name}.log")
            row["config"] = made["command"]
            row["train_peak_rss_mb"] = row.pop("peak_rss_mb")
            rows[name] = decoded(row, out / "model-best", corpus, lang, args.decode_runs)
        elif name == CRFSUITE:
            from spacy.util import load_config

            from crfsuite_peer import phase_fit_and_decode

            model = load_config(TUNED_CONFIG, interpolate=False)["components"]["crf_tagger"]["model"]
            templates = list(model["templates"]) + list(model.get("cluster_templates") or [])
            iterations = 5 if args.quick else args.crfsuite_iterations
            params = {"algorithm": "lbfgs", "c1": 0.1, "c2": 0.01, "max_iterations": iterations}
            test = joined_labels(corpus["test"], lang)
            row = run_isolated(phase_fit_and_decode, train_counts, [w for w, _ in test],
                               templates, params, str(workdir / "crfsuite.model"),
                               args.decode_runs)
            row["train_peak_rss_mb"] = row.pop("peak_rss_mb")
            row["scores"] = score_labels(corpus["test"], lang, row.pop("pred"))
            row["decode"] = {k: row.pop(k) for k in ("decode_s", "decode_runs_s",
                                                     "decode_cpu_share", "decode_tokens_per_s",
                                                     "n_test_tokens", "model_bytes")}
            row["templates"] = templates
            rows[name] = row
        r = rows[name]
        log(f"  {name}: morph_acc {100 * r['scores']['morph_acc']:.2f}, pos_acc "
            f"{100 * r['scores']['pos_acc']:.2f}, train {r['train_s']:.1f} s, "
            f"{r['decode']['decode_tokens_per_s']:,.0f} tok/s, train peak "
            f"{r['train_peak_rss_mb']:.0f} MB, {r['decode']['model_bytes'] / 2**20:.1f} MB")
    return {"title": spec["title"], "n_train_docs": len(train_counts),
            "n_train_tokens": sum(len(w) for w, _ in train_counts),
            "n_joined_labels_train": n_labels, "systems": rows}


def morph_summary(report: Dict[str, Any]) -> Dict[str, Any]:
    rows, goal_rows = [], []
    for task, result in report["tasks"].items():
        systems = result["systems"]
        for name, r in systems.items():
            s, d = r["scores"], r["decode"]
            is_upos = name == UPOS
            note = [] if is_upos else [f"UPOS {100 * s['pos_acc']:.2f}"]
            if name == MORPHOLOGIZER:
                note.append(f"{r['max_steps']} steps")
            if name == CRFSUITE:
                note.append(f"L-BFGS capped at {r['params']['max_iterations']} iterations")
            rows.append(summary_row(result["title"], name, "UPOS" if is_upos else "UFeats",
                                    s["pos_acc"] if is_upos else s["morph_acc"], r["train_s"],
                                    d["decode_tokens_per_s"], r["train_peak_rss_mb"],
                                    d.get("peak_rss_mb"),
                                    d["model_bytes"], "; ".join(note)))
        goal_rows += goals(task, systems)
    upos_ratio = []
    for task, result in report["tasks"].items():
        systems = result["systems"]
        if PLAIN in systems and UPOS in systems:
            ratio = (systems[PLAIN]["decode"]["decode_tokens_per_s"]
                     / systems[UPOS]["decode"]["decode_tokens_per_s"])
            upos_ratio.append(f"{result['title']}: morph (factory defaults) decodes at "
                              f"{ratio:.2f}x the UPOS model's tokens/s")
    s = report["settings"]
    notes = [f"Test split; train s: initialize + loop for the nlp.update rows, the whole "
             f"spacy train process, fit for sklearn-crfsuite (its data loading and L-BFGS; "
             f"the Python featurizing is in the JSON); peak RSS of the "
             f"training process / of a fresh decoding process (crfsuite: one process); model MB: "
             f"the components' directories. Plain loop: {s['epochs']} epochs, batches of "
             f"{s['batch_size']}; morphologizer: {s['morphologizer_steps']} steps (patience 0, "
             f"model-best); sklearn-crfsuite: L-BFGS c1 0.1 c2 0.01, max_iterations capped at "
             f"{s['crfsuite_iterations']} (time cap), the tuned config's templates + cluster "
             f"templates.",
             "UFeats is spaCy's morph_acc (FEATS only; UPOS is scored apart as pos_acc), one "
             "scoring function for every system on Docs made from the gold test words.",
             *upos_ratio, *slow_decodes(report),
             f"Machine load: {report['load']['describe']}; speeds are noisy, accuracies are not."]
    tables = [{"caption": "Issue #51's goals (factory defaults = the nlp.update loop row)",
               "headers": ["goal", "measured", "result"], "rows": goal_rows}] if goal_rows else []
    peers = any(MORPHOLOGIZER in result["systems"] for result in report["tasks"].values())
    title = ("Morphology: the morph target against spaCy's morphologizer" if peers else
             "Morphology: emissions factored over label parts against a weight per label")
    return make_summary(title, report["command"], rows, notes, tables)


def goals(task: str, systems: Dict[str, Any]) -> List[List[str]]:
    """Pass / fail of each of issue #51's goals that this task's rows measure."""
    if PLAIN not in systems:
        return []
    plain = systems[PLAIN]
    upos = systems.get(UPOS)

    out = []
    feats, tok_s = plain["scores"]["morph_acc"], plain["decode"]["decode_tokens_per_s"]

    def ratio_row(prefix: str) -> List[str]:
        ratio = tok_s / upos["decode"]["decode_tokens_per_s"]
        return [f"{prefix}decode >= {GOALS['ratio']}x the UPOS model's", f"{ratio:.2f}x "
                f"({tok_s:,.0f} / {upos['decode']['decode_tokens_per_s']:,.0f})",
                verdict(ratio >= GOALS["ratio"])]

    if task == "gdt":
        out.append([f"GDT UFeats >= {100 * GOALS['gdt_ufeats']:.1f}", f"{100 * feats:.2f}",
                    verdict(feats >= GOALS["gdt_ufeats"])])
        if upos:
            out.append(ratio_row("GDT "))
        return out
    out.append([f"UFeats >= {100 * GOALS['ufeats']:.1f}", f"{100 * feats:.2f}"
                + (f" (filled config: {100 * systems[FILLED]['scores']['morph_acc']:.2f})"
                   if FILLED in systems else ""), verdict(feats >= GOALS["ufeats"])])
    if upos:
        mine, theirs = plain["scores"]["pos_acc"], upos["scores"]["pos_acc"]
        out.append(["UPOS no worse than the pos target's", f"{100 * mine:.2f} vs {100 * theirs:.2f}",
                    verdict(mine >= theirs)])
    out.append([f"decode >= {GOALS['tok_s']:,} tok/s", f"{tok_s:,.0f}",
                verdict(tok_s >= GOALS["tok_s"])])
    if upos:
        out.append(ratio_row(""))
    rss = plain["train_peak_rss_mb"]
    out.append(["peak training memory <= 1.2 GB", f"{rss / 1024:.2f} GB"
                + (f" (filled config: {systems[FILLED]['train_peak_rss_mb'] / 1024:.2f} GB)"
                   if FILLED in systems else ""), verdict(rss <= GOALS["rss_mb"])])
    size = plain["decode"]["model_bytes"] / 2**20
    out.append([f"model on disk <= {GOALS['model_mb']} MB", f"{size:.1f} MB",
                verdict(size <= GOALS["model_mb"])])
    return out


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_task_arguments(parser, list(TASKS), ["ewt", "gdt"])
    parser.add_argument("--morphologizer-steps", type=int, default=2000)
    parser.add_argument("--crfsuite-iterations", type=int, default=40,
                        help="sklearn-crfsuite's max_iterations (a time cap)")
    args = parser.parse_args(argv)
    command = command_line("morph.py", args, parser, ("tasks", "crfsuite_iterations",
                                                      "morphologizer_steps", "epochs",
                                                      "batch_size"))
    inputs = [args.data_dir / TASKS[t]["dir"] for t in args.tasks]
    settings = {"epochs": args.epochs, "batch_size": args.batch_size,
                "morphologizer_steps": 100 if args.quick else args.morphologizer_steps,
                "crfsuite_iterations": 5 if args.quick else args.crfsuite_iterations,
                "decode_runs": args.decode_runs, "goals": GOALS}
    run = task_runner("morph", command, settings, args.tasks,
                      lambda task, workdir: run_task(task, args, workdir), morph_summary)
    return run_benchmark(args, inputs, "morph_bench_", run,
                         lambda report: print(render_summary(report["summary"])))


if __name__ == "__main__":
    sys.exit(main())
