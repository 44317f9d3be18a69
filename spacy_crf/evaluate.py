"""Evaluate a pipeline on a ``.spacy`` corpus, with gold inputs copied as in training.

``spacy evaluate`` reads a corpus without augmenters, so a CRF whose inputs
come from the corpus (CoNLL-2000's POS column, gold trees) would see docs
without them. This reads the corpus through ``spacy-crf.copy_attrs.v1`` with
the attributes the model's own training config copied (its ``[corpora]``
augmenter, saved with the pipeline); ``--copy`` overrides them:

    python -m spacy_crf.evaluate MODEL DATA.spacy --output scores.json
    python -m spacy_crf.evaluate MODEL DATA.spacy --copy HEAD,DEP,POS

A crf_tagger that reads an attribute none of the evaluation docs carries (and
no component before it sets) gets a warning naming it.
"""

import sys
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import spacy
import srsly
from spacy.language import Language
from spacy.cli._util import setup_gpu
from spacy.training import Corpus, Example

from .augmenters import create_copy_attrs
from .commands._util import (CODE_HELP, COPY_HELP, Arg, Opt, command, import_code, msg, parse_copy,
                       run)
from .errors import Warnings

COPY_AUGMENTER = "spacy-crf.copy_attrs.v1"
def training_copy(nlp: Language) -> Optional[List[str]]:
    """The attributes the pipeline's training config copied onto its inputs.

    Reads the ``spacy-crf.copy_attrs.v1`` augmenter of ``[corpora.dev]`` (else
    ``[corpora.train]``) in ``nlp.config``; None where training copied nothing.
    """
    corpora = nlp.config.get("corpora", {})
    for name in ("dev", "train"):
        augmenter = corpora.get(name, {}).get("augmenter")
        if isinstance(augmenter, dict) and augmenter.get("@augmenters") == COPY_AUGMENTER:
            return list(augmenter.get("attrs", []))
    return None


def evaluate(model: Union[str, Language], data: Path, copy: Optional[List[str]] = None,
             batch_size: int = 1000, *, gold_preproc: bool = False,
             per_component: bool = False) -> Dict[str, Any]:
    """Scores of ``nlp.evaluate`` on ``data``, the attributes ``copy`` copied onto the inputs.

    Parameters
    ----------
    model : str or Language
        Pipeline directory or package name, or a loaded pipeline.
    data : Path
        A ``.spacy`` corpus.
    copy : list of str, optional
        Attributes copied from the corpus onto the inputs; by default those
        the model's training config copied (:func:`training_copy`).
    batch_size : int
        Documents per ``nlp.pipe`` batch.
    gold_preproc : bool
        Read the inputs with the corpus's gold tokens and sentences (spaCy's ``-G``).
    per_component : bool
        Scores keyed by component, as ``nlp.evaluate(per_component=True)`` gives them.

    Returns
    -------
    dict
        ``nlp.evaluate``'s scores.
    """
    nlp = model if isinstance(model, Language) else spacy.load(model)
    if copy is None:
        copy = training_copy(nlp) or []
    examples = read_examples(nlp, data, copy, gold_preproc=gold_preproc)
    return score(nlp, examples, copy, batch_size, per_component=per_component)


def read_examples(nlp: Language, data: Path, copy: Sequence[str],
                  gold_preproc: bool = False) -> List[Example]:
    """The examples of ``data``, the attributes ``copy`` copied onto their inputs."""
    augmenter = create_copy_attrs(list(copy)) if copy else None
    return list(Corpus(data, augmenter=augmenter, gold_preproc=gold_preproc)(nlp))


def score(nlp: Language, examples: List[Example], copy: Sequence[str] = (),
          batch_size: int = 1000, per_component: bool = False) -> Dict[str, Any]:
    """``nlp.evaluate`` of ``examples``, W004 first for every input none of them carries
    (``copy``: the attributes copied onto them)."""
    warn_missing_inputs(nlp, examples, copy)
    with warnings.catch_warnings():
        # the components' own W005 says less than the W004 above
        warnings.filterwarnings("ignore", message=r"\[CRF-W005\]")
        return nlp.evaluate(examples, batch_size=batch_size, per_component=per_component)


def warn_missing_inputs(nlp: Language, examples: Sequence[Example],
                        copied: Sequence[str] = ()) -> List[Tuple[str, str]]:
    """W004 for every (crf_tagger, attribute) whose input no evaluation doc carries.

    ``copied`` are the attributes already copied from the corpus (the fix the
    warning gives adds to them). Returns the pairs it warned about.
    """
    from .pipeline.crf_tagger import CRFTagger
    from .pipeline.inputs import INPUT_ANNOTATIONS

    docs = [eg.predicted for eg in examples]
    missing = {attr for attr in INPUT_ANNOTATIONS if not any(d.has_annotation(attr) for d in docs)}
    assigned: set = set()
    warned = []
    for name, pipe in nlp.pipeline:
        if isinstance(pipe, CRFTagger):
            for attr, why in pipe.input_attrs():
                if attr in missing and INPUT_ANNOTATIONS[attr] not in assigned:
                    needed = ["HEAD", "DEP"] if attr == "DEP" else [attr]
                    copy = ",".join(dict.fromkeys([*copied, *needed]))
                    warnings.warn(Warnings.W004.format(name=name, attr=attr, why=why,
                                                       n=len(docs), copy=copy))
                    warned.append((name, attr))
        assigned.update(nlp.get_pipe_meta(name).assigns)
    return warned


@command("crf-evaluate")
def evaluate_cli(
    # fmt: off
    model: str = Arg(..., help="Model name or path"),
    data_path: Path = Arg(..., help="Location of binary evaluation data in .spacy format", exists=True),
    output: Optional[Path] = Opt(None, "--output", "-o", help="Output JSON file for metrics", dir_okay=False),
    code_path: Optional[Path] = Opt(None, "--code", "-c", help=CODE_HELP),
    use_gpu: int = Opt(-1, "--gpu-id", "-g", help="GPU ID or -1 for CPU"),
    gold_preproc: bool = Opt(False, "--gold-preproc", "-G", help="Use gold preprocessing"),
    displacy_path: Optional[Path] = Opt(None, "--displacy-path", "-dp", help="Directory to output rendered parses as HTML", exists=True, file_okay=False),
    displacy_limit: int = Opt(25, "--displacy-limit", "-dl", help="Limit of parses to render as HTML"),
    per_component: bool = Opt(False, "--per-component", "-P", help="Return scores per component, only applicable when an output JSON file is specified."),
    copy: Optional[str] = Opt(None, "--copy", help=COPY_HELP + " (default: those the model's training config copied)"),
    # fmt: on
):
    """
    Evaluate a pipeline, inputs copied as trained. As spacy evaluate does,
    with the attributes its training config copied from the corpus onto the inputs (the
    spacy-crf.copy_attrs.v1 augmenter of its [corpora], saved with the
    pipeline) copied again, so that a CRF reading gold POS or a gold parse
    sees them. --copy overrides them. A crf_tagger that reads an attribute
    none of the evaluation docs carries gets a warning naming it.
    """
    import_code(code_path)
    setup_gpu(use_gpu)
    nlp = spacy.load(model)
    attrs = parse_copy(copy)
    if attrs is None:
        attrs = training_copy(nlp) or []
        msg.info(f"Copying {attrs or 'nothing'} from the corpus, as the model's training config "
                 f"did (--copy overrides)")
    examples = read_examples(nlp, data_path, attrs, gold_preproc=gold_preproc)
    scores = score(nlp, examples, attrs, per_component=per_component)
    rows = [(key, f"{value:.4f}" if not key.endswith("speed") else f"{value:.0f}")
            for key, value in (flat_scores(scores) if per_component else scores).items()
            if isinstance(value, float)]
    if rows:  # the key column 16 wide (or the longest key's), the values after one space
        widths = (max(16, *(len(key) for key, _ in rows)), max(len(value) for _, value in rows))
        msg.table(rows, title="Results", widths=widths, spacing=1)
    if per_component and output is None:
        msg.warn("The per-component option is enabled but there is no output JSON file "
                 "provided to save the scores to.")
    if displacy_path is not None:
        render_examples(nlp, examples[:displacy_limit], displacy_path, model)
        msg.good(f"Generated {min(displacy_limit, len(examples))} parses as HTML", displacy_path)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        srsly.write_json(output, scores)
        msg.good(f"Saved scores to {output}")


def flat_scores(scores: Dict[str, Any]) -> Dict[str, Any]:
    """Per-component scores (``{component: {key: value}}``) as ``{component.key: value}``
    (scores of the whole pipeline, such as ``speed``, as they are)."""
    flat: Dict[str, Any] = {}
    for name, value in scores.items():
        if isinstance(value, dict):
            flat.update({f"{name}.{key}": v for key, v in value.items()})
        else:
            flat[name] = value
    return flat


def render_examples(nlp: Language, examples: Sequence[Example], path: Path, model: str) -> None:
    """displaCy pages of the pipeline's predictions on ``examples`` (their inputs, with
    the copied attributes), as spacy evaluate's ``--displacy-path`` writes them:
    entities.html for entity predictions, parses.html for a parser's, spans.html for
    span predictions in ``doc.spans["sc"]``."""
    from spacy.cli.evaluate import render_parses

    from .pipeline.crf_tagger import CRFTagger

    if not examples:
        return
    factories = {nlp.get_pipe_meta(name).factory for name in nlp.pipe_names}
    targets = [pipe.target for _, pipe in nlp.pipeline if isinstance(pipe, CRFTagger)]
    docs = list(nlp.pipe(eg.predicted.copy() for eg in examples))
    # spans.html shows doc.spans["sc"], the key displaCy and spancat default to
    render_parses(docs, path, model_name=model, limit=len(docs),
                  deps="parser" in factories,
                  ents="ner" in factories or any("doc.ents" in t.assigns for t in targets),
                  spans="spancat" in factories or any(t.spans_key == "sc" for t in targets))


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m spacy_crf.evaluate``: :func:`evaluate_cli`; its exit code."""
    return run(evaluate_cli, argv, "python -m spacy_crf.evaluate")


if __name__ == "__main__":
    sys.exit(main())
