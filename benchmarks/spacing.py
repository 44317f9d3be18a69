"""What the text's spacing (``SPACE_AFTER``, ``feature_sources/space_after.py``)
gives the targets that read it by default: ``sent_starts`` and ``tag``.

Each row trains the factory's defaults as a new user does
(``nlp.add_pipe("crf_tagger", config={"target": ...})``, ``nlp.initialize()``
and a plain ``nlp.update`` loop: 5 epochs, batches of 32 docs, shuffle seed 0)
twice: as they are, and with ``[initialize.components.crf_tagger] space_after
= false`` (the source left out). Both are scored on dev and test docs made of
the gold words and their spacing, as ``spacy evaluate`` reads a corpus; the
model with the source also on the same words spaced throughout, as
``Doc(vocab, words)`` makes them (``--no-spacing``: what such docs cost it).
UD English EWT, converted as ``benchmarks/lemma_senter.py`` converts it:

* ``sents_lines``: the corpus's documents with their line breaks (``# newpar``);
* ``sents_doc``: the corpus's documents;
* ``sents``: docs of 10 sentences;
* ``tag``: Penn tags (XPOS) in docs of 10 sentences.

Run from a checkout::

    python benchmarks/spacing.py --data-dir ../shared/data

It prints a table (one run each) and, with ``--out``, writes it as JSON.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (SHARED_DATA, convert_conllu, environment, make_summary,  # noqa: E402
                    markdown_table, ud_sources, write_json)
from defaults import update_loop  # noqa: E402

#: (sentences a doc, line breaks kept, target, score) of each task
TASKS = {"sents_lines": (0, True, "sent_starts", "sents_f"),
         "sents_doc": (0, False, "sent_starts", "sents_f"),
         "sents": (10, False, "sent_starts", "sents_f"),
         "tag": (10, False, "tag", "tag_acc")}


def run_task(task: str, workdir: Path, data_dir: Path, no_spacing: bool) -> Dict[str, Any]:
    """Train the target with and without the source; its scores on dev and test."""
    import spacy
    from spacy.tokens import Doc, DocBin
    from spacy.training import Example

    from spacy_crf.util import tokens_only

    n_sents, line_breaks, target, metric = TASKS[task]
    out = workdir / task
    sources = ud_sources(data_dir, "ud_english_ewt", "en_ewt-ud", out)
    corpus = {split: convert_conllu(src, out, n_sents, line_breaks)
              for split, src in sources.items()}
    row: Dict[str, Any] = {}
    for with_source in (True, False):
        nlp = spacy.blank("en")
        nlp.add_pipe("crf_tagger", config={"target": target})
        if not with_source:
            nlp.config["initialize"]["components"]["crf_tagger"] = {"space_after": False}
        refs = list(DocBin().from_disk(corpus["train"]).get_docs(nlp.vocab))
        train_s, _ = update_loop(nlp, [Example(tokens_only(r, nlp.vocab), r) for r in refs],
                                 5, 32)
        name = "with the source" if with_source else "space_after = false"
        row[name] = {"train_s": round(train_s, 1)}
        scored_on = {"text": lambda r: tokens_only(r, nlp.vocab)}
        if with_source and no_spacing:
            scored_on["words spaced throughout"] = (
                lambda r: Doc(nlp.vocab, words=[t.text for t in r]))
        for split in ("dev", "test"):
            gold = list(DocBin().from_disk(corpus[split]).get_docs(nlp.vocab))
            for kind, make in scored_on.items():
                docs = nlp.pipe([make(r) for r in gold], batch_size=1000)
                scores = nlp.get_pipe("crf_tagger").score(
                    [Example(doc, r) for doc, r in zip(docs, gold)])
                row[name][f"{split}, {kind}"] = round(100 * scores[metric], 2)
    return row


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA,
                        help="the shared data folder (holds ud_english_ewt/)")
    parser.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS))
    parser.add_argument("--no-spacing", action="store_true",
                        help="also score the model with the source on docs spaced throughout")
    parser.add_argument("--out", type=Path, default=None, help="write the rows as JSON here")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="spacing_bench_") as tmp:
        rows = {task: run_task(task, Path(tmp), args.data_dir, args.no_spacing)
                for task in args.tasks}
    command = "python benchmarks/spacing.py" + (" --no-spacing" if args.no_spacing else "")
    summary = spacing_summary(rows, command)
    table = summary["tables"][0]
    print(markdown_table(table["headers"], table["rows"]))
    if args.out:
        write_json(args.out, {"benchmark": "spacing", "command": command, "rows": rows,
                              "summary": summary, "environment": environment(),
                              "benchmark_wall_s": time.perf_counter() - start})
    return 0


def spacing_summary(rows: Dict[str, Any], command: str) -> Dict[str, Any]:
    """The report's summary: a table of every task, model and scored split."""
    table = []
    for task, row in rows.items():
        metric = TASKS[task][3]
        for name, scores in row.items():
            table += [[task, metric, name, kind, f"{value:.2f}", f"{scores['train_s']:.1f}"]
                      for kind, value in scores.items() if kind != "train_s"]
    return make_summary(
        "The text's spacing: the sent_starts and tag targets with and without it", command, [],
        ["UD English EWT; factory defaults, plain loop (5 epochs, batches of 32 docs, seed 0); "
         "'space_after = false': [initialize.components.crf_tagger] leaves the source out; "
         "'text': docs of the gold words and their spacing, 'words spaced throughout': "
         "Doc(vocab, words)."],
        [{"caption": "", "headers": ["task", "score", "model", "split, scored on", "score",
                                     "train s"], "rows": table}])


if __name__ == "__main__":
    sys.exit(main())
