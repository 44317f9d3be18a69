"""Evaluate a pipeline on a ``.spacy`` corpus, with gold inputs copied as in training.

``spacy evaluate`` reads a corpus without augmenters, so a CRF whose inputs
come from the corpus (CoNLL-2000's POS column, gold trees) would see docs
without them. This reads the corpus through ``spacy-crf.copy_attrs.v1`` with
the attributes the model's own training config copied (its ``[corpora]``
augmenter, saved with the pipeline), or those given: :func:`evaluate`, and
:func:`read_examples` and :func:`score`, the two steps ``python -m
spacy_crf.evaluate MODEL DATA.spacy`` (``spacy crf-evaluate``,
:mod:`spacy_crf.commands.evaluate`) runs.

A crf_tagger that reads an attribute none of the evaluation docs carries (and
no component before it sets) gets a warning naming it.
"""

import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import spacy
from spacy.language import Language
from spacy.training import Corpus, Example

from .augmenters import create_copy_attrs
from .errors import Errors, Warnings, warn

COPY_AUGMENTER = "spacy-crf.copy_attrs.v1"
#: what W004 says a component does without an input it reads: predicts without it, or
#: (a parse, for a tree structure or tree features) nothing at all
RUNS = "it predicts without that input, and its scores will be those of a model without it"
STOPS = "it cannot predict without a parse (E015)"
#: docs run through the pipeline before the timed evaluation, untimed (the
#: kernels a process loads on its first prediction would count in the speed)
WARM_UP_DOCS = 8


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


def attrs_to_copy(nlp: Language, copy: Optional[Sequence[str]] = None) -> List[str]:
    """The attributes copied onto the inputs: ``copy``, or where it is None those the
    pipeline's training config copied (:func:`training_copy`), the default of
    :func:`evaluate`, ``crf-evaluate`` and ``crf-plots`` alike."""
    return list(copy) if copy is not None else training_copy(nlp) or []


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
    copy = attrs_to_copy(nlp, copy)
    examples = read_examples(nlp, data, copy, gold_preproc=gold_preproc)
    return score(nlp, examples, copy, batch_size, per_component=per_component)


def read_examples(nlp: Language, data: Path, copy: Sequence[str],
                  gold_preproc: bool = False) -> List[Example]:
    """The examples of ``data``, the attributes ``copy`` copied onto their inputs;
    E249 for a corpus with none (there would be no score to give)."""
    augmenter = create_copy_attrs(list(copy)) if copy else None
    examples = list(Corpus(data, augmenter=augmenter, gold_preproc=gold_preproc)(nlp))
    if not examples:
        raise ValueError(Errors.E249.format(path=data))
    return examples


def score(nlp: Language, examples: List[Example], copy: Sequence[str] = (),
          batch_size: int = 1000, per_component: bool = False) -> Dict[str, Any]:
    """``nlp.evaluate`` of ``examples``, W004 first for every input none of them carries
    (``copy``: the attributes copied onto them)."""
    warn_missing_inputs(nlp, examples, copy)
    with warnings.catch_warnings():
        # the components' own W005 says less than the W004 above
        warnings.filterwarnings("ignore", message=r"\[CRF-W005\]")
        # the first docs a process predicts load its kernels (0.3-0.5 s), which
        # nlp.evaluate's one timed pass would count: its speed read 25-35x low
        for _ in nlp.pipe(eg.predicted.copy() for eg in examples[:WARM_UP_DOCS]):
            pass
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
                    # no scores to promise where the component cannot run at all
                    consequence = STOPS if attr == "DEP" and reads_tree(pipe) else RUNS
                    warn(Warnings.W004.format(name=name, attr=attr, why=why,
                                              n=len(docs), copy=copy,
                                              consequence=consequence))
                    warned.append((name, attr))
        assigned.update(nlp.get_pipe_meta(name).assigns)
    return warned


def reads_tree(pipe: Any) -> bool:
    """Whether a crf_tagger stops (E015) at a doc without a parse: its structure or
    its tree feature templates read the tree (a template reading a token's DEP
    alone reads a value, 0 without a parse, and runs)."""
    from .features.templates import templates_of

    return bool(pipe.crf_structure.needs_parse
                or any(getattr(t, "uses_tree", False) for t in templates_of(pipe.model)))
