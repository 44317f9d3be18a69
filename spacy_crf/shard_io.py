"""Reading and writing the document shards of ``spacy_crf.annotate`` (:mod:`spacy_crf.annotation`).

A shard is one file of documents, JSON lines (``.jsonl``) or Parquet
(``.parquet``; the suffix in any case), one row per document. Rows are read
with their 1-based line (JSONL) or row (Parquet) number, so that a bad row can
be reported where it is. Output shards are written whole to a hidden
temporary file beside their final name and renamed into place: a reader (or a
restarted run) sees either the finished shard or nothing, never part of one.

Parquet needs pyarrow (``pip install -e ".[distributed]"`` in a checkout); JSON lines
need nothing beyond srsly.
"""

import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import srsly

from .errors import Errors

FORMATS = {".jsonl": "jsonl", ".parquet": "parquet"}
#: temporary files start with this (and are never taken for shards)
TEMP_PREFIX = ".tmp-"

Row = Dict[str, Any]
#: how many names a message lists before "and N more"
_NAMES_SHOWN = 5


def shard_format(path: Path) -> Optional[str]:
    """``"jsonl"`` or ``"parquet"`` by the suffix of ``path``, in any case (``.JSONL``
    is what some exporters write), or None for a file that is no shard."""
    return FORMATS.get(Path(path).suffix.lower())


def _is_shard(path: Path) -> bool:
    # hidden files are never shards: temporary files, .DS_Store and the like
    return path.is_file() and shard_format(path) is not None and not path.name.startswith(".")


def list_shards(directory: Path) -> List[Path]:
    """The shard files directly in ``directory`` (JSONL and Parquet), sorted by name.

    Raises
    ------
    ValueError
        E097 when ``directory`` is not a directory or holds no shard.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(Errors.E097.format(path=directory, why="it is not a directory"))
    shards = sorted(p for p in directory.iterdir() if _is_shard(p))
    if not shards:
        unread = unread_entries(directory)
        why = "it has no .jsonl or .parquet file" + (
            f" directly in it (it holds {name_list(unread)}, which are not read: "
            "compressed shards, subfolders and other files)" if unread else "")
        raise ValueError(Errors.E097.format(path=directory, why=why))
    return shards


def unread_entries(directory: Path) -> List[str]:
    """The names of what :func:`list_shards` leaves out of ``directory``, sorted:
    subfolders (with a trailing ``/``) and files that are no shard, such as
    compressed ones (``a.jsonl.gz``). Hidden names (``.tmp-...``) are not listed."""
    return sorted(p.name + ("/" if p.is_dir() else "") for p in Path(directory).iterdir()
                  if not p.name.startswith(".") and not _is_shard(p))


def name_list(names: Sequence[str]) -> str:
    """``a, b, c`` for a message: the first few names, then how many more."""
    more = len(names) - _NAMES_SHOWN
    return ", ".join(names[:_NAMES_SHOWN]) + (f" and {more} more" if more > 0 else "")


def read_rows(path: Path) -> Iterator[Tuple[int, Optional[Row], Optional[str]]]:
    """``(line, row, problem)`` for every row of a shard: ``row`` is None and
    ``problem`` says why where a JSONL line is not a JSON object."""
    if shard_format(path) == "parquet":
        import pyarrow.parquet as pq

        for i, row in enumerate(pq.read_table(path).to_pylist(), start=1):
            yield i, row, None
        return
    # bytes that are not UTF-8 become lone surrogates (U+DC80..U+DCFF), so that one
    # bad line is one bad row rather than a UnicodeDecodeError for the whole shard
    with path.open("r", encoding="utf8", errors="surrogateescape") as lines:
        for i, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            bad_byte = not_unicode(line)
            if bad_byte is not None:
                yield i, None, f"not valid UTF-8 ({bad_byte}): save the shard as UTF-8"
                continue
            try:
                row = srsly.json_loads(line)
            except ValueError:
                try:  # the standard parser's message names the place; ujson's
                    row = json.loads(line)  # may not ("when decoding 'null'")
                except ValueError as err:
                    yield i, None, f"not valid JSON ({err})"
                    continue
            if not isinstance(row, dict):
                yield i, None, f"a JSON {type(row).__name__}, not an object"
                continue
            yield i, row, None


def not_unicode(text: str) -> Optional[str]:
    """Where ``text`` cannot be written as UTF-8 (a lone surrogate: an undecodable
    byte read with ``surrogateescape``, or a JSON escape such as ``\\ud800``), else None."""
    try:
        text.encode("utf8")
    except UnicodeEncodeError as err:
        char = ord(text[err.start])
        what = (f"byte 0x{char - 0xDC00:02x}" if 0xDC80 <= char <= 0xDCFF
                else f"lone surrogate U+{char:04X}")
        return f"{what} at character {err.start + 1}"
    return None


def write_rows(path: Path, rows: Sequence[Row], schema: Optional[Any] = None,
               before_rename: Optional[Callable[[Path], None]] = None) -> None:
    """Write ``rows`` as the shard ``path`` (its suffix gives the format), atomically.

    Parameters
    ----------
    path : Path
        The final file name.
    rows : sequence of dict
        The rows.
    schema : pyarrow.Schema, optional
        Parquet only: the columns (:func:`output_schema` for annotate's output;
        by default inferred from the rows, or ``id`` and ``text`` without rows).
    before_rename : callable, optional
        Called with the finished temporary file just before it is renamed to
        ``path`` (annotate records the file it wrote there: a rename keeps the
        file's size and modification time).
    """
    temp = path.with_name(f"{TEMP_PREFIX}{uuid.uuid4().hex}-{path.name}")
    try:
        if shard_format(path) == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            if schema is None and not rows:
                schema = pa.schema([("id", pa.string()), ("text", pa.string())])
            pq.write_table(pa.Table.from_pylist(list(rows), schema=schema), temp)
        else:
            srsly.write_jsonl(temp, rows)
        if before_rename is not None:
            before_rename(temp)
        os.replace(temp, path)  # atomic within a file system
    finally:
        if temp.exists():
            temp.unlink()


def remove_stale_temp_files(directory: Path) -> int:
    """Delete the temporary files a killed run left in ``directory``; how many."""
    stale = [p for p in Path(directory).glob(f"{TEMP_PREFIX}*") if p.is_file()]
    for p in stale:
        p.unlink()
    return len(stale)


def output_schema(with_spans: bool, id_type: Optional[Any] = None,
                  token_fields: Sequence[str] = ()):
    """The Parquet schema of annotate's output rows: ``id`` (of ``id_type``, the
    input's; string by default), ``tokens`` (with the string fields
    ``token_fields`` after their label and confidence: the target's
    ``record_fields``) and, with ``with_spans``, ``spans``."""
    import pyarrow as pa

    token = pa.struct([("text", pa.string()), ("label", pa.string()),
                       ("confidence", pa.float64())]
                      + [(field, pa.string()) for field in token_fields])
    fields = [("id", id_type or pa.string()), ("tokens", pa.list_(token))]
    if with_spans:
        span = pa.struct([("start", pa.int64()), ("end", pa.int64()), ("label", pa.string()),
                          ("confidence", pa.float64())])
        fields.append(("spans", pa.list_(span)))
    return pa.schema(fields)


def parquet_id_type(path: Path):
    """The pyarrow type of a Parquet shard's ``id`` column (None if it has none)."""
    import pyarrow.parquet as pq

    schema = pq.read_schema(path)
    return schema.field("id").type if "id" in schema.names else None


def shard_name(stem: str, index: int, fmt: str) -> str:
    """The file name of shard ``index`` of the corpus ``stem`` in format ``fmt``."""
    suffix = {v: k for k, v in FORMATS.items()}[fmt]
    return f"{stem}-{index:03d}{suffix}"


def write_shards(corpus: Path, output: Path, n_shards: int = 4,
                 fmt: str = "jsonl") -> Tuple[int, List[Path]]:
    """Write the texts of a ``.spacy`` corpus as ``n_shards`` input shards of annotate.

    Rows are ``{"id": "STEM-INDEX", "text": ...}``, in corpus order, split into
    shards ``STEM-000``, ``STEM-001``... of (nearly) equal size. ``output`` may
    hold the shards of an earlier run for the same corpus (any number, either
    format): those not written again are removed, because annotate reads every
    shard of its input and would annotate their documents twice.

    Parameters
    ----------
    corpus : Path
        A ``.spacy`` file.
    output : Path
        The directory of the shards (created if missing).
    n_shards : int
        How many shards (at least 1; some are empty when the corpus has fewer docs).
    fmt : str
        ``"jsonl"`` or ``"parquet"``.

    Returns
    -------
    tuple of (int, list of Path)
        The number of documents written, and the old shards removed.

    Raises
    ------
    ValueError
        E187, before anything is written, when ``output`` holds shards with
        names this command would not write for ``corpus``: they are not ours
        to remove, and annotate would read them with ours.
    """
    import re

    import spacy
    from spacy.tokens import DocBin

    corpus, output = Path(corpus), Path(output)
    ours = re.compile(rf"{re.escape(corpus.stem)}-\d{{3,}}")
    # every file annotate would read as a shard, whatever the case of its suffix
    old = [p for p in output.iterdir() if _is_shard(p)] if output.is_dir() else []
    foreign = sorted(p.name for p in old if not ours.fullmatch(p.stem))
    if foreign:
        raise ValueError(Errors.E187.format(path=output, corpus=corpus.name,
                                            names=name_list(foreign)))
    docs = DocBin().from_disk(corpus).get_docs(spacy.blank("xx").vocab)
    rows = [{"id": f"{corpus.stem}-{i}", "text": doc.text} for i, doc in enumerate(docs)]
    output.mkdir(parents=True, exist_ok=True)
    size = -(-len(rows) // n_shards)
    written = set()
    for k in range(n_shards):
        path = output / shard_name(corpus.stem, k, fmt)
        write_rows(path, rows[k * size:(k + 1) * size])
        written.add(path.name)
    # removed after the new shards are in place, so that no moment has fewer documents
    stale = sorted(p for p in old if p.name not in written)
    for path in stale:
        path.unlink()
    return len(rows), stale


if __name__ == "__main__":
    # ``python -m spacy_crf.shard_io``, the spelling from before the crf-shards
    # command moved to spacy_crf.commands.shards, runs that command. Only this
    # script entry reaches the command layer (which imports this module): the
    # library module itself never does, so it is looked up by name here.
    import importlib

    sys.exit(importlib.import_module("spacy_crf.commands.shards").main())
