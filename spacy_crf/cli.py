"""The package's command lines as ``spacy`` subcommands.

spaCy imports this module through the ``spacy_cli`` entry point when its CLI
starts, and the commands below join ``python -m spacy``'s own::

    python -m spacy crf-fit CONFIG --output DIR ...
    python -m spacy crf-annotate MODEL INPUT OUTPUT ...
    python -m spacy crf-evaluate MODEL DATA ...
    python -m spacy crf-convert uner INPUT.iob2 OUTPUT.spacy ...
    python -m spacy crf-clusters import|induce|show ...
    python -m spacy crf-plots MODEL OUTPUT ...
    python -m spacy crf-shards CORPUS.spacy OUTPUT_DIR ...
    python -m spacy crf-package MODEL_DIR OUTPUT_DIR [--name NAME] [--version V]
    python -m spacy crf-debug-data CONFIG [--component NAME] [--paths.train ...]

Each forwards its arguments, ``--help`` included, to the ``main`` of the
module that ``python -m spacy_crf.NAME`` runs, so both spellings take the same
options, print the same messages and exit with the same codes (2 for a usage
error, as argparse and spaCy's own commands do).
"""

import importlib
import sys
from typing import Callable, Dict, Tuple

import typer
from spacy.cli._util import app

#: subcommand -> (module whose main() it runs, one line of help)
COMMANDS: Dict[str, Tuple[str, str]] = {
    "crf-fit": ("spacy_crf.fit", "Train a crf_tagger with batch L-BFGS / OWL-QN from a config."),
    "crf-annotate": ("spacy_crf.annotate", "Annotate JSONL / Parquet shards on a Dask cluster."),
    "crf-evaluate": ("spacy_crf.evaluate", "Score a pipeline on a corpus read as raw text, "
                                           "its inputs copied as its training config copied them."),
    "crf-convert": ("spacy_crf.convert", "Convert chunking, Universal NER or CoNLL corpora "
                                         "to .spacy files."),
    "crf-clusters": ("spacy_crf.clusters", "Import, induce or show Brown word clusters."),
    "crf-plots": ("spacy_crf.plots", "Plots and an HTML page of a trained crf_tagger."),
    "crf-shards": ("spacy_crf.shard_io", "Split a .spacy corpus into annotate's input shards."),
    "crf-debug-data": ("spacy_crf.debug_data", "What spacy debug data says for spaCy's own "
                                               "pipes, for each crf_tagger: labels, counts, "
                                               "unseen labels, missing inputs."),
    "crf-package": ("spacy_crf.package", "Wheels of a trained pipeline and of spacy-crf that "
                                         "install together without spacy-crf on a registry."),
}


def _forward(module: str) -> Callable[[typer.Context], None]:
    def command(ctx: typer.Context) -> None:
        main = importlib.import_module(module).main
        sys.exit(main(list(ctx.args)))

    return command


for _name, (_module, _help) in COMMANDS.items():
    app.command(_name, help=f"{_help} Options: python -m spacy {_name} --help.",
                add_help_option=False,
                context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(
        _forward(_module))
