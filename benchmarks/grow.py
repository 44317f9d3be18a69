"""Growing a trained model with a new label, against training from scratch (issue #31).

Each task trains the way a new user trains (``spacy.blank("en")``, the
factory's default model, ``nlp.initialize()``, a plain ``nlp.update`` loop
over shuffled batches) and compares, on the test split:

* **scratch**: every label from the start, ``--epochs`` epochs;
* **grown**: first ``--epochs - --more-epochs`` epochs on a corpus that lacks
  the new label, then ``add_label``, ``nlp.resume_training()`` and
  ``--more-epochs`` epochs on the full corpus (old examples mixed in).
  Right after ``add_label`` the test predictions are checked to be identical
  to those before it.

Tasks: Universal NER English EWT, whose first corpus has no ``LOC`` entities
(its LOC mentions are ``O``, as in a corpus annotated for PER and ORG only),
and UD English EWT UPOS, whose first corpus leaves the ``--upos-tag`` tokens
unannotated. Scores: per-type span F1 (NER), per-tag F1 and accuracy (UPOS),
train seconds per phase. Run from a checkout::

    python benchmarks/grow.py --data-dir ../shared/data --out benchmarks/results/grow.json
"""

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SHARED_DATA, log, run_isolated, write_json  # noqa: E402
from defaults import read_iob2, read_predictions, task_example, update_loop  # noqa: E402

from spacy_crf.converters import read_conllu_upos  # noqa: E402

Sentences = List[Any]


def without(task: str, train: Sentences, label: str) -> Sentences:
    """The corpus without ``label``: NER mentions of the type become ``O``;
    UPOS tokens of the tag become unannotated (``""``)."""
    if task == "ner":
        return [(w, ["O" if t.endswith(f"-{label}") else t for t in tags]) for w, tags in train]
    return [(w, ["" if t == label else t for t in tags]) for w, tags in train]


def per_label_scores(task: str, gold: Sequence[List[str]], pred: Sequence[List[str]],
                     labels: Sequence[str]) -> Dict[str, float]:
    """NER: span F1 per type and overall; UPOS: F1 of each of ``labels`` and accuracy."""
    if task == "ner":
        from seqeval.metrics import classification_report, f1_score

        report = classification_report(list(gold), list(pred), output_dict=True, zero_division=0)
        out = {f"F1 {label}": 100.0 * report.get(label, {}).get("f1-score", 0.0)
               for label in labels}
        out["F1 all"] = 100.0 * f1_score(list(gold), list(pred))
        return out
    pairs = [(g, p) for G, P in zip(gold, pred) for g, p in zip(G, P)]
    out = {"accuracy": 100.0 * sum(g == p for g, p in pairs) / len(pairs)}
    for label in labels:
        tp = sum(g == label and p == label for g, p in pairs)
        n_gold = sum(g == label for g, _ in pairs)
        n_pred = sum(p == label for _, p in pairs)
        out[f"F1 {label}"] = 100.0 * 2 * tp / max(1, n_gold + n_pred)
    out["accuracy, other tags"] = 100.0 * (
        sum(g == p for g, p in pairs if g not in labels) / max(1, sum(g not in labels for g, _ in pairs)))
    return out


def predict(nlp, test: Sentences) -> List[Any]:
    from spacy.tokens import Doc

    return list(nlp.pipe([Doc(nlp.vocab, words=w) for w, _ in test], batch_size=1000))


def phase(task: str, train: Sentences, test: Sentences, new_label: str, epochs: int,
          more_epochs: int, batch_size: int, grow: bool) -> Dict[str, Any]:
    """One row: scratch (``grow`` False) or grown; returns predictions and timings."""
    import spacy
    from spacy.util import minibatch
    import random

    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos" if task == "upos" else "ents"})
    full = [task_example(nlp, task, w, t) for w, t in train]
    if not grow:
        train_s, _ = update_loop(nlp, full, epochs, batch_size)
        return {"pred": read_predictions(task, predict(nlp, test)), "train_s": train_s}
    first = [task_example(nlp, task, w, t) for w, t in without(task, train, new_label)]
    first_s, _ = update_loop(nlp, first, epochs - more_epochs, batch_size)
    pipe = nlp.get_pipe("crf_tagger")
    assert not any(new_label in tag for tag in pipe.tags)
    before = read_predictions(task, predict(nlp, test))
    start = time.perf_counter()
    pipe.add_label(new_label)
    add_s = time.perf_counter() - start
    identical = read_predictions(task, predict(nlp, test)) == before
    start = time.perf_counter()
    optimizer = nlp.resume_training()
    random.seed(1)
    for _ in range(more_epochs):
        random.shuffle(full)
        for batch in minibatch(full, size=batch_size):
            nlp.update(batch, sgd=optimizer)
    more_s = time.perf_counter() - start
    return {"pred": read_predictions(task, predict(nlp, test)), "pred_before": before,
            "train_s": first_s + add_s + more_s, "first_s": first_s, "add_label_s": add_s,
            "more_s": more_s, "identical_after_add_label": identical,
            "labels": list(pipe.tags)}


def run(data_dir: Path, tasks: Sequence[str], epochs: int, more_epochs: int, batch_size: int,
        ner_type: str, upos_tag: str, out: Optional[Path], limit: int = 0) -> Dict[str, Any]:
    files = {
        "upos": (read_conllu_upos, data_dir / "ud_english_ewt/r2.9/en_ewt-ud-train.conllu",
                 data_dir / "ud_english_ewt/r2.9/en_ewt-ud-test.conllu", upos_tag),
        "ner": (read_iob2, data_dir / "uner_english_ewt/en_ewt-ud-train.v0-normalized.iob2",
                data_dir / "uner_english_ewt/en_ewt-ud-test.iob2", ner_type),
    }
    report: Dict[str, Any] = {"epochs": epochs, "more_epochs": more_epochs,
                              "batch_size": batch_size, "tasks": {}}
    for task in tasks:
        reader, train_path, test_path, new_label = files[task]
        train, test = reader(train_path), reader(test_path)
        if limit:  # a quick check of the script
            train, test = train[:limit], test[:limit]
        gold = [t for _, t in test]
        labels = ["PER", "ORG", "LOC"] if task == "ner" else [new_label]
        rows = {}
        for name, grow in (("scratch, all labels", False), (f"grown: add_label({new_label!r})", True)):
            log(f"{task}: {name}")
            result = run_isolated(phase, task, train, test, new_label, epochs, more_epochs,
                                  batch_size, grow)
            result["scores"] = per_label_scores(task, gold, result.pop("pred"), labels)
            if "pred_before" in result:
                result["scores_before_growing"] = per_label_scores(
                    task, gold, result.pop("pred_before"), labels)
            rows[name] = result
            log(f"{task}: {name}: {result['scores']} ({result['train_s']:.1f} s)")
        report["tasks"][task] = {"new_label": new_label, "rows": rows}
        write_json(out, report)
    return report


def print_report(report: Dict[str, Any]) -> None:
    for task, data in report["tasks"].items():
        print(f"\n{task}: new label {data['new_label']}, {report['epochs']} epochs in all "
              f"({report['more_epochs']} after add_label), batch {report['batch_size']}")
        for name, row in data["rows"].items():
            scores = ", ".join(f"{k} {v:.2f}" for k, v in row["scores"].items())
            extra = ""
            if "identical_after_add_label" in row:
                extra = (f"; identical after add_label: {row['identical_after_add_label']}; "
                         f"first {row['first_s']:.1f} s, add_label {row['add_label_s']:.2f} s, "
                         f"more {row['more_s']:.1f} s")
            print(f"  {name}: {scores}; {row['train_s']:.1f} s train, "
                  f"peak {row.get('peak_rss_mb', 0):.0f} MB{extra}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA)
    parser.add_argument("--tasks", nargs="+", default=["ner", "upos"], choices=["ner", "upos"])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--more-epochs", type=int, default=2,
                        help="of --epochs, those after add_label")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--ner-type", default="LOC")
    parser.add_argument("--upos-tag", default="PROPN")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--limit", type=int, default=0,
                        help="first N training and test sentences only (a quick check)")
    args = parser.parse_args(argv)
    if not 0 < args.more_epochs < args.epochs:
        parser.error("--more-epochs must be above 0 and below --epochs")
    report = run(args.data_dir, args.tasks, args.epochs, args.more_epochs, args.batch_size,
                 args.ner_type, args.upos_tag, args.out, args.limit)
    print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
