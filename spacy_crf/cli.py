"""Kept so that environments installed before the commands moved to
:mod:`spacy_crf.commands` keep their ``spacy crf-*`` commands: the
``spacy_cli`` entry point of such an install (an editable one is not
rewritten by ``git pull``) still names this module, and importing it
registers the commands as importing :mod:`spacy_crf.commands` does."""

from .commands import COMMANDS  # noqa: F401  (registers every command on spaCy's app)
