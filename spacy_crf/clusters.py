"""``python -m spacy_crf.clusters``: kept so that this spelling and imports from
before the commands moved to :mod:`spacy_crf.commands` keep working. The command
is :mod:`spacy_crf.commands.clusters`; the tables it reads and writes are
:mod:`spacy_crf.features.brown_clusters` and :mod:`spacy_crf.features.brown_induction`."""

import sys

from .commands.clusters import clusters_cli, main, path_bits
from .features.brown_clusters import import_paths
from .features.brown_induction import induce_file, read_texts

__all__ = ["clusters_cli", "main", "path_bits", "import_paths", "induce_file", "read_texts"]

if __name__ == "__main__":
    sys.exit(main())
