"""What word clusters, vector clusters and gazetteers add, in one run (issue #34).

Every crf_tagger row trains the way a new user trains: ``spacy.blank("en")``,
``nlp.add_pipe("crf_tagger", config={"target": ...})`` with the factory's
default model (unless the row says otherwise), ``nlp.initialize()`` (spaCy's
default optimizer) and a plain ``nlp.update`` loop of 5 epochs over shuffled
batches of 32 sentences. Rows, for UD English EWT r2.9 UPOS (test accuracy)
and Universal NER English EWT (test exact-span F1):

* factory defaults without a cluster table (``cluster_templates = []``, what a
  user without spacy-lookups-data gets);
* factory defaults with spacy-lookups-data installed (its English Brown clusters);
  with ``--seeds N``, the same over shuffle seeds 1 to N - 1 (a whole-corpus
  UNER row moves by about +-0.4 with the shuffle); the same without the L1
  penalty (``l1_penalty = 0``, over the same seeds); without averaged
  weights (``average_weights = false``), and in batches of 128 (the loop of
  issue #34's trial);
* the same plus ``VECTOR_CLUSTER64/256/1024[-1..1]`` templates over vectors made
  here: PPMI-SVD vectors (100 dimensions) of the training text of EWT and
  CoNLL-2000 (words seen twice or more);
* NER: the same plus a gazetteer of the training split's own entities
  (``GAZETTEER[-1..1]``), given as a file (every training entity matches it
  while training: a leak) and made by ``gazetteer_from_training = true``
  (each training document's own entities held out of it while training);
* sklearn-crfsuite over the same templates, without and with the same cluster
  features (L-BFGS, c1 0.1, c2 0.01, 100 iterations);
* the small-corpus rows: the first 2,000 training sentences, batches of 128
  (80 updates), factory defaults (shuffle seeds 0-2: a loop this short moves
  with the shuffle) against sklearn-crfsuite on the same sentences.

Every row gives decode tokens/s (``nlp.pipe`` over the test Docs, best of 3)
and model MB (the component's directory). The calibration of
``token._.crf_confidence`` (EWT UPOS) and of ``span._.crf_confidence`` (UNER)
is reported for the clustered defaults as a 10-bin reliability table with its
expected calibration error. CoNLL-2000 runs its tuned config through ``spacy
train`` without and with cluster templates. Run from a checkout::

    python benchmarks/word_features.py --data-dir ../shared/data --out /tmp/word_features.json
"""

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (SHARED_DATA, disk_bytes, markdown_table, read_columns,  # noqa: E402
                    run_isolated, write_json)
from defaults import (read_iob2, read_predictions, run_systems, task_example,  # noqa: E402
                      update_loop)

from spacy_crf.converters import read_conllu_upos  # noqa: E402

Sentences = List[Tuple[List[str], List[str]]]
CLUSTER_TEMPLATES = None  # filled from the factory default in main()
VECTOR_TEMPLATES = ["VECTOR_CLUSTER64[-1..1]", "VECTOR_CLUSTER256[-1..1]",
                    "VECTOR_CLUSTER1024[-1..1]"]
BINS = 10
#: shuffle seeds of the small-corpus crf_tagger row (sklearn-crfsuite is deterministic)
SMALL_SEEDS = 3


# -- resources made here ---------------------------------------------------------

def ppmi_vectors(sentences: Sequence[List[str]], dim: int = 100, window: int = 2,
                 min_count: int = 2) -> Tuple[List[str], Any]:
    """Words and their PPMI-SVD vectors (Levy & Goldberg 2014) from tokenized text."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import svds

    counts = Counter(w for s in sentences for w in s)
    vocab = [w for w, c in counts.items() if c >= min_count]
    index = {w: i for i, w in enumerate(vocab)}
    rows, cols = [], []
    for s in sentences:
        ids = [index.get(w, -1) for w in s]
        for i, a in enumerate(ids):
            if a < 0:
                continue
            for j in range(max(0, i - window), min(len(ids), i + window + 1)):
                if j != i and ids[j] >= 0:
                    rows.append(a)
                    cols.append(ids[j])
    n = len(vocab)
    m = coo_matrix((np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=(n, n)).tocsr()
    m.sum_duplicates()
    total = m.sum()
    row_sum = np.asarray(m.sum(axis=1)).ravel()
    col_sum = np.asarray(m.sum(axis=0)).ravel() ** 0.75  # context smoothing
    col_sum = col_sum / col_sum.sum() * total
    coo = m.tocoo()
    pmi = np.log(coo.data * total / (row_sum[coo.row] * col_sum[coo.col]))
    keep = pmi > 0
    ppmi = coo_matrix((pmi[keep], (coo.row[keep], coo.col[keep])), shape=(n, n)).tocsr()
    u, s, _ = svds(ppmi, k=dim, random_state=0)
    return vocab, (u * np.sqrt(s)).astype("float32")


def training_gazetteer(train: Sentences) -> List[Tuple[str, str]]:
    """(type, text) of every entity of the training split (IOB2 tags)."""
    from spacy.training import iob_to_biluo

    out = set()
    for words, tags in train:
        start = None
        for i, tag in enumerate(iob_to_biluo(tags)):
            if tag[:2] in ("B-", "U-"):
                start = i
            if tag[:2] in ("L-", "U-") and start is not None:
                out.add((tag[2:], " ".join(words[start:i + 1])))
                start = None
    return sorted(out)


# -- systems ---------------------------------------------------------------------

def phase_crf(task: str, train: Sentences, test: Sentences, model: Dict[str, Any],
              epochs: int, batch_size: int, vectors: Optional[Tuple[List[str], Any]] = None,
              gazetteer: Optional[List[Tuple[str, str]]] = None,
              calibration: bool = False, seed: int = 0,
              initialize: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """One crf_tagger row: blank pipeline, factory defaults (+ ``model``), plain
    loop (shuffled from ``seed``); ``initialize``: settings of
    ``[initialize.components.crf_tagger]``."""
    import numpy as np
    import spacy
    from spacy.tokens import Doc
    from spacy.vectors import Vectors

    from spacy_crf.pipeline.factory import DEFAULT_MODEL

    nlp = spacy.blank("en")
    if vectors is not None:
        words, data = vectors
        nlp.vocab.vectors = Vectors(strings=nlp.vocab.strings, data=np.asarray(data),
                                    keys=words)
    config: Dict[str, Any] = {"target": "pos" if task == "upos" else "ents"}
    if model:
        config["model"] = {**DEFAULT_MODEL, **model}
    nlp.add_pipe("crf_tagger", config=config)
    workdir = Path(tempfile.mkdtemp(prefix="word_features_"))
    if gazetteer is not None:
        path = workdir / "gazetteer.tsv"
        path.write_text("".join(f"{label}\t{text}\n" for label, text in gazetteer),
                        encoding="utf8")
        nlp.config["initialize"]["components"]["crf_tagger"] = {"gazetteer": str(path)}
    if initialize:
        nlp.config["initialize"]["components"]["crf_tagger"] = dict(initialize)

    examples = [task_example(nlp, task, w, t) for w, t in train]
    train_s, _ = update_loop(nlp, examples, epochs, batch_size, seed=seed)
    pipe = nlp.get_pipe("crf_tagger")
    n_tokens = sum(len(w) for w, _ in test)
    times = []
    for _ in range(3):
        docs = [Doc(nlp.vocab, words=w) for w, _ in test]
        start = time.perf_counter()
        docs = list(nlp.pipe(docs, batch_size=1000))
        times.append(time.perf_counter() - start)
    pred = read_predictions(task, docs)
    pipe.to_disk(workdir / "component")
    result = {"train_s": train_s, "decode_tokens_per_s": n_tokens / min(times), "pred": pred,
              "model_mb": disk_bytes(workdir / "component") / 1e6}
    if calibration:
        pipe.cfg["store_confidence"] = True
        docs = list(nlp.pipe([Doc(nlp.vocab, words=w) for w, _ in test], batch_size=1000))
        result["calibration"] = reliability(task, docs, test)
    return result


def reliability(task: str, docs: List[Any], test: Sentences) -> Dict[str, Any]:
    """10-bin reliability table and expected calibration error (in points):
    per token (UPOS) or per predicted entity (NER, exact span and type)."""
    import numpy as np
    from spacy.training import biluo_tags_to_spans, iob_to_biluo

    from spacy_crf.plots.entities import expected_calibration_error, reliability_bins

    conf, right = [], []
    for doc, (words, tags) in zip(docs, test):
        if task == "upos":
            for token, gold in zip(doc, tags):
                conf.append(token._.crf_confidence)
                right.append(token.pos_ == gold)
        else:
            gold = {(s.start, s.end, s.label_) for s in biluo_tags_to_spans(doc, iob_to_biluo(tags))}
            for ent in doc.ents:
                conf.append(ent._.crf_confidence)
                right.append((ent.start, ent.end, ent.label_) in gold)
    conf_a, right_a = np.asarray(conf, dtype=float), np.asarray(right, dtype=bool)
    mean_conf, accuracy, counts = reliability_bins(conf_a, right_a, BINS)
    ece = expected_calibration_error(conf_a, right_a, BINS)
    rows = [{"bin": f"{b / BINS:.1f}-{(b + 1) / BINS:.1f}", "n": int(counts[b]),
             "confidence": float(mean_conf[b]), "accuracy": float(accuracy[b])}
            for b in range(BINS) if counts[b]]
    return {"ece_points": 100 * ece, "n": len(conf_a), "bins": rows}


def phase_crfsuite(train: Sentences, test: Sentences, templates: List[str]) -> Dict[str, Any]:
    """sklearn-crfsuite over the same templates (cluster ones included), by
    ``crfsuite_peer``: train s is featurizing plus the fit, decode the best of 3."""
    from crfsuite_peer import CrfsuiteFeaturizer, fit_and_decode

    run = fit_and_decode([w for w, _ in train], [t for _, t in train], [w for w, _ in test],
                         CrfsuiteFeaturizer(templates).sentence,
                         {"algorithm": "lbfgs", "c1": 0.1, "c2": 0.01, "max_iterations": 100},
                         decode_runs=3)
    return {"train_s": run["featurize_train_s"] + run["train_s"],
            "decode_tokens_per_s": run["decode_tokens_per_s"], "pred": run["pred"],
            "model_mb": run["model_bytes"] / 1e6}


def conll2000_rows(data_dir: Path, workdir: Path) -> Dict[str, Dict[str, Any]]:
    """The tuned CoNLL-2000 config through spacy train, without and with clusters."""
    from conll2000 import COMPONENT, DEFAULT_CONFIG, phase_spacy_decode, phase_spacy_train
    from spacy.tokens import DocBin

    from spacy_crf.converters import convert_chunks

    corpus = {}
    for split in ("train", "test"):
        docs = convert_chunks((data_dir / "conll2000" / f"{split}.txt").read_text(encoding="utf8"))
        corpus[split] = workdir / f"conll2000_{split}.spacy"
        DocBin(docs=docs, store_user_data=True).to_disk(corpus[split])
    rows = {}
    for name, clusters in (("tuned config", []), ("tuned config + clusters", CLUSTER_TEMPLATES)):
        out = workdir / f"conll2000_{len(clusters)}"
        overrides = {"paths.train": str(corpus["train"]), "paths.dev": str(corpus["test"]),
                     f"components.{COMPONENT}.model.cluster_templates": clusters}
        train = run_isolated(phase_spacy_train, str(DEFAULT_CONFIG), str(out), overrides,
                             str(workdir / f"conll2000_{len(clusters)}.log"))
        decode = run_isolated(phase_spacy_decode, str(out / "model-last"),
                              str(data_dir / "conll2000" / "test.txt"), 0, 3)
        rows[name] = {"score": 100 * decode["chunk_prf"]["f"], "train_s": train["total_s"],
                      "decode_tokens_per_s": decode["decode_tokens_per_s"],
                      "model_mb": train["model_bytes"] / 1e6}
        print(f"conll2000: {name}: {rows[name]['score']:.2f}", flush=True)
    return rows


# -- the run -----------------------------------------------------------------------

#: the UD English EWT releases in ../shared/data: r2.9 (the one Universal NER is
#: aligned with, the default) and v2.16 (the directory's top level)
EWT_RELEASES = {"r2.9": Path("ud_english_ewt/r2.9"), "v2.16": Path("ud_english_ewt")}


def run(data_dir: Path, tasks: Sequence[str], epochs: int, batch_size: int,
        rows: Sequence[str] = (), out: Optional[Path] = None, seeds: int = 1,
        ewt: str = "r2.9") -> Dict[str, Any]:
    from spacy_crf.pipeline.factory import DEFAULT_MODEL

    files = {
        "upos": (read_conllu_upos, data_dir / EWT_RELEASES[ewt] / "en_ewt-ud-train.conllu",
                 data_dir / EWT_RELEASES[ewt] / "en_ewt-ud-test.conllu"),
        "ner": (read_iob2, data_dir / "uner_english_ewt/en_ewt-ud-train.v0-normalized.iob2",
                data_dir / "uner_english_ewt/en_ewt-ud-test.iob2"),
    }
    templates = list(DEFAULT_MODEL["templates"])
    report: Dict[str, Any] = {"epochs": epochs, "batch_size": batch_size, "ewt": ewt,
                              "templates": templates,
                              "cluster_templates": CLUSTER_TEMPLATES, "tasks": {}}
    text = [w for w, _ in read_conllu_upos(files["upos"][1])]
    text += [[c[0] for c in s] for s in read_columns(data_dir / "conll2000" / "train.txt")]
    vectors = ppmi_vectors(text)
    report["vectors"] = {"words": len(vectors[0]), "dim": int(vectors[1].shape[1]),
                         "text_tokens": sum(len(s) for s in text)}
    print(f"PPMI-SVD vectors: {len(vectors[0])} words", flush=True)
    for task in [t for t in tasks if t in files]:
        reader, train_path, test_path = files[task]
        train, test = reader(train_path), reader(test_path)
        gold = [t for _, t in test]
        small = train[:2000]
        systems = {
            "crf_tagger, factory defaults, no cluster table": lambda: run_isolated(
                phase_crf, task, train, test, {"cluster_templates": []}, epochs, batch_size),
            "crf_tagger, factory defaults + spacy-lookups-data (clusters)": lambda: run_isolated(
                phase_crf, task, train, test, {}, epochs, batch_size, calibration=True),
            # the clustered defaults over more shuffles of the whole corpus (--seeds)
            **{f"  the same, shuffle seed {seed} (whole corpus)": (
                lambda seed=seed: run_isolated(phase_crf, task, train, test, {}, epochs,
                                               batch_size, seed=seed))
               for seed in range(1, seeds)},
            # the L1 penalty of the defaults (l1_penalty), paired with the seeds above
            "  without the L1 penalty (l1_penalty = 0)": lambda: run_isolated(
                phase_crf, task, train, test, {"l1_penalty": 0.0}, epochs, batch_size),
            **{f"  without the L1 penalty, shuffle seed {seed}": (
                lambda seed=seed: run_isolated(phase_crf, task, train, test, {"l1_penalty": 0.0},
                                               epochs, batch_size, seed=seed))
               for seed in range(1, seeds)},
            "  without averaged weights (average_weights = false)": lambda: run_isolated(
                phase_crf, task, train, test, {"average_weights": False}, epochs, batch_size),
            "  in batches of 128 (the issue's loop)": lambda: run_isolated(
                phase_crf, task, train, test, {}, epochs, 128),
            "  + vector clusters (PPMI-SVD of the training text)": lambda: run_isolated(
                phase_crf, task, train, test, {"templates": templates + VECTOR_TEMPLATES},
                epochs, batch_size, vectors=vectors),
        }
        if task == "ner":
            systems["  + gazetteer of the training split's entities, as a file"] = (
                lambda: run_isolated(
                    phase_crf, task, train, test, {"templates": templates + ["GAZETTEER[-1..1]"]},
                    epochs, batch_size, gazetteer=training_gazetteer(train)))
            systems["  + the same gazetteer, gazetteer_from_training = true"] = (
                lambda: run_isolated(
                    phase_crf, task, train, test, {"templates": templates + ["GAZETTEER[-1..1]"]},
                    epochs, batch_size, initialize={"gazetteer_from_training": True}))
        systems["sklearn-crfsuite, same templates"] = lambda: run_isolated(
            phase_crfsuite, train, test, templates)
        systems["sklearn-crfsuite, same templates + the same clusters"] = lambda: run_isolated(
            phase_crfsuite, train, test, templates + CLUSTER_TEMPLATES)
        # a short loop moves with the shuffle (about +-0.5 on UNER): three seeds
        for seed in range(SMALL_SEEDS):
            systems[f"small corpus (2,000 sentences, batch 128): crf_tagger defaults, "
                    f"shuffle seed {seed}"] = (lambda seed=seed: run_isolated(
                        phase_crf, task, small, test, {}, epochs, 128, seed=seed))
        systems["small corpus (2,000 sentences): sklearn-crfsuite + clusters"] = \
            lambda: run_isolated(phase_crfsuite, small, test, templates + CLUSTER_TEMPLATES)
        if rows:  # --rows: the systems whose names hold one of these
            systems = {k: v for k, v in systems.items() if any(r in k for r in rows)}
        report["tasks"][task] = run_systems(task, gold, systems)
        write_json(out, report)  # a task's rows are kept whatever comes after
    if "conll2000" in tasks:
        report["tasks"]["conll2000"] = conll2000_rows(data_dir, Path(tempfile.mkdtemp()))
        write_json(out, report)
    return report


def print_report(report: Dict[str, Any]) -> None:
    metric = {"upos": "accuracy", "ner": "F1", "conll2000": "chunk F1"}
    for task, rows in report["tasks"].items():
        print(f"\n{task} (test {metric[task]})")
        print(markdown_table(["system", metric[task], "train s", "decode tok/s", "model MB"], [
            [name, f"{r['score']:.2f}", f"{r['train_s']:.1f}", f"{r['decode_tokens_per_s']:,.0f}",
             f"{r.get('model_mb', 0):.1f}"] for name, r in rows.items()]))
        for name, r in rows.items():
            if "calibration" in r:
                cal = r["calibration"]
                print(f"\ncalibration of {name}: ECE {cal['ece_points']:.2f} points over "
                      f"{cal['n']} {'tokens' if task == 'upos' else 'predicted entities'}")
                print(markdown_table(["bin", "n", "mean confidence", "accuracy"], [
                    [b["bin"], b["n"], f"{b['confidence']:.3f}", f"{b['accuracy']:.3f}"]
                    for b in cal["bins"]]))


def main(argv: Optional[List[str]] = None) -> int:
    global CLUSTER_TEMPLATES
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA)
    parser.add_argument("--tasks", nargs="+", default=["upos", "ner", "conll2000"],
                        choices=["upos", "ner", "conll2000"])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--rows", nargs="+", default=[],
                        help="run only the systems whose names hold one of these strings")
    parser.add_argument("--seeds", type=int, default=1,
                        help="train the clustered defaults on the whole corpus with this many "
                             "shuffle seeds (0, 1, ...; 1: seed 0 only)")
    parser.add_argument("--ewt", choices=sorted(EWT_RELEASES), default="r2.9",
                        help="the UD English EWT release of the UPOS rows")
    args = parser.parse_args(argv)
    from spacy_crf.pipeline.factory import DEFAULT_MODEL

    CLUSTER_TEMPLATES = list(DEFAULT_MODEL["cluster_templates"])
    report = run(args.data_dir, args.tasks, args.epochs, args.batch_size, args.rows, args.out,
                 args.seeds, args.ewt)
    print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
