"""The same factory-default rows from two checkouts of the code, in one run.

For a change that should alter neither scores nor speed (a refactor, issue
#50's acceptance: "scores and tok/s unchanged within noise on the EWT UPOS,
UNER and structures benchmarks"), each row is trained and decoded once with
this checkout and once with ``--base`` (a git revision, checked out into a
temporary worktree), each phase in a fresh process whose ``PYTHONPATH`` is
that checkout:

* ``upos``: UD English EWT r2.9, ``target = "pos"``;
* ``ner``: Universal NER English EWT (the v0 train, as ``defaults.py``),
  ``target = "ents"``;
* ``tree (oracle)`` and ``chain_tree (oracle)``: EWT UPOS with the
  ``tree`` / ``chain_tree`` structure over the gold trees, which the input
  docs carry at training and at test (an oracle row: a parser's trees would
  be the real one).

Each is the factory defaults (``nlp.add_pipe("crf_tagger", config={"target":
..., "structure": ...})``, ``nlp.initialize()``'s optimizer, 5 shuffled
epochs of ``nlp.update`` in batches of 32, as ``defaults.py``). The table
gives each checkout's test score, whether the two predicted exactly the same
labels, training seconds, and decode tokens/s: the best of ``--rounds``
decodes of the test set per checkout, the two checkouts' decodes taking
turns so that both meet the same machine load.

    python benchmarks/two_checkouts.py --base 9ec737a --data-dir ../shared/data
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (REPO_ROOT, SHARED_DATA, environment, log, make_summary,  # noqa: E402
                    markdown_table, peak_rss_mb, write_json)

EWT = "ud_english_ewt/r2.9/en_ewt-ud-{split}.conllu"
UNER = {"train": "uner_english_ewt/en_ewt-ud-train.v0-normalized.iob2",
        "test": "uner_english_ewt/en_ewt-ud-test.iob2"}
#: row -> (task, the component's config beside the factory's defaults, gold trees on the docs)
ROWS = {
    "upos": ("upos", {"target": "pos"}, False),
    "ner": ("ner", {"target": "ents"}, False),
    "tree (oracle)": ("upos", {"target": "pos", "structure": "tree"}, True),
    "chain_tree (oracle)": ("upos", {"target": "pos", "structure": "chain_tree"}, True),
}


# -- phases (in a fresh process, with the checkout on PYTHONPATH) -----------------

def _examples(nlp, task: str, path: Path, trees: bool, limit: int) -> List[Any]:
    """Training or test Examples: predicted docs of the words (and, with ``trees``,
    the gold heads and relations), reference docs with the gold labels."""
    from spacy.tokens import Doc
    from spacy.training import Example

    from defaults import read_iob2, task_example

    if task == "ner":
        return [task_example(nlp, "ner", words, tags) for words, tags in read_iob2(path)[:limit or None]]
    from spacy.training.converters import conllu_to_docs

    docs = list(conllu_to_docs(path.read_text(encoding="utf8"), n_sents=1, no_print=True))
    out = []
    for doc in docs[:limit or None]:
        ref = Doc(nlp.vocab, words=[t.text for t in doc], spaces=[bool(t.whitespace_) for t in doc],
                  pos=[t.pos_ for t in doc], heads=[t.head.i for t in doc],
                  deps=[t.dep_ for t in doc])
        kept = dict(heads=[t.head.i for t in doc], deps=[t.dep_ for t in doc]) if trees else {}
        predicted = Doc(nlp.vocab, words=[t.text for t in doc],
                        spaces=[bool(t.whitespace_) for t in doc], **kept)
        out.append(Example(predicted, ref))
    return out


def _paths(data_dir: Path, task: str) -> Dict[str, Path]:
    if task == "ner":
        return {split: data_dir / name for split, name in UNER.items()}
    return {split: data_dir / EWT.format(split=split) for split in ("train", "test")}


def _labels(task: str, docs: Sequence[Any]) -> List[List[str]]:
    from defaults import read_predictions

    return read_predictions(task, docs)


def phase_train(row: str, data_dir: str, out_dir: str, limit: int) -> Dict[str, Any]:
    """Train the row's factory defaults, save them, score the test set."""
    import spacy

    from defaults import score, update_loop

    task, config, trees = ROWS[row]
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config=config)
    paths = _paths(Path(data_dir), task)
    train = _examples(nlp, task, paths["train"], trees, limit)
    train_s, _ = update_loop(nlp, train, epochs=5, batch_size=32)
    nlp.to_disk(out_dir)
    test = _examples(nlp, task, paths["test"], trees, limit)
    docs = list(nlp.pipe([eg.predicted for eg in test], batch_size=1000))
    pred = _labels(task, docs)
    gold = _labels(task, [eg.reference for eg in test])
    return {"score": score(task, gold, pred), "train_s": train_s,
            "pred_sha1": hashlib.sha1(json.dumps(pred).encode()).hexdigest(),
            "peak_rss_mb": round(peak_rss_mb(), 1)}


def phase_decode(row: str, data_dir: str, model_dir: str, limit: int, runs: int) -> Dict[str, Any]:
    """Load the saved row and decode the test set ``runs`` times (after a warm-up)."""
    import spacy

    task, _, trees = ROWS[row]
    nlp = spacy.load(model_dir)
    test = _examples(nlp, task, _paths(Path(data_dir), task)["test"], trees, limit)
    list(nlp.pipe([eg.predicted.copy() for eg in test[:200]]))
    times = []
    for _ in range(runs):
        docs = [eg.predicted.copy() for eg in test]
        start = time.perf_counter()
        list(nlp.pipe(docs, batch_size=1000))
        times.append(time.perf_counter() - start)
    return {"best_s": min(times), "n_tokens": sum(len(eg.predicted) for eg in test)}


# -- the run ------------------------------------------------------------------------

def run_phase(checkout: Path, phase: str, *args: Any) -> Dict[str, Any]:
    """``phase(*args)`` in a fresh process importing spacy_crf from ``checkout``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(checkout), str(Path(__file__).parent)]))
    done = subprocess.run([sys.executable, __file__, "--phase", phase, json.dumps(args)],
                          env=env, capture_output=True, text=True, cwd=checkout)
    if done.returncode:
        raise RuntimeError(f"{phase} {args} in {checkout} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(base: str, data_dir: Path, rows: Sequence[str], rounds: int, runs: int,
            limit: int) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="two_checkouts_") as tmp:
        work = Path(tmp)
        base_dir = work / "base"
        subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "add", "-q", "--detach",
                        str(base_dir), base], check=True)
        checkouts = {"base": base_dir, "this": REPO_ROOT}
        try:
            report: Dict[str, Any] = {"base": base, "this": _head(), "rows": {}}
            for row in rows:
                result: Dict[str, Any] = {}
                for name, checkout in checkouts.items():
                    log(f"{row}: training with {name}")
                    result[name] = run_phase(checkout, "train", row, str(data_dir),
                                             str(work / f"{name}-{row}"), limit)
                    result[name]["decode_s"] = []
                for _ in range(rounds):  # the checkouts' decodes take turns
                    for name, checkout in checkouts.items():
                        decoded = run_phase(checkout, "decode", row, str(data_dir),
                                            str(work / f"{name}-{row}"), limit, runs)
                        result[name]["decode_s"].append(decoded["best_s"])
                        result[name]["n_tokens"] = decoded["n_tokens"]
                for name in checkouts:
                    r = result[name]
                    r["decode_tokens_per_s"] = r["n_tokens"] / min(r["decode_s"])
                report["rows"][row] = result
                log(f"{row}: {_line(row, result)}")
        finally:
            subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force",
                            str(base_dir)], check=False)
    return report


def _head() -> str:
    return subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()


def _line(row: str, result: Dict[str, Any]) -> str:
    base, this = result["base"], result["this"]
    same = "yes" if base["pred_sha1"] == this["pred_sha1"] else "no"
    return " | ".join([
        f"{base['score']:.2f} / {this['score']:.2f}", same,
        f"{base['train_s']:.1f} / {this['train_s']:.1f}",
        f"{base['decode_tokens_per_s']:,.0f} / {this['decode_tokens_per_s']:,.0f}",
        f"{this['decode_tokens_per_s'] / base['decode_tokens_per_s']:.2f}x",
        f"{base['peak_rss_mb']:.0f} / {this['peak_rss_mb']:.0f}"])


HEADERS = ["row", "score (base / this)", "same labels", "train s", "decode tok/s", "ratio",
           "peak MB"]


def summary(report: Dict[str, Any], command: str) -> Dict[str, Any]:
    """The report's table for the results page (``results.py``)."""
    table = {"caption": f"base `{report['base']}` / this `{report['this']}`, each cell "
                        "base / this; decode: the best of the turns, ratio this / base",
             "headers": HEADERS,
             "rows": [[row] + _line(row, result).split(" | ")
                      for row, result in report["rows"].items()]}
    return make_summary("Two checkouts of the code, the same factory rows", command, [],
                        ["upos: EWT UPOS accuracy; ner: UNER exact-span F1; tree / chain_tree: "
                         "EWT UPOS over the gold trees (oracle rows); 5 epochs of nlp.update "
                         "at the factory defaults, each checkout in processes of its own"],
                        [table])


def print_report(report: Dict[str, Any]) -> None:
    table = report["summary"]["tables"][0]
    print(f"\n{table['caption']}")
    print(markdown_table(table["headers"], table["rows"]))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", help="the git revision to compare this checkout with")
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA)
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--rounds", type=int, default=3,
                        help="decode turns per checkout (each the best of --runs decodes)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--limit", type=int, default=0,
                        help="the first sentences of each split only (0: all)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("phase_args", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        phase = {"train": phase_train, "decode": phase_decode}[args.phase]
        print(json.dumps(phase(*json.loads(args.phase_args))))
        return 0
    if not args.base:
        parser.error("--base REV is needed")
    report = compare(args.base, args.data_dir.resolve(), args.rows, args.rounds, args.runs,
                     args.limit)
    report.update(benchmark="two_checkouts", environment=environment(),
                  summary=summary(report, " ".join(["python benchmarks/two_checkouts.py"]
                                                   + (argv if argv is not None else sys.argv[1:]))))
    print_report(report)
    write_json(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
