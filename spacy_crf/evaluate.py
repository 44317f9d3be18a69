"""Evaluate a pipeline on a ``.spacy`` corpus, with gold inputs copied as in training.

``spacy evaluate`` reads a corpus without augmenters, so a CRF whose inputs
come from the corpus (CoNLL-2000's POS column, gold trees) would see docs
without them. This reads the corpus through ``spacy-crf.copy_attrs.v1``:

    python -m spacy_crf.evaluate MODEL DATA.spacy --copy TAG --output scores.json
    python -m spacy_crf.evaluate MODEL DATA.spacy --copy HEAD DEP POS
"""

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import spacy
import srsly
from spacy.training import Corpus

from .augmenters import create_copy_attrs


def evaluate(model: str, data: Path, copy: List[str], batch_size: int = 1000) -> Dict[str, Any]:
    """Scores of ``nlp.evaluate`` on ``data``, the attributes ``copy`` copied onto the inputs."""
    nlp = spacy.load(model)
    augmenter = create_copy_attrs(copy) if copy else None
    examples = list(Corpus(data, augmenter=augmenter)(nlp))
    return nlp.evaluate(examples, batch_size=batch_size)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spacy_crf.evaluate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="pipeline directory or package name")
    parser.add_argument("data", type=Path, help=".spacy file")
    parser.add_argument("--copy", nargs="*", default=[], help="attributes copied from the corpus")
    parser.add_argument("--output", type=Path, default=None, help="write the scores as JSON")
    args = parser.parse_args(argv)
    if not args.data.exists():
        parser.error(f"data file not found: {args.data}")
    scores = evaluate(args.model, args.data, args.copy)
    for key, value in scores.items():
        if isinstance(value, float):
            print(f"{key:<16} {value:.4f}" if key != "speed" else f"{key:<16} {value:.0f}")
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        srsly.write_json(args.output, scores)
        print(f"Saved scores to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
