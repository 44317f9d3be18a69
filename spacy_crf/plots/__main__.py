"""``python -m spacy_crf.plots``: see :mod:`spacy_crf.plots`."""

import sys

from . import main

sys.exit(main())
