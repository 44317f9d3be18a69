"""``python -m spacy_crf.evaluate``: kept so that this spelling and imports from
before the commands moved to :mod:`spacy_crf.commands` keep working. The command
is :mod:`spacy_crf.commands.evaluate`, evaluation itself :mod:`spacy_crf.evaluation`."""

import sys

from .commands.evaluate import evaluate_cli, main
from .evaluation import (COPY_AUGMENTER, evaluate, read_examples, score, training_copy,
                         warn_missing_inputs)

__all__ = ["evaluate", "read_examples", "score", "training_copy", "warn_missing_inputs",
           "COPY_AUGMENTER", "evaluate_cli", "main"]

if __name__ == "__main__":
    sys.exit(main())
