"""EWT UPOS: the HMM baseline (``spacy-crf.HMM.v1``) against the chain CRF, in one run.

Both are built as a new user builds them, ``nlp.add_pipe("crf_tagger",
config={"target": "pos", ...})`` on a blank pipeline, trained on UD English
EWT r2.9 train and scored on test, each in a fresh process:

* the HMM learns its counts in ``nlp.initialize()`` (no update loop);
* the chain CRF has the factory defaults, ``nlp.initialize()``'s optimizer and
  5 epochs of ``nlp.update`` in batches of 32 (the trainers benchmark's row).

Printed and stored: accuracy, accuracy on test words unseen in train, train
seconds, decode tokens/s (one ``nlp.pipe`` pass over test), peak RSS.

    python benchmarks/hmm.py [--data-dir ../shared/data] [--out benchmarks/results/hmm.json]
"""

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (SHARED_DATA, environment, log, make_summary, markdown_table,  # noqa: E402
                    run_isolated, summary_row, write_json)
from defaults import phase_plain_loop, read_conllu_upos  # noqa: E402

SYSTEMS = {
    "HMM (spacy-crf.HMM.v1), counts at nlp.initialize": ({"@architectures": "spacy-crf.HMM.v1"}, 0),
    "chain CRF, factory defaults, 5 epochs of nlp.update": ({}, 5),
}


def accuracies(train, test, pred) -> Dict[str, float]:
    """Token accuracy, overall and on the test words never seen in train."""
    seen = {w for words, _ in train for w in words}
    right = total = oov_right = oov_total = 0
    for (words, gold), tags in zip(test, pred):
        for w, g, p in zip(words, gold, tags):
            right += g == p
            total += 1
            if w not in seen:
                oov_right += g == p
                oov_total += 1
    return {"accuracy": 100 * right / total, "oov_accuracy": 100 * oov_right / max(oov_total, 1),
            "oov_tokens": oov_total}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    base = args.data_dir / "ud_english_ewt" / "r2.9"
    train = read_conllu_upos(base / "en_ewt-ud-train.conllu")
    test = read_conllu_upos(base / "en_ewt-ud-test.conllu")
    rows: Dict[str, Dict[str, Any]] = {}
    for name, (model, epochs) in SYSTEMS.items():
        log(name)
        result = run_isolated(phase_plain_loop, "upos", train, test, model, epochs, 32)
        rows[name] = {**accuracies(train, test, result.pop("pred")), **result}
    table = markdown_table(
        ["EWT UPOS (test)", "accuracy", "unseen words", "train s", "decode tok/s", "peak MB"],
        [[name, f"{r['accuracy']:.2f}", f"{r['oov_accuracy']:.2f}", f"{r['train_s']:.1f}",
          f"{r['decode_tokens_per_s']:,.0f}", f"{r['peak_rss_mb']:.0f}"] for name, r in rows.items()])
    print(table)
    command = "python benchmarks/hmm.py --out benchmarks/results/hmm.json"
    oov = next(iter(rows.values()))["oov_tokens"]
    summary = make_summary(
        "HMM baseline against the chain CRF", command,
        [summary_row("UD English EWT UPOS", name, "acc", r["accuracy"] / 100, r["train_s"],
                     r["decode_tokens_per_s"], r["peak_rss_mb"], None, None,
                     note=f"{r['oov_accuracy']:.2f} on unseen words")
         for name, r in rows.items()],
        notes=[f"Train on EWT r2.9 train, score on test ({sum(len(w) for w, _ in test):,} tokens, "
               f"{oov:,} of them words unseen in train); each system in a fresh process, "
               "train s includes nlp.initialize, decode is one nlp.pipe pass over test.",
               "The HMM is bigram (first order) with TnT's suffix model for unseen words; it "
               "learns in nlp.initialize and its updates change nothing."])
    write_json(args.out, {"benchmark": "hmm", "command": command, "environment": environment(),
                          "rows": rows, "summary": summary})
    return 0


if __name__ == "__main__":
    sys.exit(main())
