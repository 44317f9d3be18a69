"""``python -m spacy_crf.clusters`` / ``spacy crf-clusters``: Brown cluster tables for CLUSTER templates.

The command lines of :mod:`spacy_crf.features.brown_clusters` (the tables) and
:mod:`spacy_crf.features.brown_induction` (clusters of raw text):

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

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional

import typer

from ..features.brown_clusters import import_paths, lookups_data_table, read_cluster_file
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
    output: Path = Arg(..., help="Output: a JSON table (.json, .json.gz) or, for any other name, a paths file", dir_okay=False),
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
    except ImportError:
        raise typer.BadParameter(f"spaCy has no language '{lang}'", param_hint="'--lang'")
    start = time.perf_counter()
    with _output_folders(output), _input_errors():
        n = induce_file(text, output, clusters, min_count, lang)
    # (fewer words than clusters asked for: each word a cluster of its own)
    msg.good(f"wrote {min(clusters, n):,} Brown clusters of {n:,} words to {output} "
             f"({time.perf_counter() - start:.1f} s)")


@command("show", parent=clusters_cli)
def show_cli(
    # fmt: off
    table: str = Arg(..., help="A JSON table, a paths file, or lookups:LANG for spacy-lookups-data's table"),
    words: List[str] = Arg(..., help="The words to look up"),
    # fmt: on
):
    """
    The stored path of each word, as a bit string. A word the table does not
    have gets "-"; trailing zeros of a path are lost in spaCy's encoding.
    """
    with _input_errors():
        if table.startswith("lookups:"):
            found = lookups_data_table(table.split(":", 1)[1])
            if found is None:
                raise typer.BadParameter(
                    f"spacy-lookups-data has no cluster table for '{table[8:]}' (or is not "
                    f"installed: pip install spacy-lookups-data)", param_hint="TABLE")
        else:
            found = read_cluster_file(table)
    for word, value in zip(words, found.lookup(word_keys(words))[:, 0].tolist()):
        print(f"{word}\t{path_bits(value)}")


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m spacy_crf.clusters``: :data:`clusters_cli`; its exit code."""
    return run(clusters_cli, argv, "python -m spacy_crf.clusters")

