"""What a new user gets, beside sklearn-crfsuite, in one run.

``crf_tagger`` with the factory's default model, trained the way a spaCy user
trains without tuning: ``nlp.initialize()`` (spaCy's default optimizer: Adam
0.001, decoupled L2 0.01, grad_clip 1.0, no averaging) and a plain
``nlp.update`` loop of 5 epochs over shuffled minibatches of 32 sentences.
Beside it: the same with ``learn_rate_scale = 1`` (the optimizer's rate as it
is, the behaviour before the scale existed), and sklearn-crfsuite (L-BFGS, c1
0.1, c2 0.01, 100 iterations) over the same templates as the factory default.

Tasks: UD English EWT r2.9 UPOS (train -> test accuracy) and Universal NER
English EWT (train -> test exact-span F1). Run from a checkout::

    python benchmarks/defaults.py --data-dir ../shared/data --out benchmarks/results/defaults.json
"""

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SHARED_DATA, markdown_table, peak_rss_mb, run_isolated, write_json  # noqa: E402

from spacy_crf.converters import read_conllu_upos  # noqa: E402  (also imported from here by trainers.py)

Sentences = List[Tuple[List[str], List[str]]]


def read_iob2(path: Path) -> Sentences:
    """(words, IOB2 tags) per sentence of a UNER file (id, word, tag, ...)."""
    out, words, tags = [], [], []
    for line in path.read_text(encoding="utf8").splitlines():
        if line.startswith("#"):
            continue
        if not line.strip():
            if words:
                out.append((words, tags))
                words, tags = [], []
            continue
        cols = line.split("\t")
        words.append(cols[1])
        tags.append(cols[2])
    if words:
        out.append((words, tags))
    return out


def score(task: str, gold: Sequence[List[str]], pred: Sequence[List[str]]) -> float:
    if task == "upos":
        right = sum(p == g for P, G in zip(pred, gold) for p, g in zip(P, G))
        return 100.0 * right / sum(len(G) for G in gold)
    from seqeval.metrics import f1_score

    return 100.0 * f1_score(list(gold), list(pred))


def task_example(nlp: "Language", task: str, words: List[str], tags: List[str]) -> "Example":
    """A training Example of ``task``: UPOS tags, or IOB2 tags as doc.ents."""
    from spacy.tokens import Doc
    from spacy.training import Example, biluo_tags_to_spans, iob_to_biluo

    if task == "upos":
        return Example.from_dict(Doc(nlp.vocab, words=words), {"pos": tags})
    ref = Doc(nlp.vocab, words=words)
    ref.ents = biluo_tags_to_spans(ref, iob_to_biluo(tags))
    return Example(Doc(nlp.vocab, words=words), ref)


def read_predictions(task: str, docs: Sequence["Doc"]) -> List[List[str]]:
    """Predicted UPOS tags, or IOB2 tags of the predicted entities, per doc."""
    if task == "upos":
        return [[t.pos_ for t in doc] for doc in docs]
    return [[f"{t.ent_iob_}-{t.ent_type_}" if t.ent_iob_ != "O" else "O" for t in doc]
            for doc in docs]


def run_systems(task: str, gold: Sequence[List[str]],
                systems: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Run each system (a function returning a result with ``pred``), score it, print a line."""
    rows = {}
    for name, system in systems.items():
        result = system()
        result["score"] = score(task, gold, result.pop("pred"))
        rows[name] = result
        print(f"{task}: {name}: {result['score']:.2f} ({result['train_s']:.1f} s train, "
              f"{result['decode_tokens_per_s']:,.0f} tok/s, peak "
              f"{result.get('peak_rss_mb', 0):.0f} MB)", flush=True)
    return rows


def update_loop(nlp: "Language", examples: List["Example"], epochs: int,
                batch_size: int, seed: int = 0,
                clock: Optional[Dict[str, Any]] = None) -> Tuple[float, Any]:
    """What a new user writes: ``nlp.initialize()`` (spaCy's default optimizer),
    then ``epochs`` shuffled passes of ``nlp.update`` (the shuffle from
    ``seed``). Returns the seconds taken and the optimizer; ``clock``, where
    given, gets ``initialize_s``, the part of them ``nlp.initialize`` took,
    and ``epoch_s``, each epoch's (for a per-token cost of the updates alone,
    the first calls' kernel loading apart)."""
    from spacy.util import minibatch

    start = time.perf_counter()
    optimizer = nlp.initialize(lambda: examples)
    if clock is not None:
        clock["initialize_s"] = time.perf_counter() - start
    random.seed(seed)
    for _ in range(epochs):
        epoch_start = time.perf_counter()
        random.shuffle(examples)
        for batch in minibatch(examples, size=batch_size):
            nlp.update(batch, sgd=optimizer)
        if clock is not None:
            clock.setdefault("epoch_s", []).append(time.perf_counter() - epoch_start)
    return time.perf_counter() - start, optimizer


def phase_plain_loop(task: str, train: Sentences, test: Sentences, model: Dict[str, Any],
                     epochs: int, batch_size: int) -> Dict[str, Any]:
    """Factory defaults + nlp.initialize()'s optimizer + a plain nlp.update loop."""
    import spacy
    from spacy.tokens import Doc

    nlp = spacy.blank("en")
    config: Dict[str, Any] = {"target": "pos" if task == "upos" else "ents"}
    if model:
        config["model"] = model
    nlp.add_pipe("crf_tagger", config=config)
    examples = [task_example(nlp, task, w, t) for w, t in train]
    train_s, optimizer = update_loop(nlp, examples, epochs, batch_size)
    docs = [Doc(nlp.vocab, words=w) for w, _ in test]
    start = time.perf_counter()
    docs = list(nlp.pipe(docs, batch_size=1000))
    decode_s = time.perf_counter() - start
    pred = read_predictions(task, docs)
    n_tokens = sum(len(w) for w, _ in test)
    return {"train_s": train_s, "decode_tokens_per_s": n_tokens / decode_s, "pred": pred,
            "optimizer": {"learn_rate": optimizer.learn_rate, "L2": optimizer.L2,
                          "L2_is_weight_decay": optimizer.L2_is_weight_decay,
                          "grad_clip": optimizer.grad_clip,
                          "use_averages": optimizer.averages is not None}}


def phase_crfsuite(train: Sentences, test: Sentences, templates: List[str]) -> Dict[str, Any]:
    """sklearn-crfsuite over the same templates (``crfsuite_peer``): train s is
    featurizing plus the fit, as this row always counted it; one decode run."""
    from crfsuite_peer import CrfsuiteFeaturizer, fit_and_decode

    run = fit_and_decode([w for w, _ in train], [t for _, t in train], [w for w, _ in test],
                         CrfsuiteFeaturizer(templates).sentence,
                         {"algorithm": "lbfgs", "c1": 0.1, "c2": 0.01, "max_iterations": 100})
    return {"train_s": run["featurize_train_s"] + run["train_s"],
            "decode_tokens_per_s": run["decode_tokens_per_s"], "pred": run["pred"]}


def default_templates() -> List[str]:
    from spacy_crf.pipeline.factory import DEFAULT_MODEL

    return list(DEFAULT_MODEL["templates"])


def run(data_dir: Path, epochs: int, batch_size: int, tasks: Sequence[str]) -> Dict[str, Any]:
    files = {
        "upos": (read_conllu_upos, data_dir / "ud_english_ewt/r2.9/en_ewt-ud-train.conllu",
                 data_dir / "ud_english_ewt/r2.9/en_ewt-ud-test.conllu"),
        "ner": (read_iob2, data_dir / "uner_english_ewt/en_ewt-ud-train.v0-normalized.iob2",
                data_dir / "uner_english_ewt/en_ewt-ud-test.iob2"),
    }
    templates = default_templates()
    report: Dict[str, Any] = {"epochs": epochs, "batch_size": batch_size,
                              "templates": templates, "tasks": {}}
    for task in tasks:
        reader, train_path, test_path = files[task]
        train, test = reader(train_path), reader(test_path)
        gold = [t for _, t in test]
        systems = {
            "crf_tagger, factory defaults": lambda: run_isolated(
                phase_plain_loop, task, train, test, {}, epochs, batch_size),
            "crf_tagger, factory defaults, learn_rate_scale 1": lambda: run_isolated(
                phase_plain_loop, task, train, test, {"learn_rate_scale": 1.0}, epochs, batch_size),
            "sklearn-crfsuite, same templates": lambda: run_isolated(
                phase_crfsuite, train, test, templates),
        }
        report["tasks"][task] = run_systems(task, gold, systems)
    return report


def print_report(report: Dict[str, Any]) -> None:
    for task, rows in report["tasks"].items():
        metric = "accuracy" if task == "upos" else "F1"
        print(f"\n{task} (test {metric}; {report['epochs']} epochs, batches of "
              f"{report['batch_size']})")
        print(markdown_table(["system", metric, "train s", "decode tok/s", "peak MB"], [
            [name, f"{r['score']:.2f}", f"{r['train_s']:.1f}", f"{r['decode_tokens_per_s']:,.0f}",
             f"{r.get('peak_rss_mb', 0):.0f}"] for name, r in rows.items()]))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--tasks", nargs="+", default=["upos", "ner"], choices=["upos", "ner"])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    report = run(args.data_dir, args.epochs, args.batch_size, args.tasks)
    print_report(report)
    write_json(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
