"""``python -m spacy_crf.annotate``: kept so that this spelling and imports from
before the commands moved to :mod:`spacy_crf.commands` keep working. The command
is :mod:`spacy_crf.commands.annotate`, the driver :mod:`spacy_crf.annotation`."""

import sys

from .annotation import ERRORS_FILE, AnnotateReport, annotate, annotate_shard, doc_record
from .commands.annotate import annotate_cli, main

__all__ = ["annotate", "annotate_shard", "doc_record", "AnnotateReport", "ERRORS_FILE",
           "annotate_cli", "main"]

if __name__ == "__main__":
    # the task functions live in spacy_crf.annotation, so Dask pickles them by
    # reference even when this module is __main__: a worker loads the pipeline
    # once and keeps it
    sys.exit(main())
