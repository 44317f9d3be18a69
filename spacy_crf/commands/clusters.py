"""``python -m spacy_crf.clusters`` / ``spacy crf-clusters``: Brown cluster tables for CLUSTER templates.

The command lines of :mod:`spacy_crf.features.brown_clusters` (the tables) and
:mod:`spacy_crf.features.brown_induction` (clusters of raw text):

``python -m spacy_crf.clusters import PATHS OUTPUT.json[.gz]``
    Convert the ``paths`` file of a Brown clustering (Liang's ``wcluster``
    output: ``bits<TAB>word<TAB>count`` per line) into a JSON table ``{word:
    path}`` in spaCy's encoding (the bit path read from its last bit to its
    first, as ``Token.cluster`` and spacy-lookups-data's ``lexeme_cluster``
    store it; an all-zero path with a 1 appended, ``000`` as ``0001``, so that
    it does not read as no cluster). Give the table to a component with
    ``[initialize.components.NAME] clusters = "OUTPUT.json.gz"``, or add it to a
    pipeline's lookups as ``lexeme_cluster``. ``--min-count N`` leaves out words
    seen fewer than N times.

``python -m spacy_crf.clusters induce TEXT OUTPUT [--clusters C] [--min-count N] [--lang LANG]``
    Brown-cluster the words of raw text (Liang's windowed algorithm; see
    ``spacy_crf/_kernels/brown.py``): TEXT has one document per line, plain or
    JSON lines with a ``"text"`` field (``.jsonl``), split by the tokenizer of
    ``spacy.blank(LANG)``. OUTPUT is a JSON table (``.json``, ``.json.gz``) or,
    for any other name, a ``paths`` file (gzipped for ``.gz``). ``--clusters``
    defaults to 100, ``--min-count`` to 2.

``python -m spacy_crf.clusters show TABLE WORD [WORD ...]``
    Print each word's stored path as a bit string (``-`` for a word the table
    does not have), from a JSON table, a paths file, or ``lookups:LANG`` for
    spacy-lookups-data's table. A word a table gives the value 0 (the all-zero
    path of a table made elsewhere) is printed ``0``, with a note on stderr that
    it reads as no cluster; spacy-lookups-data's tables give 0 to the words they
    do not cluster, so their words of 0 are printed ``-``.

Usage errors exit 2 with a message; a bad line names its number.
"""

import gzip
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional

import typer

from ..features.brown_clusters import import_paths, lookups_data_table, read_cluster_items
from ..features.brown_induction import induce_file
from ..features.word_table import word_keys
from ._util import Arg, Opt, check_output, command, group, msg, our_errors, run


def path_bits(value: int) -> str:
    """A stored path back as its bit string, first bit first (trailing zeros are lost)."""
    return format(value, "b")[::-1] if value else "-"


clusters_cli = group("crf-clusters", "Import, induce or show Brown clusters. Word "
                                     "clusters for the CLUSTER feature templates.")


@contextmanager
def _input_errors() -> Iterator[None]:
    # a bad line of an input file (our E-codes, or not UTF-8): its message, not a traceback
    try:
        yield
    except (ValueError, UnicodeDecodeError) as err:
        msg.fail(str(err), exits=2)


@contextmanager
def _output_folders(output: Path) -> Iterator[None]:
    """Create the missing folders above ``output``, as the other commands do; if
    the work fails (a bad input line), remove them again, so that it leaves
    nothing behind. E237 (exit 2) first for an output under a file, which no
    folder can be made for."""
    with our_errors():
        check_output(output)
    missing = [folder for folder in output.parents if not folder.exists()]  # deepest first
    output.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield
    except BaseException:  # msg.fail exits with SystemExit
        for folder in missing:
            try:
                folder.rmdir()
            except OSError:  # not empty: the work wrote something, which stays for a look
                break
        raise


@command("import", parent=clusters_cli)
def import_cli(
    # fmt: off
    paths: Path = Arg(..., help="Paths file of a Brown clustering (bits, word, count per line)", exists=True, dir_okay=False),
    output: Path = Arg(..., help="Output JSON table (.json or .json.gz)", dir_okay=False),
    min_count: int = Opt(0, "--min-count", help="Leave out words seen fewer times", min=0),
    # fmt: on
):
    """
    A Brown paths file as a JSON cluster table. Liang's wcluster output
    becomes {word: path} in spaCy's encoding (as Token.cluster stores it),
    for [initialize.components.NAME] clusters = "OUTPUT.json.gz".
    """
    with _output_folders(output), _input_errors():
        n = import_paths(paths, output, min_count)
    msg.good(f"wrote the clusters of {n:,} words to {output}")


@command("induce", parent=clusters_cli)
def induce_cli(
    # fmt: off
    text: Path = Arg(..., help="Raw text, one document per line (or JSON lines with a text field, .jsonl)", exists=True, dir_okay=False),
    output: Path = Arg(..., help="Output: a JSON table (.json, .json.gz) or, for any other name, a paths file (gzipped for .gz)", dir_okay=False),
    clusters: int = Opt(100, "--clusters", help="Number of clusters", min=1),
    min_count: int = Opt(2, "--min-count", help="Leave out words seen fewer times", min=1),
    lang: str = Opt("en", "--lang", help="Language whose tokenizer (spacy.blank) splits the text"),
    # fmt: on
):
    """
    Brown clusters of raw text. Liang's windowed algorithm, over the words
    of spacy.blank(LANG)'s tokenizer.
    """
    import spacy

    try:
        spacy.blank(lang)
    except ImportError as err:
        # spaCy's own words: an unknown language (E048), or the package a
        # language needs (Japanese: sudachipy)
        raise typer.BadParameter(f"spacy.blank('{lang}') fails: {err}", param_hint="'--lang'")
    start = time.perf_counter()
    with _output_folders(output), _input_errors():
        n = induce_to(text, output, clusters, min_count, lang)
    # (fewer words than clusters asked for: each word a cluster of its own)
    msg.good(f"wrote {min(clusters, n):,} Brown clusters of {n:,} words to {output} "
             f"({time.perf_counter() - start:.1f} s)")


def induce_to(text: Path, output: Path, n_clusters: int, min_count: int, lang: str) -> int:
    """:func:`~spacy_crf.features.brown_induction.induce_file`, with a ``paths``
    file named ``.gz`` written gzipped, as every reader of ``.gz`` opens it
    (``induce_file`` writes plain text under any name); returns the word count."""
    name = output.name.lower()
    if not name.endswith(".gz") or name.endswith(".json.gz"):
        return induce_file(text, output, n_clusters, min_count, lang)
    plain = output.with_name(f".{output.name}.{os.getpid()}.part")
    try:
        n = induce_file(text, plain, n_clusters, min_count, lang)
        with open(plain, "rb") as source, gzip.open(output, "wb") as target:
            shutil.copyfileobj(source, target)
    finally:
        plain.unlink(missing_ok=True)
    return n


def stored_paths(table: str, words: List[str]) -> List[Optional[int]]:
    """Each word's stored path in ``table`` (a file, or ``lookups:LANG``), None
    for a word it does not have; 0 for a word a file gives the value 0."""
    if not table.startswith("lookups:"):
        found = dict(read_cluster_items(table))
        return [found.get(word) for word in words]
    lang = table.split(":", 1)[1]
    lookups = lookups_data_table(lang)
    if lookups is None:
        raise typer.BadParameter(
            f"spacy-lookups-data has no cluster table for '{lang}' (or is not "
            f"installed: pip install spacy-lookups-data)", param_hint="TABLE")
    # (the table keeps no word of 0: spaCy's tables give it to words without a cluster)
    return [value or None for value in lookups.lookup(word_keys(words))[:, 0].tolist()]


@command("show", parent=clusters_cli)
def show_cli(
    # fmt: off
    table: str = Arg(..., help="A JSON table, a paths file, or lookups:LANG for spacy-lookups-data's table"),
    words: List[str] = Arg(..., help="The words to look up"),
    # fmt: on
):
    """
    The stored path of each word, as a bit string. A word the table does not
    have gets "-", one it gives the value 0 (all zeros, read as no cluster)
    "0"; trailing zeros of a path are lost in spaCy's encoding.
    """
    with _input_errors():
        values = stored_paths(table, words)
    for word, value in zip(words, values):
        print(f"{word}\t{'-' if value is None else path_bits(value) if value else '0'}")
    zeros = [word for word, value in zip(words, values) if value == 0]
    if zeros:
        # stderr: stdout keeps the word<TAB>path lines alone
        typer.echo(f"{', '.join(zeros)}: in the table with the value 0, an all-zero path, "
                   f"which the CLUSTER features read as no cluster, like a word the table "
                   f"does not have", err=True)


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m spacy_crf.clusters``: :data:`clusters_cli`; its exit code."""
    return run(clusters_cli, argv, "python -m spacy_crf.clusters")

