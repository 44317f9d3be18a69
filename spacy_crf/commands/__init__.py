"""The package's command lines, one module each, and their registration as ``spacy`` subcommands.

spaCy imports this package through the ``spacy_cli`` entry point when its CLI
starts; importing the modules below registers their typer commands on spaCy's
``app``, beside ``python -m spacy``'s own::

    python -m spacy crf-fit CONFIG_PATH [--output DIR] [--code FILE] [--paths.train ...]
    python -m spacy crf-annotate MODEL INPUT_DIR OUTPUT_DIR [--n-workers N] ...
    python -m spacy crf-evaluate MODEL DATA_PATH [--output FILE] [--copy HEAD,DEP] ...
    python -m spacy crf-convert chunks|uner|conll INPUT ... OUTPUT ...
    python -m spacy crf-clusters import|induce|show ...
    python -m spacy crf-plots MODEL DATA_PATH OUTPUT_DIR [--train-log LOG] ...
    python -m spacy crf-shards CORPUS OUTPUT_DIR [--n-shards N] [--format F]
    python -m spacy crf-package MODEL_DIR OUTPUT_DIR [--name NAME] [--version V]
    python -m spacy crf-debug-data CONFIG_PATH [--component NAME] [--paths.train ...]

``python -m spacy_crf.NAME`` (:data:`PYTHON_M`) runs the same command (each
module's ``main``), so both spellings take the same options, print the same
messages and exit with the same codes.

A module here is the command-line layer only: its typer function, its
``main`` and what it prints. What a command does and other code calls (the
batch trainer, the annotation driver, the converters, evaluation) is library
code outside this package, which never imports it.
"""

import importlib
from typing import Dict

#: subcommand -> the module that defines it and its main()
COMMANDS: Dict[str, str] = {
    "crf-fit": "spacy_crf.commands.fit",
    "crf-annotate": "spacy_crf.commands.annotate",
    "crf-evaluate": "spacy_crf.commands.evaluate",
    "crf-convert": "spacy_crf.commands.convert",
    "crf-clusters": "spacy_crf.commands.clusters",
    "crf-plots": "spacy_crf.commands.plots",
    "crf-shards": "spacy_crf.commands.shards",
    "crf-debug-data": "spacy_crf.commands.debug_data",
    "crf-package": "spacy_crf.commands.package",
}

#: subcommand -> the module ``python -m`` runs it as: a top-level alias that runs
#: the command's main(), kept there since before the commands moved here
PYTHON_M: Dict[str, str] = {
    "crf-fit": "spacy_crf.fit",
    "crf-annotate": "spacy_crf.annotate",
    "crf-evaluate": "spacy_crf.evaluate",
    "crf-convert": "spacy_crf.convert",
    "crf-clusters": "spacy_crf.clusters",
    "crf-plots": "spacy_crf.plots",
    "crf-shards": "spacy_crf.shard_io",
    "crf-debug-data": "spacy_crf.debug_data",
    "crf-package": "spacy_crf.package",
}

for _module in COMMANDS.values():
    importlib.import_module(_module)
