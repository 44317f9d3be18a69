"""Brown clusters: where the table comes from, and the path prefixes features read.

spaCy stores a word's Brown cluster as its bit path read as a binary number
from the last bit to the first (``int(path[::-1], 2)``, as spaCy v2's
``init-model`` did), in the lookups table ``lexeme_cluster`` that
``Token.cluster`` reads. The first ``k`` bits of the path, the usual
coarser-grained features (Ratinov & Roth 2009 used prefixes of 4, 6, 10 and 20
bits), are then the value's low ``k`` bits. A word without a cluster has 0. A
path that ends in zeros reads the same as the shorter path without them
(``"10"`` and ``"1"`` are both 1): spaCy's encoding loses that, and so do we,
for tables to stay interchangeable with ``Token.cluster``. The one path it
would lose altogether, all zeros (every Brown tree has one: its leftmost
leaf), would read 0, as no cluster: a ``paths`` file's all-zero path is
stored with a 1 appended (``"000"`` as ``"0001"``, a path no other leaf of
the tree has), so its words keep a cluster of their own. Tables of values
(JSON, lookups) are read as they are, 0 included; prefixes ``CLUSTERk`` of
leading zeros still read 0. A stored path holds 63 bits at most.

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
from itertools import compress
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Tuple, Union

import numpy as np
import srsly

from ..errors import Errors
from .lookups_data import cached_word_table, once_per_language
from .word_table import MISSING, WordTable, table_from_items, word_keys

TABLE_NAME = "lexeme_cluster"


#: the bits a stored path holds: its value stays below 2**63 (an int64, a ``CLUSTERk`` mask)
MAX_PATH_BITS = 63


def path_value(bits: str) -> int:
    """A Brown bit path as spaCy stores it, ``int(bits[::-1], 2)``; an all-zero
    path with a 1 appended, so that it does not read as no cluster (0).

    Raises
    ------
    ValueError
        For a string that is not 1 to :data:`MAX_PATH_BITS` bits.
    """
    if not bits or set(bits) - {"0", "1"}:
        raise ValueError(f"'{bits}' is not a Brown bit path (a string of 0 and 1)")
    if len(bits) > MAX_PATH_BITS:
        raise ValueError(f"the path '{bits[:8]}...' has {len(bits)} bits, more than the "
                         f"{MAX_PATH_BITS} a stored path holds (spaCy stores it as an int)")
    if "1" not in bits and len(bits) < MAX_PATH_BITS:
        bits += "1"  # (the leftmost leaf: in a tree no other path starts with its bits)
    return int(bits[::-1], 2)


def prefix_values(paths: np.ndarray, bits: int) -> np.ndarray:
    """The first ``bits`` bits of stored paths (all of them where ``bits`` is 0)."""
    if not bits:
        return paths
    return paths & np.uint64((1 << bits) - 1)


def _lines(path: Union[str, Path]) -> Iterator[Tuple[int, str]]:
    """(number, text) of every line of a text file (gzipped for ``.gz``), each
    decoded on its own, so that a line that is not UTF-8 is named (E123)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    number = 0
    try:
        with opener(path, "rb") as file:
            for number, raw in enumerate(file, 1):
                yield number, raw.decode("utf8").rstrip("\r\n")
    except UnicodeDecodeError as err:
        raise ValueError(Errors.E123.format(
            path=path, why=f"line {number} is not UTF-8 ({err.reason} at byte {err.start}): "
                           f"save the file as UTF-8")) from err
    except OSError as err:  # gzip.BadGzipFile: a plain file named .gz
        raise ValueError(Errors.E123.format(path=path, why=f"it cannot be read ({err})")) from err


def read_paths(path: Union[str, Path]) -> Iterator[Tuple[str, int, int]]:
    """(word, stored value, count) of every line of a Brown ``paths`` file (the
    count 0 where the line has none, or not a whole number).

    Raises
    ------
    ValueError
        E123 for a line that is not ``bits<TAB>word[<TAB>count]``, is not
        UTF-8, or gives a word an earlier line gave (naming both lines; a
        Brown clustering puts each word in one cluster), and for a file
        without a word.
    """
    first_line: Dict[str, int] = {}
    for number, line in _lines(path):
        if not line.strip():
            continue
        columns = line.split("\t")
        if len(columns) not in (2, 3):
            raise ValueError(Errors.E123.format(
                path=path, why=f"line {number} has {len(columns)} tab-separated columns, "
                               f"not 'bits<TAB>word<TAB>count'"))
        word = columns[1]
        if not word:
            raise ValueError(Errors.E123.format(path=path, why=f"line {number} has no word"))
        if word in first_line:
            raise ValueError(Errors.E123.format(
                path=path, why=f"line {number} gives '{word}' a cluster, as line "
                               f"{first_line[word]} did: a word has one cluster"))
        first_line[word] = number
        count = int(columns[2]) if len(columns) == 3 and columns[2].isdigit() else 0
        try:
            value = path_value(columns[0])
        except ValueError as err:
            raise ValueError(Errors.E123.format(path=path, why=f"line {number}: {err}")) from err
        yield word, value, count
    if not first_line:
        raise ValueError(Errors.E123.format(path=path, why="it holds no words"))


def read_cluster_items(path: Union[str, Path]) -> List[Tuple[str, int]]:
    """(word, stored value) of every word of a Brown ``paths`` file or a JSON
    ``{word: value}`` table, 0 included (E123 where it cannot be read)."""
    path = Path(path)
    if not path.exists():
        raise ValueError(Errors.E123.format(path=path, why="there is no such file"))
    name = path.name.lower()
    if not (name.endswith(".json") or name.endswith(".json.gz")):
        return [(word, value) for word, value, _ in read_paths(path)]
    try:
        data = srsly.read_gzip_json(path) if name.endswith(".gz") else srsly.read_json(path)
    except (OSError, ValueError) as err:
        raise ValueError(Errors.E123.format(path=path, why=f"it is not JSON ({err})")) from err
    if not isinstance(data, dict):
        raise ValueError(Errors.E123.format(
            path=path, why="a JSON table maps each word to its stored path, an int >= 0"))
    for word, value in data.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2 ** 63:
            raise ValueError(Errors.E123.format(
                path=path, why=f"a JSON table maps each word to its stored path, an int from 0 "
                               f"to 2**63 - 1 (a path of at most {MAX_PATH_BITS} bits), but "
                               f"'{word}' has {value!r}"))
    if not data:
        raise ValueError(Errors.E123.format(path=path, why="it holds no words"))
    return list(data.items())


def read_cluster_file(path: Union[str, Path]) -> WordTable:
    """A cluster table from a Brown ``paths`` file or a JSON ``{word: value}`` table.

    Raises
    ------
    ValueError
        E123 where the file cannot be read, or gives no word a cluster (an empty
        table, or one of 0s, which read as no cluster: a model would read nothing).
    """
    items = read_cluster_items(path)
    values = np.fromiter((v for _, v in items), dtype=np.int64, count=len(items))
    table = table_from_items(word_keys(word for word, _ in items), values)
    if not len(table):
        raise ValueError(Errors.E123.format(
            path=path, why=f"none of its {len(items):,} words has a cluster: each has the "
                           f"value 0, which reads as no cluster"))
    return table


def table_from_lookups(table) -> WordTable:
    """A cluster table from a spaCy lookups ``Table`` (keys are string hashes)."""
    keys = np.fromiter(table.keys(), dtype=np.uint64, count=len(table))
    values = _stored_values(table.values(), len(table), "nlp.vocab.lookups 'lexeme_cluster'")
    return table_from_items(keys, values)


def _stored_values(values: Iterable[int], count: int, source: str) -> np.ndarray:
    """The values of a table of stored paths as int64 (E123 for one of 2**63 or more)."""
    try:
        return np.fromiter(values, dtype=np.int64, count=count)
    except OverflowError as err:
        raise ValueError(Errors.E123.format(
            path=source, why=f"a value is 2**63 or more, a path of more than {MAX_PATH_BITS} "
                             f"bits")) from err


@once_per_language
def lookups_data_table(lang: str) -> Optional[WordTable]:
    """spacy-lookups-data's table for ``lang``, read once per process; None if
    the package is not installed or has no table for the language."""
    return _read_lookups_data(lang)


def _read_lookups_data(lang: str) -> Optional[WordTable]:
    return cached_word_table(lang, TABLE_NAME, f"{lang}_{TABLE_NAME}", _table_of_paths)


def _table_of_paths(data) -> Optional[WordTable]:
    """spacy-lookups-data's ``{word: Brown path}`` as a table (English: 1M words
    of gzipped JSON, read in about 0.4 s); None for an empty one."""
    values = _stored_values(data.values(), len(data), "spacy-lookups-data's lexeme_cluster")
    # only the words with a cluster are hashed: English's 810k others are left out anyway
    kept = values != MISSING
    table = table_from_items(word_keys(compress(data.keys(), kept)), values[kept])
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
    """Write the JSON table of a Brown ``paths`` file; returns the number of words.

    Raises
    ------
    ValueError
        E123 for a bad line, or where no word is seen ``min_count`` times (a
        table of no words, which ``initialize`` refuses); nothing is written.
    """
    items = [(word, value) for word, value, count in read_paths(paths) if count >= min_count]
    if not items:
        raise ValueError(Errors.E123.format(
            path=paths, why=f"no word of it is seen --min-count {min_count} times or more"))
    return write_json_table(iter(items), output)
