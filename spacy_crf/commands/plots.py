"""``python -m spacy_crf.plots`` / ``spacy crf-plots``: diagnostic plots for a trained ``crf_tagger`` pipeline.

``python -m spacy crf-plots MODEL DATA_PATH OUTPUT_DIR`` (or ``python -m
spacy_crf.plots``, the same) draws with :mod:`spacy_crf.plots` and writes into
``OUTPUT_DIR``:

* ``transitions.png``: the learned label-interaction scores. Chain models: the
  transition matrix (rows = previous label, columns = next label) with the
  start scores as an extra first row and the end scores as an extra last
  column. Tree models: one panel per relation group (rows = child label,
  columns = head label; each group named by its relation), the root scores as
  an extra column of the first.
* ``confusion.png``: gold against predicted label per token on ``DATA_PATH``,
  each row normalised to sum to 1 (numbers in the cells where they fit).
  Each gold row's tick label gives its support (``PROPN (n=12)``).
* ``entities.png`` (span targets: ``ents``, ``spans:KEY``): gold span type
  against predicted span type by exact span boundaries, with a ``missed``
  column (no predicted span at a gold span's boundaries) and a ``spurious``
  row (no gold span at a predicted span's boundaries), and the exact-match
  precision, recall and F1.
* ``span_confidence.png`` (span targets): a reliability diagram of the
  component's span confidences (``span._.{name}_confidence``) and its
  histogram for correct and wrong predicted spans.
* ``learning_curve.png``: the scores against training steps, parsed from the
  console output of ``spacy train`` or from the JSON lines of
  ``spacy.ConsoleLogger.v3``'s ``output_file``, given with ``--train-log``
  (skipped with a note without it). One line per distinct score (identical
  columns share a line; the main ``SCORE`` takes the line of the component
  score it repeats), and the loss per step: spaCy logs the loss summed over
  the steps since the previous row, the plot divides by that number of steps.
* ``confidence.html``: the first ``--n-docs`` docs, each token coloured by the
  CRF's confidence in its predicted label (the component's own
  ``token._.{name}_confidence``), the predicted label under it, the gold
  label on hover and errors underlined; for span targets also each doc's
  predicted spans with their label and ``span._.{name}_confidence``, wrong
  ones marked and missed gold spans drawn beside them. Self-contained: no
  external assets.

The confidences are always the plotted component's own, never the shared
``token._.crf_confidence``: in a pipeline of several crf_taggers, others
may store theirs on the same docs (``store_confidence`` in their config).

    python -m spacy_crf.plots training/model-best corpus/dev.spacy plots/ \\
        --train-log training/train.log
    python -m spacy_crf.plots MODEL DATA.spacy plots/ --copy HEAD,DEP

``--copy`` copies attributes from the corpus onto the inputs, as
``python -m spacy_crf.evaluate`` does (e.g. ``TAG`` for CoNLL-2000 chunking,
``HEAD,DEP`` for tree models): by default those the model's training config
copied, ``--copy ""`` nothing.

The figures need matplotlib: ``pip install matplotlib`` (``pip install -e ".[plots]"`` in a checkout). Reading the
training log (``train_log``) and the HTML view (``confidence_html``) do not.
"""

from pathlib import Path
from typing import List, Optional, Tuple

import numpy as np
from spacy.language import Language
from spacy.training import Example

from ..errors import Errors
from ..evaluation import read_examples, warn_missing_inputs
from ..pipeline.crf_tagger import CRFTagger
from ..plots.confidence_html import render_html
from ..plots.entities import span_confidences, span_confusion
from ..plots.train_log import find_log_file, parse_train_log
from ._util import (CODE_HELP, COPY_HELP, Arg, Opt, command, copy_option, import_code,
                    load_model, msg, our_errors, run)


def find_component(nlp: Language, name: Optional[str]) -> Tuple[str, CRFTagger]:
    """The named component, or the first ``crf_tagger`` of the pipeline.

    Raises
    ------
    ValueError
        E247 for a name the pipeline does not have, E068 for a component that is
        not a crf_tagger, E069 for a pipeline without one.
    """
    if name is not None:
        if name not in nlp.pipe_names:
            crf_pipes = [n for n, pipe in nlp.pipeline if isinstance(pipe, CRFTagger)]
            if not crf_pipes:  # no name to suggest: E069 says what MODEL needs
                raise ValueError(Errors.E069.format(pipes=nlp.pipe_names))
            raise ValueError(Errors.E247.format(name=name, crf_pipes=", ".join(crf_pipes)))
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
    the component's own confidences, ``span_confidence.png``; the files
    written and their notes."""
    target = component.target
    gold = [target.spans_of(eg.reference) for eg in examples]
    pred = [target.spans_of(doc) or [] for doc in docs]
    types, counts = span_confusion(gold, pred)
    path = out / "entities.png"
    written = [(path, figures.plot_span_confusion(types, counts, path))]
    conf, correct = span_confidences(gold, pred, component.name)
    if len(conf):
        path = out / "span_confidence.png"
        written.append((path, figures.plot_span_confidence(conf, correct, path)))
    else:
        msg.warn("span_confidence.png skipped: no predicted span with a stored confidence")
    return written


def confidence_page(name: str, component: CRFTagger, data_path: Path,
                    examples: List[Example], docs: List, gold: List[np.ndarray],
                    pred: List[np.ndarray]) -> str:
    """``confidence.html`` of ``docs`` (the predictions of ``examples``): each
    token coloured by the component's own confidence, whatever other
    crf_taggers of the pipeline stored on the docs."""
    target = component.target
    title = f"{name} ({component.cfg['target']}, {component.cfg['structure']}) on {data_path.name}"
    spans = {}
    if target.is_span_target:  # the entity view: predicted and gold spans
        spans = {"gold_spans": [target.spans_of(eg.reference) for eg in examples],
                 "pred_spans": [target.spans_of(doc) or [] for doc in docs]}
    return render_html(docs, gold, pred, component.target.label_names(component.tags), title,
                       component=component.name, **spans)


@command("crf-plots")
def plots_cli(
    # fmt: off
    model: str = Arg(..., help="Model name or path"),
    data_path: Path = Arg(..., help="Location of binary evaluation data in .spacy format", exists=True),
    output_dir: Path = Arg(..., help="Directory for the plots and confidence.html (created if missing)", file_okay=False),
    code_path: Optional[Path] = Opt(None, "--code", "-c", help=CODE_HELP),
    copy: Optional[str] = Opt(None, "--copy", help=COPY_HELP),
    train_log: Optional[Path] = Opt(None, "--train-log", help="Console output of spacy train, or the JSON lines of spacy.ConsoleLogger.v3's output_file (a file, or a directory holding one), for learning_curve.png", exists=True),
    n_docs: int = Opt(20, "--n-docs", help="Number of docs in confidence.html", min=0),
    component: Optional[str] = Opt(None, "--component", help="Name of the crf_tagger (default: the first)"),
    batch_size: int = Opt(256, "--batch-size", "-b", help="Documents per nlp.pipe batch", min=1),
    # fmt: on
):
    """
    Plot a trained crf_tagger on evaluation data. The learned transition
    scores (transitions.png; an order-2 chain's triple scores too,
    transitions_order2.png), the token confusion matrix (confusion.png), for
    span targets the span confusion and the reliability of span confidence
    (entities.png, span_confidence.png), the learning curve from a training
    log (learning_curve.png), and confidence.html, the first docs with each
    token coloured by the CRF's confidence in its label. The figures need
    matplotlib (pip install matplotlib).
    """
    try:
        from ..plots import figures
    except ImportError as err:  # E067: names the extra to install
        msg.fail(str(err), exits=1)
    import_code(code_path)
    # a model or corpus that cannot be read, a bad --component or --copy, a model that
    # cannot run without an input not copied (E015), a page that cannot be drawn: a ✘
    # line, and no OUTPUT_DIR
    with our_errors():
        nlp = load_model(model)
        name, component_ = find_component(nlp, component)
        attrs = copy_option(nlp, copy)
        examples = read_examples(nlp, data_path, attrs)  # (E249 for none)
        warn_missing_inputs(nlp, examples, attrs)
        docs, gold, pred = predict(nlp, component_, examples, batch_size)
        n = min(n_docs, len(docs))
        page = confidence_page(name, component_, data_path, examples[:n], docs[:n], gold[:n],
                               pred[:n])
    labels = figures.label_names(component_)  # a lemma tree as its rule
    output_dir.mkdir(parents=True, exist_ok=True)
    written: List[Tuple[Path, str]] = []

    path = output_dir / "transitions.png"
    structure = component_.cfg["structure"]
    if structure in figures.INTERACTION_PLOTS:
        written.append((path, figures.plot_transitions(component_, path)))
        if figures.has_second_order(component_):
            path = output_dir / "transitions_order2.png"
            written.append((path, figures.plot_second_order(component_, path)))
    else:  # (segment scores, experts, none at all: no one matrix to draw)
        msg.warn(f"transitions.png skipped: no drawing of the label-interaction scores of "
                 f"structure '{structure}' (chain, pruned_chain and tree have one)")

    counts, n_unknown = figures.confusion_matrix(gold, pred, len(labels))
    path = output_dir / "confusion.png"
    info = figures.plot_confusion(labels, counts, path)
    if n_unknown:
        info += f" ({n_unknown} tokens without a known gold label skipped)"
    written.append((path, info))

    if component_.target.is_span_target:
        with our_errors():
            written.extend(entity_views(figures, component_, examples, docs, output_dir))

    if train_log is None:
        msg.warn("learning_curve.png skipped: no --train-log given")
    else:
        log = find_log_file(train_log)
        columns, rows = parse_train_log(log.read_text(errors="replace")) if log else ([], [])
        if not rows or "#" not in columns:
            msg.warn(f"learning_curve.png skipped: no spacy train score table found in "
                     f"{train_log} (save the console output of spacy train, e.g. "
                     "spacy train ... | tee train.log)")
        else:
            path = output_dir / "learning_curve.png"
            written.append((path, figures.plot_learning_curve(columns, rows, path) + f", from {log}"))

    path = output_dir / "confidence.html"
    path.write_text(page, encoding="utf-8")
    written.append((path, f"{n} docs"))

    msg.info(f"model {model}, component '{name}', {len(labels)} labels, {len(examples)} docs")
    for path, info in written:
        msg.good(f"wrote {path}: {info}")


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m spacy_crf.plots``: :func:`plots_cli`; its exit code."""
    return run(plots_cli, argv, "python -m spacy_crf.plots")
