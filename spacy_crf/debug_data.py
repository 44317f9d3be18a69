"""``python -m spacy_crf.debug_data``: kept so that this spelling and imports from
before the commands moved to :mod:`spacy_crf.commands` keep working. The command
is :mod:`spacy_crf.commands.debug_data`."""

import sys

from .commands.debug_data import corpus_stats, debug_data, debug_data_cli, main

__all__ = ["corpus_stats", "debug_data", "debug_data_cli", "main"]

if __name__ == "__main__":
    sys.exit(main())
