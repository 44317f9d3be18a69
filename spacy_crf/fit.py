"""``python -m spacy_crf.fit``: kept so that this spelling and imports from before
the commands moved to :mod:`spacy_crf.commands` keep working. The command is
:mod:`spacy_crf.commands.fit`, the trainer :mod:`spacy_crf.training.fit`."""

import sys

from .commands.fit import fit_cli, main
from .training.fit import DIR_MODEL_BEST, DIR_MODEL_LAST, fit

__all__ = ["fit", "fit_cli", "main", "DIR_MODEL_BEST", "DIR_MODEL_LAST"]

if __name__ == "__main__":
    sys.exit(main())
