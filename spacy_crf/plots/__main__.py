"""``python -m spacy_crf.plots``: kept so that this spelling keeps working since the
command moved to :mod:`spacy_crf.commands.plots`, which it runs."""

import sys

from ..commands.plots import main

sys.exit(main())
