"""``python -m spacy_crf.package``: kept so that this spelling and imports from
before the commands moved to :mod:`spacy_crf.commands` keep working. The command
is :mod:`spacy_crf.commands.package`."""

import sys

from .commands.package import main, package_cli, package_pipeline

__all__ = ["package_pipeline", "package_cli", "main"]

if __name__ == "__main__":
    sys.exit(main())
