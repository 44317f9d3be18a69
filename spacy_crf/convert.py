"""``python -m spacy_crf.convert``: kept so that this spelling and imports from
before the commands moved to :mod:`spacy_crf.commands` keep working. The command
is :mod:`spacy_crf.commands.convert`, the converters :mod:`spacy_crf.converters`."""

import sys

from .commands.convert import convert_cli, main
from .converters import (JOINS, convert_chunks, convert_conll, convert_uner, iob_tags_from_ents,
                         join_trees, read_conllu, read_conllu_upos, repair_iob)

__all__ = ["convert_chunks", "convert_conll", "convert_uner", "iob_tags_from_ents", "join_trees",
           "read_conllu", "read_conllu_upos", "repair_iob", "JOINS", "convert_cli", "main"]

if __name__ == "__main__":
    sys.exit(main())
