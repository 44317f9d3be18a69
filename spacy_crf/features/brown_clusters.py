"""Brown clusters: where the table comes from, and the path prefixes features read.

spaCy stores a word's Brown cluster as its bit path read as a binary number
from the last bit to the first (``int(path[::-1], 2)``, as spaCy v2's
``init-model`` did), in the lookups table ``lexeme_cluster`` that
``Token.cluster`` reads. The first ``k`` bits of the path, the usual
coarser-grained features (Ratinov & Roth 2009 used prefixes of 4, 6, 10 and 20
bits), are then the value's low ``k`` bits. A word without a cluster has 0. A
path that ends in zeros reads the same as the shorter path without them
(``"10"`` and ``"1"`` are both 1): spaCy's encoding loses that, and so do we,
for tables to stay interchangeable with ``Token.cluster``.

Sources, in the order the component tries them at ``initialize``:

1. a file given as the ``clusters`` setting of ``[initialize.components.NAME]``:
   Liang's ``paths`` output (``bits<TAB>word<TAB>count`` per line) or a JSON
   table ``{"word": value}`` (``.json`` or ``.json.gz``, as written by
   ``python -m spacy_crf.clusters import``);
2. the pipeline's own ``nlp.vocab.lookups`` table ``lexeme_cluster`` (e.g. from
   ``[initialize.lookups]`` with ``spacy.LookupsDataLoader.v1``);
3. the table for ``nlp.lang`` in ``spacy-lookups-data``, where it is installed
   (as spaCy's lemmatizer loads its tables); English, German and Spanish have one.
"""

import gzip
from pathlib import Path
from typing import Iterator, Optional, Tuple, Union

import numpy as np
import srsly

from ..errors import Errors
from .lookups_data import cached_word_table, once_per_language
from .word_table import WordTable, table_from_items, word_keys

TABLE_NAME = "lexeme_cluster"



def path_value(bits: str) -> int:
    """A Brown bit path as spaCy stores it: ``int(bits[::-1], 2)``."""
    if not bits or set(bits) - {"0", "1"}:
        raise ValueError(f"'{bits}' is not a Brown bit path (a string of 0 and 1)")
    return int(bits[::-1], 2)


def prefix_values(paths: np.ndarray, bits: int) -> np.ndarray:
    """The first ``bits`` bits of stored paths (all of them where ``bits`` is 0)."""
    if not bits:
        return paths
    return paths & np.uint64((1 << bits) - 1)


def read_paths(path: Union[str, Path]) -> Iterator[Tuple[str, int, int]]:
    """(word, stored value, count) of every line of a Brown ``paths`` file (the
    count 0 where the line has none, or not a whole number).

    Raises
    ------
    ValueError
        For a line that is not ``bits<TAB>word[<TAB>count]``, naming its number.
    """
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf8") as file:
        for number, line in enumerate(file, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            columns = line.split("\t")
            if len(columns) not in (2, 3):
                raise ValueError(Errors.E123.format(
                    path=path, why=f"line {number} has {len(columns)} tab-separated columns, "
                                   f"not 'bits<TAB>word<TAB>count'"))
            count = int(columns[2]) if len(columns) == 3 and columns[2].isdigit() else 0
            try:
                yield columns[1], path_value(columns[0]), count
            except ValueError as err:
                raise ValueError(Errors.E123.format(path=path, why=f"line {number}: {err}")) from err


def read_cluster_file(path: Union[str, Path]) -> WordTable:
    """A cluster table from a Brown ``paths`` file or a JSON ``{word: value}`` table."""
    path = Path(path)
    if not path.exists():
        raise ValueError(Errors.E123.format(path=path, why="there is no such file"))
    name = path.name.lower()
    if name.endswith(".json") or name.endswith(".json.gz"):
        try:
            data = srsly.read_gzip_json(path) if name.endswith(".gz") else srsly.read_json(path)
        except (OSError, ValueError) as err:
            raise ValueError(Errors.E123.format(path=path, why=f"it is not JSON ({err})")) from err
        if not isinstance(data, dict) or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in data.values()):
            raise ValueError(Errors.E123.format(
                path=path, why="a JSON table maps each word to its stored path, an int >= 0"))
        items = data.items()
    else:
        items = [(word, value) for word, value, _ in read_paths(path)]
    values = np.fromiter((v for _, v in items), dtype=np.int64, count=len(items))
    return table_from_items(word_keys(word for word, _ in items), values)


def table_from_lookups(table) -> WordTable:
    """A cluster table from a spaCy lookups ``Table`` (keys are string hashes)."""
    keys = np.fromiter(table.keys(), dtype=np.uint64, count=len(table))
    values = np.fromiter(table.values(), dtype=np.int64, count=len(table))
    return table_from_items(keys, values)


@once_per_language
def lookups_data_table(lang: str) -> Optional[WordTable]:
    """spacy-lookups-data's table for ``lang``, read once per process; None if
    the package is not installed or has no table for the language."""
    return _read_lookups_data(lang)


def _read_lookups_data(lang: str) -> Optional[WordTable]:
    return cached_word_table(lang, TABLE_NAME, f"{lang}_{TABLE_NAME}", _table_of_paths)


def _table_of_paths(data) -> Optional[WordTable]:
    """spacy-lookups-data's ``{word: Brown path}`` as a table (~3 s for English:
    1M words of gzipped JSON); None for an empty one."""
    values = np.fromiter(data.values(), dtype=np.int64, count=len(data))
    table = table_from_items(word_keys(data.keys()), values)
    return table if len(table) else None


def find_cluster_table(vocab, lang: str, path: Optional[Union[str, Path]] = None
                       ) -> Tuple[Optional[WordTable], str]:
    """The Brown cluster table a pipeline has, and where it came from.

    Parameters
    ----------
    vocab : Vocab
        The pipeline's vocab (its ``lookups`` are tried second).
    lang : str
        ``nlp.lang``, for spacy-lookups-data (tried last).
    path : str or Path, optional
        A file of one's own (tried first; an error if it cannot be read).

    Returns
    -------
    (WordTable or None, str)
        The table, or None where no source has one, and a description of the
        source for messages.
    """
    if path:
        return read_cluster_file(path), str(path)
    if vocab.lookups.has_table(TABLE_NAME) and len(vocab.lookups.get_table(TABLE_NAME)):
        return table_from_lookups(vocab.lookups.get_table(TABLE_NAME)), "nlp.vocab.lookups"
    table = lookups_data_table(lang)
    return table, f"spacy-lookups-data ({lang}_{TABLE_NAME})"


def write_json_table(table_items: Iterator[Tuple[str, int]], path: Union[str, Path]) -> int:
    """Write ``{word: value}`` as (gzipped, for ``.gz``) JSON; returns the word count."""
    data = dict(table_items)
    if str(path).endswith(".gz"):
        srsly.write_gzip_json(path, data)
    else:
        srsly.write_json(path, data)
    return len(data)


def import_paths(paths: Path, output: Path, min_count: int = 0) -> int:
    """Write the JSON table of a Brown ``paths`` file; returns the number of words."""
    return write_json_table(((word, value) for word, value, count in read_paths(paths)
                             if count >= min_count), output)
