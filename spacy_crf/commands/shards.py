"""``spacy crf-shards`` / ``python -m spacy_crf.shard_io``: a ``.spacy`` corpus as annotate's shards.

The command line of :func:`spacy_crf.shard_io.write_shards`.
"""

from pathlib import Path
from typing import List, Literal, Optional

from ..shard_io import write_shards
from ._util import Arg, Opt, command, msg, our_errors, run


@command("crf-shards")
def shards_cli(
    # fmt: off
    corpus: Path = Arg(..., help="Corpus in spaCy's binary .spacy format", exists=True, dir_okay=False),
    output_dir: Path = Arg(..., help="Directory for the shards (created if missing)", file_okay=False),
    n_shards: int = Opt(4, "--n-shards", "-n", help="Number of shards", min=1),
    file_format: Literal["jsonl", "parquet"] = Opt("jsonl", "--format", "-f", help="Shard format (parquet needs pyarrow)"),
    # fmt: on
):
    """
    Split a .spacy corpus into annotate's shards. The texts of the corpus,
    one row per document with "id" (STEM-INDEX) and "text". Run again into the
    same directory, it removes the shards of the earlier run that it does not
    write again, so that every document is in exactly one shard, and refuses a
    directory holding shards it would not write.
    """
    with our_errors(exits=1):
        n_docs, stale = write_shards(corpus, output_dir, n_shards, file_format)
    if stale:
        msg.info(f"Removed {len(stale)} shard(s) of an earlier run not written again: "
                 f"{', '.join(p.name for p in stale)}")
    msg.good(f"{n_docs} documents in {n_shards} shard(s) in {output_dir}")


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m spacy_crf.shard_io``: :func:`shards_cli`; its exit code."""
    return run(shards_cli, argv, "python -m spacy_crf.shard_io")

