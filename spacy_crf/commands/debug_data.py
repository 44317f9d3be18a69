"""``spacy debug data`` for crf_tagger components: what the training data gives them.

spaCy's ``spacy debug data CONFIG`` reports on spaCy's own pipes only, and a
plugin cannot add to it. This command loads a training config the same way
(overrides included), reads its train and dev corpora and, for every
``crf_tagger`` of the pipeline (or the one ``--component`` names), reports:

* its target, structure, sequence setting and scheme;
* the sizes of the train and dev corpora (docs, tokens);
* the labels of the train and dev data with their counts (tokens for ``tag``,
  ``pos``, ``dep`` and ``_.NAME``; spans by type for ``ents`` and
  ``spans:KEY``), read by the component's own target class;
* labels only dev has (never predicted), labels with few training examples,
  training docs without the annotation (they train as unannotated);
* for span targets: overlapping spans (a CRF keeps the longest of each group),
  spans whose ends fall inside a token of the pipeline's tokenisation, the
  longest span (and what the structure says of them: the semi-Markov CRF's
  ``max_segment_length``);
* the token annotations the component reads (a parse, TAG, POS, ...) and
  whether the training docs, or a component that annotates in training,
  give them.

    python -m spacy_crf.debug_data CONFIG [--component NAME] [--paths.train X --paths.dev Y ...]

It ends with the number of checks passed, warnings and errors; the exit code
is 1 if there was an error (e.g. no label at all, a missing parse a tree
structure needs), 0 otherwise, and 2 for a usage error (bad arguments, such
as a ``--component`` that names no crf_tagger of the pipeline, E203; a
config or corpus file that is not there).
"""

import sys
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import typer
from spacy.language import Language
from spacy.training import Example
from spacy.util import filter_spans
from wasabi import Printer

from ._util import CODE_HELP, Arg, Opt, command, config_overrides, import_code, our_errors, run
from ..errors import Errors
from ..pipeline.inputs import INPUT_ANNOTATIONS
from ..targets import Target, make_target
from ..training.train_config import check_corpora, load_pipeline, training_corpora
from ..util import same_tokens

#: labels with fewer training examples than this get a warning (as spaCy's "low data labels")
MIN_COUNT = 10
PROG = "python -m spacy_crf.debug_data"


class UsageError(Exception):
    """A problem with the arguments or the files they name (exit code 2)."""


class PipelineError(Exception):
    """The config reads, but its pipeline cannot be built (an error of the report)."""


@dataclass
class Checks:
    """A wasabi printer that counts the checks passed, the warnings and the errors."""

    printer: Printer
    n_good: int = 0
    n_warn: int = 0
    n_fail: int = 0

    def good(self, text: str) -> None:
        self.n_good += 1
        self.printer.good(text)

    def warn(self, text: str, detail: str = "") -> None:
        self.n_warn += 1
        self.printer.warn(text, detail or "")

    def fail(self, text: str, detail: str = "") -> None:
        self.n_fail += 1
        self.printer.fail(text, detail or "")

    def info(self, text: str) -> None:
        self.printer.info(text)

    def summary(self) -> str:
        return (f"{self.n_good} checks passed, {self.n_warn} warnings, "
                f"{self.n_fail} errors")


@dataclass
class CorpusStats:
    """What one pass over a corpus finds for one component's target.

    ``labels`` counts tokens for token targets and spans (by type) for span
    targets; ``with_input`` counts the predicted docs (what the component
    reads) that have each input annotation, ``gold_input`` the reference docs.
    """

    n_docs: int = 0
    n_tokens: int = 0
    n_nonempty: int = 0
    labels: Counter = field(default_factory=Counter)
    n_unannotated: int = 0
    n_unlabelled_tokens: int = 0
    n_overlapping: int = 0
    n_misaligned: int = 0
    span_lengths: Counter = field(default_factory=Counter)
    with_input: Counter = field(default_factory=Counter)
    gold_input: Counter = field(default_factory=Counter)
    #: of ``labels``, those at tokens whose label decoding fixes (``Target.forced_labels``)
    forced: Counter = field(default_factory=Counter)


# -- reading the data ----------------------------------------------------------


def corpus_stats(target: Target, examples: Iterable[Example],
                 input_attrs: Sequence[str]) -> CorpusStats:
    """One pass over ``examples``: sizes, labels, unannotated docs, span checks, inputs.

    Parameters
    ----------
    target : Target
        A fresh target of the component's settings (``make_target``): its
        reading of the reference docs is the one ``initialize`` makes.
    examples : iterable of Example
        The corpus, as the config's reader (and augmenter) gives it.
    input_attrs : sequence of str
        Token annotations the component reads (``Doc.has_annotation`` names).
    """
    stats = CorpusStats()
    with warnings.catch_warnings():
        # W002 (overlapping spans) is counted and reported here instead
        warnings.simplefilter("ignore")
        for eg in examples:
            _add_example(stats, target, eg, input_attrs)
    return stats


def _add_example(stats: CorpusStats, target: Target, eg: Example,
                 input_attrs: Sequence[str]) -> None:
    reference = eg.reference
    stats.n_docs += 1
    stats.n_tokens += len(reference)
    if not len(reference):
        return  # nothing to label: neither annotated nor unannotated
    stats.n_nonempty += 1
    if target.is_span_target:
        _add_spans(stats, target, eg)
    else:
        _add_token_labels(stats, target, reference)
    for attr in input_attrs:
        stats.with_input[attr] += _has_input(eg.predicted, attr)
        stats.gold_input[attr] += _has_input(reference, attr)


def _has_input(doc, attr: str) -> bool:
    # a parse is read through the heads, as the tree structures read it
    if attr == "DEP":
        from ..features.doc_arrays import has_parse

        return has_parse(doc)
    return doc.has_annotation(attr)


def _add_token_labels(stats: CorpusStats, target: Target, doc) -> None:
    """Token label counts through the target's ``reference_keys`` / ``string_of``,
    the reading ``label_strings`` (and so ``initialize``) makes."""
    import numpy as np

    keys = target.reference_keys(doc)
    labelled = keys != target.missing_key
    if not labelled.any():
        stats.n_unannotated += 1
        return
    stats.n_unlabelled_tokens += int((~labelled).sum())
    uniq, counts = np.unique(keys[labelled], return_counts=True)
    for key, count in zip(uniq, counts):
        stats.labels[target.string_of(doc, int(key))] += int(count)
    forced = target.forced_labels([doc])
    if forced is not None:
        for key in keys[labelled & (forced >= 0)].tolist():
            stats.forced[target.string_of(doc, int(key))] += 1


def _add_spans(stats: CorpusStats, target: Target, eg: Example) -> None:
    """Span counts by type through the target's ``spans_of`` (overlaps already
    resolved as in training), with the overlaps and misaligned ends it hides."""
    doc = eg.reference
    spans = target.spans_of(doc)
    if spans is None:
        stats.n_unannotated += 1
        return
    if target.spans_key is not None:
        raw = list(doc.spans[target.spans_key])
        stats.n_overlapping += len(raw) - len(filter_spans(raw))
    for span in spans:
        stats.labels[span.label_] += 1
        stats.span_lengths[len(span)] += 1
    if spans and not same_tokens(eg.predicted, doc):
        # a span end inside a token of the pipeline's tokenisation does not
        # project onto it (Example.get_aligned_spans_y2x drops it)
        aligned = eg.get_aligned_spans_y2x(spans, allow_overlap=True)
        stats.n_misaligned += len(spans) - len(aligned)


# -- loading -----------------------------------------------------------------


def load_training(config_path: Path, overrides: Dict[str, Any]
                  ) -> Tuple[Language, Any, Any, List[str]]:
    """The pipeline, train and dev corpus readers and ``annotating_components``
    of a training config, loaded as ``spacy debug data`` loads them.

    Raises
    ------
    UsageError
        The config cannot be read or the corpora cannot be found.
    PipelineError
        A component cannot be built from its settings.
    """
    from spacy import util
    from thinc.api import ConfigValidationError

    try:
        cfg = util.load_config(config_path, overrides=overrides, interpolate=False)
    except ConfigValidationError as err:
        raise UsageError(f"cannot load config {config_path}:\n{err}") from None
    except Exception as err:  # confection's syntax errors carry the fix in their text
        raise UsageError(f"cannot read config {config_path}: {err}") from None
    try:
        nlp = load_pipeline(cfg)
    except ConfigValidationError as err:
        raise UsageError(f"invalid config {config_path}:\n{err}") from None
    except ValueError as err:  # a component's settings (spacy-crf's E0xx, spaCy's E0xx)
        raise PipelineError(str(err)) from None
    try:
        training, train, dev = training_corpora(nlp)
    except (ConfigValidationError, ValueError) as err:  # ValueError: spaCy's E913, a null path
        raise UsageError(f"cannot read the corpora of {config_path} (set them with "
                         f"--paths.train and --paths.dev):\n{err}") from None
    try:
        check_corpora(train=train, dev=dev)
    except ValueError as err:  # E037, which names the --paths option
        raise UsageError(str(err)) from None
    return nlp, train, dev, list(training["annotating_components"] or [])


def crf_components(nlp: Language, name: Optional[str]) -> List[Tuple[str, Any]]:
    """The pipeline's crf_tagger components, or the one named ``name`` (none
    if it is not a crf_tagger of the pipeline)."""
    from ..pipeline.crf_tagger import CRFTagger

    found = [(n, pipe) for n, pipe in nlp.components if isinstance(pipe, CRFTagger)]
    return [(n, pipe) for n, pipe in found if name is None or n == name]


# -- the report ----------------------------------------------------------------


def report_component(checks: Checks, nlp: Language, name: str, pipe, train: List[Example],
                     dev: List[Example], annotating: Sequence[str],
                     min_count: int = MIN_COUNT) -> None:
    """Print the report of one crf_tagger on the train and dev examples."""
    cfg = pipe.cfg
    # a fresh target: the component's own keeps state (its W002 said once)
    target = make_target(cfg["target"], cfg["scheme"])
    inputs = pipe.input_attrs()
    attrs = [attr for attr, _ in inputs]
    train_stats = corpus_stats(target, train, attrs)
    dev_stats = corpus_stats(target, dev, attrs)
    checks.printer.divider(f"crf_tagger '{name}'")
    _report_settings(checks, pipe, target)
    _report_sizes(checks, train_stats, dev_stats)
    _report_labels(checks, target, train_stats, dev_stats, min_count)
    if target.is_span_target:
        _report_spans(checks, target, pipe, train_stats)
    _report_inputs(checks, nlp, name, inputs, train_stats, annotating)


def _report_settings(checks: Checks, pipe, target: Target) -> None:
    cfg = pipe.cfg
    text = (f"target '{cfg['target']}', structure {pipe.structure_spec.describe()}, "
            f"sequence '{cfg['sequence']}'")
    if target.is_span_target:
        text += f", scheme {cfg['scheme']}"
    checks.info(text)


def _report_sizes(checks: Checks, train: CorpusStats, dev: CorpusStats) -> None:
    checks.info(f"train: {train.n_docs} docs, {train.n_tokens} tokens; "
                f"dev: {dev.n_docs} docs, {dev.n_tokens} tokens")
    if not train.n_docs:
        checks.fail("The train corpus has no docs", "initialize would stop with E020.")
    if not dev.n_docs:
        checks.warn("The dev corpus has no docs", "Training cannot score the component.")


def _report_labels(checks: Checks, target: Target, train: CorpusStats, dev: CorpusStats,
                   min_count: int) -> None:
    what = "spans" if target.is_span_target else "tokens"
    kind = "span type" if target.is_span_target else "label"
    if not train.labels:
        checks.fail(f"No label of target '{target.name}' in the train corpus",
                    "initialize would stop with E008: check that the corpus carries the "
                    "annotation (for '_.NAME' targets, that the .spacy files were saved "
                    "with store_user_data=True).")
    else:
        checks.info(f"{len(train.labels)} {kind}s in train ({what} per {kind}):")
        labels = sorted(set(train.labels) | set(dev.labels),
                        key=lambda label: (-train.labels[label], -dev.labels[label], label))
        rows = [(label, train.labels[label], dev.labels[label]) for label in labels]
        # (widths to the longest: morph labels run to 80 characters)
        checks.printer.table(rows, header=(kind, "train", "dev"), divider=True, widths="auto")
    if dev.n_docs and not dev.labels:
        checks.warn(f"No label of target '{target.name}' in the dev corpus",
                    "Training scores the component None (0.00 in the spacy train table, "
                    "W053): give the dev corpus the annotation.")
    learned = set(train.labels)
    if not target.is_span_target and train.labels:
        # what initialize keeps of them (the lemma target leaves out trees seen
        # fewer than MIN_TREE_FREQ times, as spaCy's min_tree_freq)
        learned = target.kept_labels(train.labels)
        if len(learned) < len(train.labels):
            checks.info(f"{len(learned)} of the {len(train.labels)} {kind}s in train are "
                        f"labels after initialize: it leaves out the rarest "
                        f"({len(train.labels) - len(learned)}), never predicted")
    dev_only = sorted(set(dev.labels) - learned)
    if dev_only:
        where = ("in train" if len(learned) == len(train.labels)
                 else "among the labels initialize keeps from train")
        checks.warn(f"{len(dev_only)} {kind}(s) in dev but not {where} (never predicted): "
                    f"{', '.join(dev_only)}")
    elif dev.labels:
        checks.good(f"Every {kind} of dev is in train")
    low = sorted(label for label, n in train.labels.items() if n < min_count)
    if low:
        shown = ", ".join(f"'{label}' ({train.labels[label]})" for label in low)
        checks.warn(f"{len(low)} {kind}(s) with fewer than {min_count} {what} in train: {shown}")
    elif train.labels:
        checks.good(f"Every {kind} has at least {min_count} {what} in train")
    idle = sorted(label for label, n in train.labels.items() if n and train.forced[label] == n)
    if idle:
        checks.warn(f"{len(idle)} {kind}(s) occur in train only where decoding fixes the "
                    f"label, so the model has nothing of them to learn: {', '.join(idle)}",
                    "For sent_starts, whose S on each doc's first token is fixed: the docs "
                    "are one sentence each; join sentences into docs (python -m spacy "
                    "crf-convert conllu -n 10, or spacy convert -n 10).")
    if train.n_unannotated:
        checks.warn(f"{train.n_unannotated} of {train.n_nonempty} train docs have no "
                    f"'{target.name}' annotation: they train as unannotated (no gold label)")
    elif train.n_nonempty:
        checks.good(f"Every train doc has '{target.name}' annotation")
    if train.n_unlabelled_tokens:
        checks.info(f"{train.n_unlabelled_tokens} tokens of annotated train docs have no "
                    f"label (they train as unannotated)")


def _report_spans(checks: Checks, target: Target, pipe, train: CorpusStats) -> None:
    if target.spans_key is not None:
        if train.n_overlapping:
            checks.warn(f"{train.n_overlapping} train spans of doc.spans['{target.spans_key}'] "
                        f"overlap a longer one: the CRF keeps the longest of each group "
                        f"and drops them")
        else:
            checks.good(f"No overlapping spans in doc.spans['{target.spans_key}']")
    if train.n_misaligned:
        checks.warn(f"{train.n_misaligned} train spans do not start or end on a token "
                    f"boundary of the pipeline's tokenizer: they cannot be learned")
    elif train.labels:
        checks.good("Every train span falls on token boundaries")
    if not train.span_lengths:
        return
    longest = max(train.span_lengths)
    checks.info(f"Longest train span: {longest} tokens")
    # what the structure says of them (the semi-Markov CRF: its segments' length)
    for kind, text, fix in pipe.crf_structure.span_length_report(pipe.cfg, train.span_lengths):
        if kind == "warn":
            checks.warn(text, fix)
        else:
            checks.good(text)


def _report_inputs(checks: Checks, nlp: Language, name: str, inputs: Sequence[Tuple[str, str]],
                   train: CorpusStats, annotating: Sequence[str]) -> None:
    """Whether the annotations the component reads reach it in training."""
    setters = _annotating_setters(nlp, name, annotating)
    for attr, why in inputs:
        n_with, n_docs = train.with_input[attr], train.n_nonempty
        if n_docs and n_with == n_docs:
            checks.good(f"{attr} (read by its {why}) is on every train doc")
        elif setters.get(attr):
            checks.good(f"{attr} (read by its {why}) is set in training by "
                        f"'{setters[attr]}' (annotating_components)")
        elif n_docs:
            _report_missing_input(checks, attr, why, n_docs - n_with, n_docs,
                                  train.gold_input[attr])


def _annotating_setters(nlp: Language, name: str, annotating: Sequence[str]) -> Dict[str, str]:
    """attribute -> the component before ``name`` that sets it in training (one
    of ``annotating_components``: the others do not run on training docs)."""
    setters: Dict[str, str] = {}
    for other in nlp.component_names:
        if other == name:
            break
        if other in annotating:
            assigns = nlp.get_pipe_meta(other).assigns
            for attr, meta in INPUT_ANNOTATIONS.items():
                if meta in assigns:
                    setters.setdefault(attr, other)
    return setters


def _report_missing_input(checks: Checks, attr: str, why: str, n_missing: int, n_docs: int,
                          n_gold: int) -> None:
    copy = '["HEAD", "DEP"]' if attr == "DEP" else f'["{attr}"]'
    fix = (f"The reference docs have it ({n_gold} of {n_docs}): copy it onto the inputs with "
           f"the augmenter spacy-crf.copy_attrs.v1 (attrs {copy}) in [corpora]."
           if n_gold else
           f"Put a component that sets {attr} before it and list it in [training] "
           f"annotating_components, or use a corpus that has {attr}.")
    text = f"{n_missing} of {n_docs} train docs lack {attr} (read by its {why})"
    if attr == "DEP":
        # the tree structures and tree features stop at a doc without a parse
        checks.fail(text + ": training would stop with E015", fix)
    elif n_missing == n_docs:
        checks.warn(text + " (W005: it trains without that input)", fix)
    else:
        checks.warn(text, fix)


# -- command line ----------------------------------------------------------------


def debug_data(config_path: Path, overrides: Dict[str, Any], component: Optional[str] = None,
               min_count: int = MIN_COUNT, printer: Optional[Printer] = None) -> Checks:
    """Load the config's pipeline and corpora and report on its crf_tagger components.

    Parameters
    ----------
    config_path : Path
        A training config.
    overrides : dict
        Config overrides (``{"paths.train": ...}``), as ``parse_config_overrides`` gives.
    component : str, optional
        The crf_tagger to report on (default: all of them).
    min_count : int
        Labels with fewer training examples get a warning.
    printer : wasabi.Printer, optional
        Where the report goes (default: a new one, printing to stdout).

    Returns
    -------
    Checks
        The counts of checks passed, warnings and errors.

    Raises
    ------
    UsageError
        The config or a corpus cannot be read.
    ValueError
        E203 for a ``component`` that is not a crf_tagger of the pipeline.
    """
    checks = Checks(printer or Printer())
    try:
        nlp, train_corpus, dev_corpus, annotating = load_training(config_path, overrides)
    except PipelineError as err:
        checks.fail("The pipeline cannot be built from the config", str(err))
        return checks
    components = crf_components(nlp, component)
    if not components and component is not None:
        # a bad argument, not a finding about the data: exit 2, as crf-plots gives for
        # its --component (the config may well have crf_taggers to report on)
        crf_pipes = [name for name, _ in crf_components(nlp, None)]
        raise ValueError(Errors.E203.format(name=component,
                                            pipes=", ".join(nlp.component_names) or "none",
                                            crf_pipes=", ".join(crf_pipes) or "none"))
    if not components:
        checks.fail("The pipeline has no crf_tagger",
                    f"Its components: {', '.join(nlp.component_names) or 'none'}.")
        return checks
    # read once for every component: the readers (and augmenters) run as in training
    train = list(train_corpus(nlp))
    dev = list(dev_corpus(nlp))
    for name, pipe in components:
        report_component(checks, nlp, name, pipe, train, dev, annotating, min_count)
    return checks


@command("crf-debug-data", overrides=True)
def debug_data_cli(
    # fmt: off
    ctx: typer.Context,  # this is only used to read additional arguments
    config_path: Path = Arg(..., help="Path to config file", exists=True, allow_dash=True),
    code_path: Optional[Path] = Opt(None, "--code-path", "--code", "-c", help=CODE_HELP),
    component: Optional[str] = Opt(None, "--component", help="Name of the crf_tagger to report on (default: every crf_tagger)"),
    min_count: int = Opt(MIN_COUNT, "--min-count", help="Warn about labels with fewer training examples", min=1),
    # fmt: on
):
    """
    Analyze the training data of a crf_tagger. What spacy debug data says
    for spaCy's own pipes, for each crf_tagger of a training config: its
    target, structure and scheme, the corpus sizes, the labels of train and
    dev with their counts, labels only dev has or with few examples, docs
    without the annotation, overlapping or misaligned spans, and whether the
    inputs the component reads (a parse, TAG, POS) are given. Config
    overrides such as --paths.train are read as spacy train reads them.
    Exit code 1 if a check failed, 2 for bad arguments (a --component that
    is no crf_tagger of the pipeline), 0 otherwise.
    """
    overrides = config_overrides(ctx)
    import_code(code_path)
    # a corpus that cannot be read (spaCy's E1014 for a file that is not a DocBin), a
    # --component that is no crf_tagger of the pipeline (E203): a ✘ line and exit 2, as
    # crf-fit and crf-plots give
    with our_errors():
        try:
            checks = debug_data(config_path, overrides, component, min_count)
        except UsageError as err:
            raise typer.BadParameter(str(err), ctx, param_hint="'CONFIG_PATH'") from None
    checks.printer.divider("Summary")
    checks.printer.text(checks.summary())
    if checks.n_fail:
        sys.exit(1)


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m spacy_crf.debug_data``: :func:`debug_data_cli`; its exit code."""
    return run(debug_data_cli, argv, PROG)

