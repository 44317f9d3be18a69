"""``python -m spacy_crf.convert`` / ``spacy crf-convert``: corpora as ``.spacy`` files.

The command lines of :mod:`spacy_crf.converters`:

``python -m spacy_crf.convert chunks INPUT OUTPUT.spacy [--attr chunk]``
    CoNLL-2000 style ``WORD POS CHUNK`` columns. spaCy's ``conll_ner_to_docs``
    reads them (POS into ``Token.tag_``, the last column as IOB entities); the
    chunks are also stored as ``doc.spans["chunks"]`` and their tags as the
    ``_.ATTR`` label list, one sentence per doc.

``python -m spacy_crf.convert uner INPUT.iob2 OUTPUT.spacy [--conllu FILE]``
    Universal NER IOB2 files (index, token, tag, ... columns, ``# sent_id``
    comments) as ``doc.ents``, one sentence per doc. With ``--conllu`` the
    sentences are joined on ``sent_id`` to a CoNLL-U treebank whose tokens
    match (UD English EWT r2.9 for UNER English EWT): the docs then carry its
    gold heads, relations, UPOS, XPOS and lemmas too. Sentences are joined on
    ``sent_id`` where every id matches, else on their token sequence, else by
    position where every sentence has as many tokens as its counterpart; the
    command says which, and where none works, which sentence fails and why.

``python -m spacy_crf.convert conll INPUT [INPUT ...] OUTPUT_DIR [--pos-as-tag]``
    CoNLL-2002/2003 NER files (``WORD [POS ...] TAG`` columns, blank lines
    between sentences, ``-DOCSTART-`` document markers) as ``doc.ents``, one
    sentence per doc and one output per input, named by split:
    ``esp.train`` -> ``OUTPUT_DIR/esp.train.spacy``. Document markers are
    dropped; ``I-X`` that starts an entity (IOB1, or a stray tag) becomes
    ``B-X``, with a count; ``--pos-as-tag`` keeps the second column as
    ``Token.tag_``.

``python -m spacy_crf.convert conllu INPUT.conllu OUTPUT.spacy [-n N] [--line-breaks] [-T] [-m]``
    CoNLL-U, read by spaCy's converter, joined into the corpus's documents
    (``-n 0``, the default: a new doc at each ``# newdoc``) or docs of ``N``
    sentences; ``--line-breaks`` ends each sentence that a paragraph follows
    (``# newpar``) with a ``"\n"`` token, as raw text has it
    (:mod:`spacy_crf.conllu_documents`). For one sentence a doc, spaCy's own
    ``python -m spacy convert FILE.conllu OUTPUT_DIR -c conllu -n 1`` does the same.
"""

from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import typer
from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab

from ..conllu_documents import LINE_BREAK, conllu_documents
from ..converters import convert_chunks, convert_conll, convert_uner
from ._util import Arg, Opt, check_input, check_output, command, group, msg, our_errors, run


convert_cli = group("crf-convert", "Convert corpora to .spacy files. Chunking, Universal NER "
                                   "or CoNLL NER corpora, one sentence per doc; CoNLL-U as "
                                   "documents.")

LIMIT_HELP = "Keep only the first N sentences (0: all)"


@command("chunks", parent=convert_cli)
def chunks_cli(
    # fmt: off
    input_path: Path = Arg(..., help="CoNLL-2000 file of WORD POS CHUNK columns"),
    output_path: Path = Arg(..., help="Output .spacy file"),
    attr: str = Opt("chunk", "--attr", help="Token extension for the chunk tags (Token._.ATTR)"),
    limit: int = Opt(0, "--limit", help=LIMIT_HELP, min=0),
    # fmt: on
):
    """
    CoNLL-2000 chunking (WORD POS CHUNK columns). The POS column becomes
    Token.tag_, the chunks entities, doc.spans["chunks"] and the Token._.ATTR
    label list.
    """
    check_paths([("INPUT", input_path)], output_path)
    try:
        docs = convert_chunks(input_path.read_text(encoding="utf8"), attr=attr)
    except ValueError as err:
        msg.fail(f"{input_path}: {err}", exits=2)
    write_docs(docs, output_path, limit)


@command("uner", parent=convert_cli)
def uner_cli(
    # fmt: off
    input_path: Path = Arg(..., help="Universal NER IOB2 file"),
    output_path: Path = Arg(..., help="Output .spacy file"),
    conllu: Optional[Path] = Opt(None, "--conllu", help="CoNLL-U treebank to join the sentences to (on sent_id, else tokens, else position), for gold heads, relations, UPOS, XPOS and lemmas"),
    limit: int = Opt(0, "--limit", help=LIMIT_HELP, min=0),
    # fmt: on
):
    """
    Universal NER IOB2, optionally joined to CoNLL-U trees. The entities
    (index, token, tag columns, # sent_id comments) become doc.ents; --conllu
    joins each sentence to the treebank whose tokens they match (UD English EWT r2.9 for UNER English EWT). The
    command says how the sentences were joined, and where no join works,
    which sentence fails and why.
    """
    check_paths([("INPUT", input_path), ("--conllu", conllu)], output_path)
    text = input_path.read_text(encoding="utf8")
    treebank = conllu.read_text(encoding="utf8") if conllu else None
    report: Dict[str, str] = {}
    try:
        docs = convert_uner(text, Vocab(), treebank, report)
    except ValueError as err:
        hint = (f" Check that --conllu is the treebank split of {input_path.name}."
                if "[CRF-E090]" in str(err) else "")
        msg.fail(f"{input_path}: {err}{hint}", exits=2)
    if conllu is not None:
        msg.info(f"Joined {input_path.name} to {conllu.name} on {report['join']}")
    write_docs(docs, output_path, limit)


@command("conllu", parent=convert_cli)
def conllu_cli(
    # fmt: off
    input_path: Path = Arg(..., help="CoNLL-U file"),
    output_path: Path = Arg(..., help="Output .spacy file"),
    n_sents: int = Opt(0, "--n-sents", "-n", help="Sentences a doc; 0: the corpus's documents (a new doc at each # newdoc)", min=0),
    line_breaks: bool = Opt(False, "--line-breaks", help="End each sentence that a paragraph follows (# newpar) with a line-break token, as raw text has it"),
    merge_subtokens: bool = Opt(False, "--merge-subtokens", "-T", help="Merge CoNLL-U subtokens (as spacy convert -T)"),
    morphology: bool = Opt(False, "--morphology", "-m", help="Enable appending morphology to tags (as spacy convert -m)"),
    limit: int = Opt(0, "--limit", help="Keep only the first N docs (0: all)", min=0),
    # fmt: on
):
    """
    CoNLL-U as documents. spaCy's converter reads the sentences (words, tags,
    morphology, lemmas, trees, entities); they are joined at the corpus's
    # newdoc marks (-n 0) or every N sentences, and with --line-breaks the
    line break before each paragraph is kept as a token, for a senter that
    learns the line breaks of raw text.
    """
    check_paths([("INPUT", input_path)], output_path)
    text = input_path.read_text(encoding="utf8")
    try:
        docs = conllu_documents(text, n_sents, line_breaks, merge_subtokens, morphology)
    except ValueError as err:
        msg.fail(f"{input_path}: {err}", exits=2)
    if n_sents == 0 and len(docs) == 1 and "# newdoc" not in text:
        msg.warn(f"{input_path.name} has no '# newdoc' mark: all its sentences are one doc. "
                 f"Give -n N for docs of N sentences.")
    if line_breaks:
        n_breaks = sum(token.text == LINE_BREAK for doc in docs for token in doc)
        msg.info(f"Kept {n_breaks} line break(s) before paragraphs")
    write_docs(docs, output_path, limit)


def check_paths(inputs: Sequence[Tuple[str, Optional[Path]]], output: Path,
                folder: bool = False) -> None:
    """Before anything is read or written: a ``✘`` line (exit 2) for an input that
    is missing or a folder (E236), or an output that is a folder where a file is
    written, a file where a folder is, or under a file (E237).

    Parameters
    ----------
    inputs : sequence of (str, Path or None)
        Each input's name on the command line (``INPUT``, ``--conllu``) and its
        path; None for an option not given.
    output : Path
        The output file, or with ``folder`` the output folder (``OUTPUT_DIR``).
    folder : bool
        Whether the command writes a folder of files.
    """
    with our_errors():
        for name, path in inputs:
            if path is not None:
                check_input(path, name)
        check_output(output, "OUTPUT_DIR" if folder else "OUTPUT", folder)


def write_docs(docs: List[Doc], output_path: Path, limit: int = 0) -> None:
    """Save the first ``limit`` docs (all with 0) as ``output_path``, and say so."""
    if limit:
        docs = docs[:limit]
    output_path.parent.mkdir(parents=True, exist_ok=True)
    DocBin(docs=docs, store_user_data=True).to_disk(output_path)
    n_tokens = sum(len(doc) for doc in docs)
    msg.good(f"Wrote {len(docs)} docs ({n_tokens} tokens) to {output_path}")


@command("conll", parent=convert_cli)
def conll_cli(
    # fmt: off
    paths: List[Path] = Arg(..., help="INPUT [INPUT ...] OUTPUT_DIR: CoNLL-2002/2003 files and the directory for their .spacy files"),
    pos_as_tag: bool = Opt(False, "--pos-as-tag", help="Keep the second column as Token.tag_"),
    # fmt: on
):
    """
    CoNLL-2002/2003 NER, one output per input. The files (WORD [POS ...] TAG
    columns, blank lines between sentences) become doc.ents, named by split:
    esp.train becomes OUTPUT_DIR/esp.train.spacy. -DOCSTART- lines are
    dropped, and an I-X tag that starts an entity (IOB1, or a stray tag)
    becomes B-X, with a count.
    """
    if len(paths) < 2:
        raise typer.BadParameter("conll needs INPUT [INPUT ...] OUTPUT_DIR", param_hint="PATHS")
    *inputs, out_dir = paths
    if out_dir.suffix == ".spacy":
        raise typer.BadParameter(
            f"{out_dir} is a file name: conll writes one file per input, named by split; give "
            f"a folder (e.g. {out_dir.parent / 'corpus'})", param_hint="OUTPUT_DIR")
    names = [path.name for path in inputs]
    if len(set(names)) != len(names):
        raise typer.BadParameter(f"two inputs have the same name ({names}): their outputs "
                                 f"would collide", param_hint="INPUT")
    check_paths([("INPUT", path) for path in inputs], out_dir, folder=True)
    # every input converted before the first is written: a bad one leaves nothing behind
    converted = []
    for path in inputs:
        try:
            converted.append(convert_conll(path.read_text(encoding="utf8"), Vocab(), pos_as_tag))
        except ValueError as err:
            msg.fail(f"{path}: {err}", exits=2)
    out_dir.mkdir(parents=True, exist_ok=True)
    for path, (docs, counts) in zip(inputs, converted):
        target = out_dir / f"{path.name}.spacy"
        DocBin(docs=docs).to_disk(target)
        n_tokens = sum(len(doc) for doc in docs)
        msg.good(f"Wrote {len(docs)} docs ({n_tokens} tokens) to {target}; dropped "
                 f"{counts['documents']} -DOCSTART- line(s); repaired {counts['repaired']} I- "
                 f"tag(s) that started an entity (IOB1 or stray) to B-")


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m spacy_crf.convert``: :data:`convert_cli`; its exit code."""
    return run(convert_cli, argv, "python -m spacy_crf.convert")

