"""Evaluate a pipeline on a ``.spacy`` corpus, with gold inputs copied as in training.

``spacy evaluate`` reads a corpus without augmenters, so a CRF whose inputs
come from the corpus (CoNLL-2000's POS column, gold trees) would see docs
without them. This reads the corpus through ``spacy-crf.copy_attrs.v1`` with
the attributes the model's own training config copied (its ``[corpora]``
augmenter, saved with the pipeline); ``--copy`` overrides them:

    python -m spacy_crf.evaluate MODEL DATA.spacy --output scores.json
    python -m spacy_crf.evaluate MODEL DATA.spacy --copy HEAD DEP POS

A crf_tagger that reads an attribute none of the evaluation docs carries (and
no component before it sets) gets a warning naming it.
"""

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import spacy
import srsly
from spacy.language import Language
from spacy.training import Corpus, Example
from wasabi import msg

from .augmenters import create_copy_attrs
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
             batch_size: int = 1000) -> Dict[str, Any]:
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

    Returns
    -------
    dict
        ``nlp.evaluate``'s scores.
    """
    nlp = model if isinstance(model, Language) else spacy.load(model)
    if copy is None:
        copy = training_copy(nlp) or []
    augmenter = create_copy_attrs(copy) if copy else None
    examples = list(Corpus(data, augmenter=augmenter)(nlp))
    warn_missing_inputs(nlp, examples, copy)
    with warnings.catch_warnings():
        # the components' own W005 says less than the W004 above
        warnings.filterwarnings("ignore", message=r"\[W005\]")
        return nlp.evaluate(examples, batch_size=batch_size)


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
                    copy = " ".join(dict.fromkeys([*copied, *needed]))
                    warnings.warn(Warnings.W004.format(name=name, attr=attr, why=why,
                                                       n=len(docs), copy=copy))
                    warned.append((name, attr))
        assigned.update(nlp.get_pipe_meta(name).assigns)
    return warned


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spacy_crf.evaluate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="pipeline directory or package name")
    parser.add_argument("data", type=Path, help=".spacy file")
    parser.add_argument("--copy", nargs="*", default=None,
                        help="attributes copied from the corpus (default: those the model's "
                             "training config copied; --copy with nothing copies none)")
    parser.add_argument("--output", type=Path, default=None, help="write the scores as JSON")
    args = parser.parse_args(argv)
    if not args.data.exists():
        parser.error(f"data file not found: {args.data}")
    nlp = spacy.load(args.model)
    copy = args.copy
    if copy is None:
        copy = training_copy(nlp) or []
        msg.info(f"Copying {copy or 'nothing'} from the corpus, as the model's training config "
                 f"did (--copy overrides)")
    scores = evaluate(nlp, args.data, copy)
    rows = [(key, f"{value:.4f}" if key != "speed" else f"{value:.0f}")
            for key, value in scores.items() if isinstance(value, float)]
    if rows:  # the key column 16 wide (or the longest key's), the values after one space
        widths = (max(16, *(len(key) for key, _ in rows)), max(len(value) for _, value in rows))
        msg.table(rows, title="Results", widths=widths, spacing=1)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        srsly.write_json(args.output, scores)
        msg.good(f"Saved scores to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
