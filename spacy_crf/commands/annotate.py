"""``python -m spacy_crf.annotate`` / ``spacy crf-annotate``: document shards annotated on Dask.

``python -m spacy_crf.annotate MODEL INPUT OUTPUT [--n-workers N] [--address ADDR]
[--batch-size B] [--component NAME] [--overwrite]``

The command line of :func:`spacy_crf.annotation.annotate`, which says what is
read, written and resumed. Exit status: 0 all good, 1 bad rows or failed
shards, 2 a usage, input, output or model error (nothing annotated), 130
interrupted.
"""

import sys
from pathlib import Path
from typing import List, Optional

from ..annotation import annotate
from ._util import Arg, Opt, command, our_errors, run


@command("crf-annotate")
def annotate_cli(
    # fmt: off
    # the paths are checked by annotate(), whose errors (E097-E101) say what each must be
    model: Path = Arg(..., help="Pipeline directory with a crf_tagger"),
    input_dir: Path = Arg(..., help="Directory of .jsonl / .parquet shards, one row per document with id and text"),
    output_dir: Path = Arg(..., help="Directory for the annotated shards (created if missing)"),
    n_workers: int = Opt(2, "--n-workers", help="Worker processes of the local Dask cluster", min=1),
    address: Optional[str] = Opt(None, "--address", help="A running Dask scheduler to use instead (tcp://HOST:8786)"),
    batch_size: int = Opt(256, "--batch-size", "-b", help="Documents per nlp.pipe batch", min=1),
    component: Optional[str] = Opt(None, "--component", help="The crf_tagger whose labels are written (default: the last)"),
    overwrite: bool = Opt(False, "--overwrite",
                          help="Annotate every shard again, over any file of its name in OUTPUT"),
    # fmt: on
):
    """
    Annotate document shards on a Dask cluster. A directory of JSONL or
    Parquet shards is annotated with a trained pipeline: one output shard per input shard, with each
    document's tokens, labels and confidences (and spans for span targets).
    Every document is written exactly once: a killed run started again
    resumes, and a run over finished output changes nothing; a file in
    OUTPUT_DIR that annotate did not write is never taken for a finished
    shard. Bad rows are listed in OUTPUT_DIR/_errors.jsonl. Exit status: 0
    all good, 1 bad rows or failed shards, 2 a usage, input, output or model
    error (nothing annotated), 130 interrupted.
    """
    with our_errors():
        try:
            report = annotate(model, input_dir, output_dir, n_workers=n_workers,
                              address=address, batch_size=batch_size, component=component,
                              overwrite=overwrite)
        except KeyboardInterrupt:  # annotate() has said how many shards are done
            sys.exit(130)
    if not report.ok:
        sys.exit(1)


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m spacy_crf.annotate``: :func:`annotate_cli`; its exit code."""
    return run(annotate_cli, argv, "python -m spacy_crf.annotate")

