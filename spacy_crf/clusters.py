"""Brown cluster tables for the ``CLUSTER`` feature templates.

``python -m spacy_crf.clusters import PATHS OUTPUT.json[.gz]``
    Convert the ``paths`` file of a Brown clustering (Liang's ``wcluster``
    output: ``bits<TAB>word<TAB>count`` per line) into a JSON table ``{word:
    path}`` in spaCy's encoding (the bit path read from its last bit to its
    first, as ``Token.cluster`` and spacy-lookups-data's ``lexeme_cluster``
    store it). Give the table to a component with ``[initialize.components.NAME]
    clusters = "OUTPUT.json.gz"``, or add it to a pipeline's lookups as
    ``lexeme_cluster``. ``--min-count N`` leaves out words seen fewer than N times.

``python -m spacy_crf.clusters induce TEXT OUTPUT [--clusters C] [--min-count N] [--lang LANG]``
    Brown-cluster the words of raw text (Liang's windowed algorithm; see
    ``spacy_crf/_kernels/brown.py``): TEXT has one document per line, plain or
    JSON lines with a ``"text"`` field (``.jsonl``), split by the tokenizer of
    ``spacy.blank(LANG)``. OUTPUT is a JSON table (``.json``, ``.json.gz``) or,
    for any other name, a ``paths`` file. ``--clusters`` defaults to 100,
    ``--min-count`` to 2.

``python -m spacy_crf.clusters show TABLE WORD [WORD ...]``
    Print each word's stored path as a bit string (``-`` for a word the table
    does not have), from a JSON table, a paths file, or ``lookups:LANG`` for
    spacy-lookups-data's table.

Usage errors exit 2 with a message; a bad line names its number.
"""

import argparse
import sys
import time
from pathlib import Path
from typing import Iterator, List, Optional

import srsly
from wasabi import msg

from .features.brown_clusters import (lookups_data_table, path_value, read_cluster_file,
                                      read_paths, write_json_table)
from .features.brown_induction import induce
from .features.word_table import word_keys


def path_bits(value: int) -> str:
    """A stored path back as its bit string, first bit first (trailing zeros are lost)."""
    return format(value, "b")[::-1] if value else "-"


def import_paths(paths: Path, output: Path, min_count: int = 0) -> int:
    """Write the JSON table of a Brown ``paths`` file; returns the number of words."""
    return write_json_table(((word, value) for word, value, count in read_paths(paths)
                             if count >= min_count), output)


def read_texts(path: Path) -> Iterator[str]:
    """The documents of a text file: its lines, or the ``"text"`` of each JSON line.

    Raises
    ------
    ValueError
        For a JSON line without a string ``"text"``, naming the line.
    """
    with open(path, encoding="utf8", errors="strict") as file:
        for number, line in enumerate(file, 1):
            if not line.strip():
                continue
            if path.suffix.lower() != ".jsonl":
                yield line.rstrip("\n")
                continue
            try:
                row = srsly.json_loads(line)
            except ValueError as err:
                raise ValueError(f"{path}, line {number} is not JSON ({err})") from err
            if not isinstance(row, dict) or not isinstance(row.get("text"), str):
                raise ValueError(f"{path}, line {number} has no string \"text\"")
            yield row["text"]


def induce_file(text: Path, output: Path, n_clusters: int, min_count: int, lang: str) -> int:
    """Brown-cluster the words of a text file into ``output``; returns the word count."""
    import spacy

    nlp = spacy.blank(lang)
    sentences = ([t.text for t in doc if not t.is_space]
                 for doc in nlp.tokenizer.pipe(read_texts(text), batch_size=1000))
    rows = induce(sentences, n_clusters=n_clusters, min_count=min_count)
    name = output.name.lower()
    if name.endswith(".json") or name.endswith(".json.gz"):
        return write_json_table(((word, path_value(bits)) for bits, word, _ in rows), output)
    with open(output, "w", encoding="utf8") as file:
        file.writelines(f"{bits}\t{word}\t{count}\n" for bits, word, count in rows)
    return len(rows)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spacy_crf.clusters", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    convert = sub.add_parser("import", help="a Brown paths file -> a JSON cluster table")
    convert.add_argument("paths", type=Path)
    convert.add_argument("output", type=Path)
    convert.add_argument("--min-count", type=int, default=0)
    learn = sub.add_parser("induce", help="Brown clusters of raw text -> a table or paths file")
    learn.add_argument("text", type=Path)
    learn.add_argument("output", type=Path)
    learn.add_argument("--clusters", type=int, default=100)
    learn.add_argument("--min-count", type=int, default=2)
    learn.add_argument("--lang", default="en")
    show = sub.add_parser("show", help="the stored paths of some words")
    show.add_argument("table", help="a JSON table, a paths file, or lookups:LANG")
    show.add_argument("words", nargs="+")
    args = parser.parse_args(argv)
    try:
        if args.command == "import":
            if not args.paths.exists():
                parser.error(f"input file not found: {args.paths}")
            if args.min_count < 0:
                parser.error("--min-count must be at least 0")
            n = import_paths(args.paths, args.output, args.min_count)
            msg.good(f"wrote the clusters of {n:,} words to {args.output}")
            return 0
        if args.command == "induce":
            if not args.text.exists():
                parser.error(f"input file not found: {args.text}")
            if args.clusters < 1 or args.min_count < 1:
                parser.error("--clusters and --min-count must be at least 1")
            try:
                import spacy

                spacy.blank(args.lang)
            except ImportError:
                parser.error(f"spaCy has no language '{args.lang}'")
            start = time.perf_counter()
            n = induce_file(args.text, args.output, args.clusters, args.min_count, args.lang)
            msg.good(f"wrote {args.clusters} Brown clusters of {n:,} words to {args.output} "
                     f"({time.perf_counter() - start:.1f} s)")
            return 0
        if args.table.startswith("lookups:"):
            table = lookups_data_table(args.table.split(":", 1)[1])
            if table is None:
                parser.error(f"spacy-lookups-data has no cluster table for '{args.table[8:]}' "
                             f"(or is not installed: pip install spacy-lookups-data)")
        else:
            table = read_cluster_file(args.table)
    except (ValueError, UnicodeDecodeError) as err:
        print(str(err), file=sys.stderr)
        return 2
    for word, value in zip(args.words, table.lookup(word_keys(args.words))[:, 0].tolist()):
        print(f"{word}\t{path_bits(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
