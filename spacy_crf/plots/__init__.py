"""Diagnostic plots for a trained ``crf_tagger`` pipeline.

Writes into ``--out``:

* ``transitions.png``: the learned label-interaction scores. Chain models: the
  transition matrix (rows = previous label, columns = next label) with the
  start scores as an extra first row and the end scores as an extra last
  column. Tree models: one panel per relation group (rows = child label,
  columns = head label; each group named by its relation), the root scores as
  an extra column of the first.
* ``confusion.png``: gold against predicted label per token on ``--data``,
  each row normalised to sum to 1 (numbers in the cells where they fit).
  Each gold row's tick label gives its support (``PROPN (n=12)``).
* ``entities.png`` (span targets: ``ents``, ``spans:KEY``): gold span type
  against predicted span type by exact span boundaries, with a ``missed``
  column (no predicted span at a gold span's boundaries) and a ``spurious``
  row (no gold span at a predicted span's boundaries), and the exact-match
  precision, recall and F1.
* ``span_confidence.png`` (span targets): a reliability diagram of
  ``span._.crf_confidence`` and its histogram for correct and wrong
  predicted spans.
* ``learning_curve.png``: the scores against training steps, parsed from the
  console output of ``spacy train`` or from the JSON lines of
  ``spacy.ConsoleLogger.v3``'s ``output_file``, given with ``--train-log``
  (skipped with a note without it). One line per distinct score (identical
  columns share a line; the main ``SCORE`` takes the line of the component
  score it repeats), and the loss per step: spaCy logs the loss summed over
  the steps since the previous row, the plot divides by that number of steps.
* ``confidence.html``: the first ``--n-docs`` docs, each token coloured by the
  CRF's confidence in its predicted label (``token._.crf_confidence``), the
  predicted label under it, the gold label on hover and errors underlined;
  for span targets also each doc's predicted spans with their label and
  ``span._.crf_confidence``, wrong ones marked and missed gold spans drawn
  beside them. Self-contained: no external assets.

    python -m spacy_crf.plots --model training/model-best --data corpus/dev.spacy \\
        --train-log training/train.log --out plots/
    python -m spacy_crf.plots --model M --data D.spacy --copy HEAD DEP --out plots/

``--copy`` copies attributes from the corpus onto the inputs, as
``python -m spacy_crf.evaluate`` does (e.g. ``TAG`` for CoNLL-2000 chunking,
``HEAD DEP`` for tree models).

The figures need matplotlib: ``pip install matplotlib`` (``pip install -e ".[plots]"`` in a checkout). Reading the
training log (``train_log``) and the HTML view (``confidence_html``) do not.
"""

import argparse
from pathlib import Path
from typing import List, Optional, Tuple

import numpy as np
import spacy
from spacy.training import Corpus, Example
from wasabi import msg

from ..augmenters import create_copy_attrs
from ..errors import Errors
from ..pipeline.crf_tagger import CRFTagger
from .confidence_html import render_html
from .entities import span_confidences, span_confusion
from .train_log import find_log_file, parse_train_log


def find_component(nlp, name: Optional[str]) -> Tuple[str, CRFTagger]:
    """The named component, or the first ``crf_tagger`` of the pipeline."""
    if name is not None:
        component = nlp.get_pipe(name)
        if not isinstance(component, CRFTagger):
            raise ValueError(Errors.E068.format(name=name, pipes=nlp.pipe_names))
        return name, component
    for pipe_name, component in nlp.pipeline:
        if isinstance(component, CRFTagger):
            return pipe_name, component
    raise ValueError(Errors.E069.format(pipes=nlp.pipe_names))


def predict(nlp, component: CRFTagger, examples: List[Example],
            batch_size: int) -> Tuple[List, List[np.ndarray], List[np.ndarray]]:
    """Run the pipeline over the predicted docs (confidences on); gold and predicted ids."""
    component.cfg["store_confidence"] = True
    docs = list(nlp.pipe((eg.predicted for eg in examples), batch_size=batch_size))
    target = component.target
    gold = [target.gold_ids(eg) for eg in examples]
    pred = [target.ids_of_keys(target.reference_keys(doc)) for doc in docs]
    return docs, gold, pred


def entity_views(figures, component: CRFTagger, examples: List[Example], docs: List,
                 out: Path) -> List[Tuple[Path, str]]:
    """Span targets: ``entities.png`` and, where the predicted spans carry
    confidences, ``span_confidence.png``; the files written and their notes."""
    target = component.target
    gold = [target.spans_of(eg.reference) for eg in examples]
    pred = [target.spans_of(doc) or [] for doc in docs]
    types, counts = span_confusion(gold, pred)
    path = out / "entities.png"
    written = [(path, figures.plot_span_confusion(types, counts, path))]
    conf, correct = span_confidences(gold, pred)
    if len(conf):
        path = out / "span_confidence.png"
        written.append((path, figures.plot_span_confidence(conf, correct, path)))
    else:
        msg.warn("span_confidence.png skipped: no predicted span with a stored confidence")
    return written


def main(argv: Optional[List[str]] = None) -> int:
    """Write the plots of a trained pipeline (the command line of ``python -m spacy_crf.plots``)."""
    parser = argparse.ArgumentParser(prog="python -m spacy_crf.plots", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="pipeline directory or package name")
    parser.add_argument("--data", required=True, type=Path, help="evaluation corpus (.spacy)")
    parser.add_argument("--copy", nargs="*", default=[],
                        help="attributes copied from the corpus onto the inputs (e.g. TAG, HEAD DEP)")
    parser.add_argument("--train-log", type=Path, default=None,
                        help="console output of `spacy train` (a file, or a directory holding one)")
    parser.add_argument("--out", required=True, type=Path, help="output directory")
    parser.add_argument("--n-docs", type=int, default=20, help="docs in confidence.html")
    parser.add_argument("--component", default=None, help="component name (default: first crf_tagger)")
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args(argv)
    try:
        from . import figures
    except ImportError as err:  # E067: names the extra to install
        parser.exit(1, f"{err}\n")
    if not args.data.exists():
        parser.error(f"data file not found: {args.data}")
    if args.n_docs < 0:
        parser.error("--n-docs must be >= 0")

    nlp = spacy.load(args.model)
    name, component = find_component(nlp, args.component)
    labels = list(component.labels)
    augmenter = create_copy_attrs(args.copy) if args.copy else None
    examples = list(Corpus(args.data, augmenter=augmenter)(nlp))
    if not examples:
        parser.error(f"no examples in {args.data}")
    args.out.mkdir(parents=True, exist_ok=True)
    written: List[Tuple[Path, str]] = []

    path = args.out / "transitions.png"
    written.append((path, figures.plot_transitions(component, path)))

    docs, gold, pred = predict(nlp, component, examples, args.batch_size)
    counts, n_unknown = figures.confusion_matrix(gold, pred, len(labels))
    path = args.out / "confusion.png"
    info = figures.plot_confusion(labels, counts, path)
    if n_unknown:
        info += f" ({n_unknown} tokens without a known gold label skipped)"
    written.append((path, info))

    if component.target.is_span_target:
        written.extend(entity_views(figures, component, examples, docs, args.out))

    if args.train_log is None:
        msg.warn("learning_curve.png skipped: no --train-log given")
    else:
        log = find_log_file(args.train_log)
        columns, rows = parse_train_log(log.read_text(errors="replace")) if log else ([], [])
        if not rows or "#" not in columns:
            msg.warn(f"learning_curve.png skipped: no `spacy train` score table found in "
                     f"{args.train_log} (save the console output of spacy train, e.g. "
                     "`spacy train ... | tee train.log`)")
        else:
            path = args.out / "learning_curve.png"
            written.append((path, figures.plot_learning_curve(columns, rows, path) + f", from {log}"))

    n = min(args.n_docs, len(docs))
    path = args.out / "confidence.html"
    title = f"{name} ({component.cfg['target']}, {component.cfg['structure']}) on {args.data.name}"
    spans = {}
    if component.target.is_span_target:  # the entity view: predicted and gold spans
        spans = {"gold_spans": [component.target.spans_of(eg.reference) for eg in examples[:n]],
                 "pred_spans": [component.target.spans_of(doc) or [] for doc in docs[:n]]}
    path.write_text(render_html(docs[:n], gold[:n], pred[:n], labels, title, **spans),
                    encoding="utf-8")
    written.append((path, f"{n} docs"))

    msg.info(f"model {args.model}, component '{name}', {len(labels)} labels, {len(examples)} docs")
    for path, info in written:
        msg.good(f"wrote {path}: {info}")
    return 0

