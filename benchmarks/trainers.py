"""Every way to train a crf_tagger, side by side with sklearn-crfsuite, in one run.

For each task (CoNLL-2000 chunking, UD English EWT r2.9 UPOS, Universal NER
English EWT), trained on train and scored on test, one fresh process per
system:

1. **factory defaults**: ``nlp.add_pipe("crf_tagger", config={"target": ...})``,
   ``nlp.initialize()`` (spaCy's default optimizer: Adam 0.001, L2 0.01 as
   weight decay, grad_clip 1.0, no averages), a plain ``nlp.update`` loop of 5
   epochs over shuffled batches of 32 sentences. On CoNLL-2000 the factory's
   templates read words only, not the corpus's POS column: what a new user
   gets.
2. **factory defaults, filled config**: what a spaCy user runs without
   tuning: a config naming only ``{"factory": "crf_tagger", "target": ...}``
   (and the corpora), completed by ``spacy init fill-config`` and trained as
   filled by ``spacy train``.
3. **tuned config**: ``spacy train`` of the shipped config.
4. **fit, L-BFGS**: ``python -m spacy_crf.fit`` of the same config, c2 = 1,
   100 iterations (CRFsuite's defaults).
5. **fit, OWL-QN**: c1 = 0.1, c2 = 0.01 (sklearn-crfsuite's tutorial values), 100 iterations.
6. **perceptron** and 7. **hinge**: the tuned config with ``loss`` set and
   the optimizer of ``configs/ewt_upos_perceptron.cfg`` /
   ``configs/ewt_upos_hinge.cfg``, through ``spacy train``.
8. **sklearn-crfsuite**, L-BFGS, 100 iterations: CoNLL-2000 with CRFsuite's
   chunking template and c2 = 1 (as ``benchmarks/conll2000.py``); the others
   over the tuned config's templates and cluster templates (spaCy's Brown
   table, as the crf_tagger reads it) with c1 = 0.1, c2 = 0.01.

Train seconds are the wall time of the whole process for ``spacy train`` and
``fit`` (interpreter start, reading the corpus, training, saving), of
featurizing plus fitting for sklearn-crfsuite, and of initialize plus the loop
for the plain loop. Scores: chunk F1 (conlleval), UPOS accuracy, exact-span
entity F1; the spaCy-trained models are scored by ``nlp.evaluate`` on the test
corpus (``spacy_crf.evaluate``, copying POS for CoNLL-2000 as training did),
the others by the same measures on their predictions.

    python benchmarks/trainers.py --data-dir ../shared/data --out benchmarks/results/trainers.json
    python benchmarks/trainers.py --quick --out /tmp/trainers_quick.json   # small slices
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (REPO_ROOT, SHARED_DATA, chunk_prf, disk_bytes, environment,  # noqa: E402
                    filled_factory_config, log, make_summary, read_columns, render_summary, run_isolated, summary_row,
                    write_json)
from defaults import read_conllu_upos, read_iob2, update_loop  # noqa: E402

Sentences = List[Tuple[List[str], List[str]]]
CONFIGS = REPO_ROOT / "configs"
TASKS = {
    "chunk": {"title": "CoNLL-2000 chunking", "metric": "F1", "config": "conll2000_chunking.cfg",
              "copy": ["TAG"], "target": "_.chunk"},
    "upos": {"title": "UD English EWT UPOS", "metric": "acc", "config": "ewt_upos.cfg",
             "copy": [], "target": "pos"},
    "ner": {"title": "Universal NER English EWT", "metric": "F1", "config": "uner_ner.cfg",
            "copy": [], "target": "ents"},
}
LOSS_CONFIGS = {"perceptron": "ewt_upos_perceptron.cfg", "hinge": "ewt_upos_hinge.cfg"}


# -- data ------------------------------------------------------------------------

UNER_TRAIN = "en_ewt-ud-train.v0-normalized.iob2"


def read_task(task: str, data_dir: Path, limit: int,
              uner_train: str = UNER_TRAIN) -> Dict[str, Sentences]:
    """(words, labels) of train, dev and test; for CoNLL-2000 the labels are
    ``POS CHUNK`` pairs joined by a space (POS is an input there), dev is test."""
    def cut(sents: Sentences) -> Sentences:
        return sents[:limit] if limit else sents

    if task == "chunk":
        split = {name: [([c[0] for c in s], [f"{c[1]} {c[2]}" for c in s])
                        for s in read_columns(data_dir / "conll2000" / f"{name}.txt")]
                 for name in ("train", "test")}
        return {"train": cut(split["train"]), "dev": cut(split["test"]), "test": cut(split["test"])}
    if task == "upos":
        base = data_dir / "ud_english_ewt" / "r2.9"
        return {name: cut(read_conllu_upos(base / f"en_ewt-ud-{name}.conllu"))
                for name in ("train", "dev", "test")}
    base = data_dir / "uner_english_ewt"
    files = {"train": uner_train, "dev": "en_ewt-ud-dev.iob2",
             "test": "en_ewt-ud-test.iob2"}
    return {name: cut(read_iob2(base / f)) for name, f in files.items()}


def to_docbin(task: str, sents: Sentences, path: Path) -> Path:
    """The corpus as spacy train reads it (POS as tag_ and chunks for CoNLL-2000)."""
    import spacy
    from spacy.tokens import Doc, DocBin
    from spacy.training import biluo_tags_to_spans, iob_to_biluo

    from spacy_crf import set_doc_labels

    vocab = spacy.blank("en").vocab
    docs = []
    for words, labels in sents:
        if task == "chunk":
            doc = Doc(vocab, words=words, tags=[lab.split(" ")[0] for lab in labels])
            set_doc_labels(doc, "chunk", [lab.split(" ")[1] for lab in labels])
        elif task == "upos":
            doc = Doc(vocab, words=words, pos=labels)
        else:
            doc = Doc(vocab, words=words)
            doc.ents = biluo_tags_to_spans(doc, iob_to_biluo(labels))
        docs.append(doc)
    DocBin(docs=docs, store_user_data=True).to_disk(path)
    return path


def score(task: str, gold: Sequence[List[str]], pred: Sequence[List[str]]) -> float:
    """Chunk F1 (conlleval), token accuracy, or exact-span F1, as a fraction."""
    if task == "upos":
        right = sum(p == g for P, G in zip(pred, gold) for p, g in zip(P, G))
        return right / sum(len(G) for G in gold)
    return chunk_prf(gold, pred)["f"]


# -- systems (each runs in a fresh process) --------------------------------------

def phase_plain_loop(task: str, train: Sentences, test: Sentences, epochs: int,
                     batch_size: int, settings: Optional[Dict[str, Any]] = None
                     ) -> Dict[str, Any]:
    """Factory defaults, nlp.initialize()'s optimizer, a plain nlp.update loop;
    ``settings`` are component settings a user would pass too (e.g. ``structure``).
    The trained pipeline is saved; its path is ``model``."""
    import spacy
    from spacy.tokens import Doc
    from spacy.training import Example, biluo_tags_to_spans, iob_to_biluo

    from spacy_crf import set_doc_labels

    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": TASKS[task]["target"], **(settings or {})})

    def example(words: List[str], labels: List[str]) -> Example:
        ref = Doc(nlp.vocab, words=words)
        if task == "chunk":
            set_doc_labels(ref, "chunk", [lab.split(" ")[1] for lab in labels])
        elif task == "upos":
            ref = Doc(nlp.vocab, words=words, pos=labels)
        else:
            ref.ents = biluo_tags_to_spans(ref, iob_to_biluo(labels))
        return Example(Doc(nlp.vocab, words=words), ref)

    train_s, _ = update_loop(nlp, [example(w, t) for w, t in train], epochs, batch_size)
    docs = list(nlp.pipe((Doc(nlp.vocab, words=w) for w, _ in test), batch_size=1000))
    if task == "chunk":
        pred = [list(doc.user_data.get(("spacy_crf", "chunk"))) for doc in docs]
        gold = [[lab.split(" ")[1] for lab in labels] for _, labels in test]
    elif task == "upos":
        pred, gold = [[t.pos_ for t in doc] for doc in docs], [t for _, t in test]
    else:
        pred = [[f"{t.ent_iob_}-{t.ent_type_}" if t.ent_iob_ != "O" else "O" for t in doc]
                for doc in docs]
        gold = [t for _, t in test]
    model = Path(os.environ.get("TMPDIR", "/tmp")) / f"plain_loop_{task}_{os.getpid()}"
    nlp.to_disk(model)
    return {"train_s": train_s, "score": score(task, gold, pred), "model_bytes": disk_bytes(model),
            "model": str(model)}


def phase_crfsuite(task: str, train: Sentences, test: Sentences, workdir: str) -> Dict[str, Any]:
    """sklearn-crfsuite by ``crfsuite_peer``, L-BFGS for 100 iterations: CoNLL-2000
    with CRFsuite's own chunking attributes and settings (c2 = 1), the other tasks
    with the tuned config's templates (c1 = 0.1, c2 = 0.01). Train s is featurizing
    plus the fit."""
    from crfsuite_peer import CrfsuiteFeaturizer, chunking_features, fit_and_decode

    if task == "chunk":
        # a label is "POS CHUNK": the POS is an input of CRFsuite's attributes
        def inputs(sents: Sentences) -> List[Any]:
            return [[(w, *lab.split(" ")) for w, lab in zip(words, labels)]
                    for words, labels in sents]

        featurize = chunking_features
        params = {"c1": 0.0, "c2": 1.0}
        gold_of = [[lab.split(" ")[1] for lab in labels] for _, labels in test]
        train_y = [[lab.split(" ")[1] for lab in labels] for _, labels in train]
    else:
        from spacy.util import load_config

        config = load_config(CONFIGS / TASKS[task]["config"], interpolate=False)
        model = config["components"]["crf_tagger"]["model"]
        # the tuned config's templates and its cluster templates (the same Brown table)
        featurize = CrfsuiteFeaturizer(list(model["templates"])
                                       + list(model.get("cluster_templates") or [])).sentence

        def inputs(sents: Sentences) -> List[Any]:
            return [words for words, _ in sents]

        params = {"c1": 0.1, "c2": 0.01}
        gold_of = [labels for _, labels in test]
        train_y = [labels for _, labels in train]
    run = fit_and_decode(inputs(train), train_y, inputs(test), featurize,
                         {"algorithm": "lbfgs", "max_iterations": 100, **params},
                         str(Path(workdir) / f"crfsuite_{task}.model"))
    return {"train_s": run["featurize_train_s"] + run["train_s"],
            "score": score(task, gold_of, run["pred"]), "params": params,
            "model_bytes": run["model_bytes"]}


def phase_evaluate(task: str, model: str, test_path: str) -> Dict[str, Any]:
    """The test score of a saved pipeline, read as training read its corpus."""
    from spacy_crf.evaluation import evaluate

    scores = evaluate(model, Path(test_path), TASKS[task]["copy"])
    return {"score": scores["crf_score"]}


def timed_process(cmd: List[str], log_path: Path) -> Dict[str, Any]:
    """Run a command; its wall time and its own peak RSS (``os.wait4``)."""
    with open(log_path, "w", encoding="utf8") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=str(REPO_ROOT))
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"failed: {' '.join(cmd)}\n{log_path.read_text()[-3000:]}")
    return {"train_s": wall, "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "command": " ".join(["python", *cmd[1:]])}


def loss_config(task: str, loss: str, workdir: Path) -> Path:
    """The task's config with ``loss`` and the optimizer of the shipped loss config."""
    from spacy.util import load_config

    config = load_config(CONFIGS / TASKS[task]["config"], interpolate=False)
    shipped = load_config(CONFIGS / LOSS_CONFIGS[loss], interpolate=False)
    config["components"]["crf_tagger"]["loss"] = loss
    config["training"]["optimizer"] = shipped["training"]["optimizer"]
    path = workdir / f"{task}_{loss}.cfg"
    config.to_disk(path)
    return path


def filled_config(task: str, workdir: Path) -> Path:
    """``spacy init fill-config`` of the factory config for the task's target."""
    return filled_factory_config(workdir, f"{task}_factory", TASKS[task]["target"])


def run_task(task: str, data_dir: Path, workdir: Path, limit: int, epochs: int,
             max_iterations: int, uner_train: str = UNER_TRAIN) -> Dict[str, Any]:
    sents = read_task(task, data_dir, limit, uner_train)
    corpus = {name: to_docbin(task, s, workdir / f"{task}_{name}.spacy") for name, s in sents.items()}
    paths = ["--paths.train", str(corpus["train"]), "--paths.dev", str(corpus["dev"])]
    # slices too small for the configs' evaluation period still get a model-best
    every = ["--training.eval_frequency", "20"] if limit else []
    config = CONFIGS / TASKS[task]["config"]
    python = sys.executable
    spacy_train = [python, "-m", "spacy", "train"]
    fit_cmd = [python, "-m", "spacy_crf.fit"]
    its = ["--max-iterations", str(max_iterations)]
    commands: Dict[str, Tuple[List[str], Path]] = {
        "factory defaults, spacy train (filled config)": (
            spacy_train + [str(filled_config(task, workdir)), "--output",
                           str(workdir / f"{task}_factory")] + paths + every
            # the filled config's 20,000 steps (patience 1,600) are for whole corpora
            + (["--training.max_steps", "300"] if limit else []),
            workdir / f"{task}_factory"),
        "tuned config, spacy train": (spacy_train + [str(config), "--output",
                                                     str(workdir / f"{task}_train")] + paths + every,
                                      workdir / f"{task}_train"),
        "fit, L-BFGS (c2 = 1)": (fit_cmd + [str(config), "--output", str(workdir / f"{task}_lbfgs"),
                                            "--c2", "1"] + its + paths, workdir / f"{task}_lbfgs"),
        "fit, OWL-QN (c1 = 0.1, c2 = 0.01)": (fit_cmd + [str(config), "--output",
                                                         str(workdir / f"{task}_owlqn"), "--c1",
                                                         "0.1", "--c2", "0.01"] + its + paths,
                                              workdir / f"{task}_owlqn"),
    }
    for loss in LOSS_CONFIGS:
        out = workdir / f"{task}_{loss}"
        commands[f"{loss}, spacy train"] = (spacy_train + [str(loss_config(task, loss, workdir)),
                                                           "--output", str(out)] + paths + every, out)
    rows: Dict[str, Dict[str, Any]] = {}
    log(f"{task}: factory defaults, plain loop")
    rows["factory defaults, nlp.update loop"] = run_isolated(
        phase_plain_loop, task, sents["train"], sents["test"], epochs, 32)
    for name, (cmd, out) in commands.items():
        log(f"{task}: {name}")
        result = timed_process(cmd, workdir / f"{out.name}.log")
        model = out / "model-best"
        scored = run_isolated(phase_evaluate, task, str(model), str(corpus["test"]))
        result["score"] = scored["score"]
        result["evaluate_peak_rss_mb"] = scored["peak_rss_mb"]
        result["model_bytes"] = disk_bytes(model)
        if "fit" in name:
            result.update(fit_progress((workdir / f"{out.name}.log").read_text()))
        rows[name] = result
    log(f"{task}: sklearn-crfsuite")
    rows["sklearn-crfsuite"] = run_isolated(phase_crfsuite, task, sents["train"], sents["test"],
                                            str(workdir))
    for name, row in rows.items():
        log(f"  {name}: {100 * row['score']:.2f} in {row['train_s']:.1f} s, "
            f"peak {row.get('peak_rss_mb', 0):.0f} MB, model {row['model_bytes'] / 1e6:.1f} MB")
    return {"n_train_sentences": len(sents["train"]), "n_test_sentences": len(sents["test"]),
            "systems": rows}


def fit_progress(log_text: str) -> Dict[str, Any]:
    """From ``spacy_crf.fit``'s output: the non-zero weights at the end, every dev
    evaluation as ``[iteration, score, seconds since fit began]``, and the
    seconds fit reported at its end (the process adds imports and saving)."""
    lines = [line.split() for line in log_text.splitlines()]
    steps = [cols for cols in lines if len(cols) >= 6 and cols[0].isdigit()]
    evaluations = [[int(c[0]), float(c[4]), float(c[6])] for c in steps if len(c) == 7]
    ended = [line for line in log_text.splitlines() if "evaluations of the objective" in line]
    return {"nonzero_weights": int(steps[-1][3]) if steps else None,
            "dev_evaluations": evaluations,
            "fit_reported_s": float(ended[-1].rsplit(",", 1)[1].split()[0]) if ended else None}


def time_to_score(row: Dict[str, Any], target: float) -> Optional[Tuple[int, float, float]]:
    """(iteration, score, process seconds) of fit's first dev evaluation at or above
    ``target``. Process seconds are the seconds fit reported at that evaluation
    plus everything the process spent outside them (imports, saving, from its
    total wall time): an upper bound on a run stopped there."""
    outside = row["train_s"] - row["fit_reported_s"]
    for iteration, score, seconds in row.get("dev_evaluations", []):
        if score >= target:
            return iteration, score, seconds + outside
    return None


def trainers_summary(report: Dict[str, Any]) -> Dict[str, Any]:
    rows = []
    for task, result in report["tasks"].items():
        for name, r in result["systems"].items():
            note = f"{r['nonzero_weights']:,} non-zero weights" if r.get("nonzero_weights") else ""
            rows.append(summary_row(TASKS[task]["title"], name, TASKS[task]["metric"], r["score"],
                                    r["train_s"], None, r.get("peak_rss_mb"), None,
                                    r["model_bytes"], note))
    notes = ["train s: the whole process for spacy train and fit, featurize + fit for "
             "sklearn-crfsuite, initialize + loop for the plain loop; peak RSS of the "
             "training process; model MB on disk (model-best); decode speed is in the "
             "per-task tables below"]
    chunk = report["tasks"].get("chunk")
    if chunk:
        ours, theirs = chunk["systems"]["fit, L-BFGS (c2 = 1)"], chunk["systems"]["sklearn-crfsuite"]
        notes.append(f"CoNLL-2000: fit (L-BFGS, 100 iterations) takes "
                     f"{ours['train_s'] / theirs['train_s']:.2f}x sklearn-crfsuite's wall time, "
                     f"F1 {100 * ours['score']:.2f} vs {100 * theirs['score']:.2f}")
        reached = time_to_score(ours, theirs["score"]) if ours.get("fit_reported_s") else None
        if reached:  # dev is the test split for CoNLL-2000: fit's dev scores are test scores
            iteration, score, seconds = reached
            notes.append(f"CoNLL-2000: fit (L-BFGS) first reaches sklearn-crfsuite's F1 at "
                         f"iteration {iteration} (dev = test, F1 {100 * score:.2f}), "
                         f"{seconds:.1f} s into the process: "
                         f"{seconds / theirs['train_s']:.2f}x sklearn-crfsuite's wall time")
    return make_summary("Every trainer side by side", report["command"], rows, notes)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/spacy_crf_trainers"))
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--uner-train", default=UNER_TRAIN,
                        help="the UNER train file in DATA_DIR/uner_english_ewt")
    parser.add_argument("--quick", action="store_true", help="300 sentences per split, 10 iterations")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    limit, max_iterations, epochs = (300, 10, 2) if args.quick else (0, 100, 5)
    command = "python benchmarks/trainers.py" + (" --quick" if args.quick else "")
    report: Dict[str, Any] = {"benchmark": "trainers", "command": command, "quick": args.quick,
                              "environment": environment(), "tasks": {}}
    start = time.perf_counter()
    for task in args.tasks:
        report["tasks"][task] = run_task(task, args.data_dir, args.workdir, limit, epochs,
                                         max_iterations, args.uner_train)
    report["benchmark_wall_s"] = time.perf_counter() - start
    report["summary"] = trainers_summary(report)
    print(render_summary(report["summary"]))
    write_json(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
