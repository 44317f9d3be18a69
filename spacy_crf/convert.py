"""Corpus conversion to ``.spacy`` files, on top of spaCy's own converters.

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
    gold heads, relations, UPOS, XPOS and lemmas too.

For CoNLL-U use spaCy's converter directly:
``python -m spacy convert FILE.conllu OUTPUT_DIR -c conllu -n 1``.
"""

import argparse
import sys
from pathlib import Path
from typing import Dict, List, Optional

from spacy.attrs import ENT_IOB, ENT_TYPE
from spacy.tokens import Doc, DocBin
from spacy.training import biluo_tags_to_spans, iob_to_biluo
from spacy.training.converters import conll_ner_to_docs
from spacy.vocab import Vocab

from .targets import set_doc_labels

_IOB_PREFIX = {1: "I-", 3: "B-"}


def iob_tags_from_ents(doc: Doc) -> List[str]:
    """IOB2 tags of a doc's entities (``O`` outside them)."""
    values = doc.to_array([ENT_IOB, ENT_TYPE])
    strings = doc.vocab.strings
    return [
        _IOB_PREFIX[int(iob)] + strings[int(kind)] if int(iob) in _IOB_PREFIX else "O"
        for iob, kind in values
    ]


def convert_chunks(text: str, attr: str = "chunk") -> List[Doc]:
    """Docs (one per sentence) from CoNLL-2000 style text: chunks as ``doc.ents``
    and ``doc.spans["chunks"]``, their IOB tags in ``_.attr``."""
    docs = list(conll_ner_to_docs(text, n_sents=1, no_print=True))
    for doc in docs:
        set_doc_labels(doc, attr, iob_tags_from_ents(doc))
        doc.spans["chunks"] = list(doc.ents)
    return docs


def _blocks(text: str) -> List[List[str]]:
    return [b.splitlines() for b in text.strip("\n").split("\n\n") if b.strip()]


def _sent_id(lines: List[str]) -> Optional[str]:
    for line in lines:
        if line.startswith("# sent_id"):
            return line.split("=", 1)[1].strip()
    return None


def read_conllu(text: str) -> Dict[str, List[List[str]]]:
    """Sentences of a CoNLL-U text by ``sent_id``: the rows of their syntactic
    words (multiword-token ranges and empty nodes skipped)."""
    sentences = {}
    for lines in _blocks(text):
        rows = [line.split("\t") for line in lines if line and not line.startswith("#")]
        rows = [r for r in rows if r[0].isdigit()]
        sentences[_sent_id(lines)] = rows
    return sentences


def convert_uner(text: str, vocab: Vocab, conllu: Optional[str] = None) -> List[Doc]:
    """Docs (one per sentence) from Universal NER IOB2 text, entities in ``doc.ents``."""
    trees = read_conllu(conllu) if conllu is not None else {}
    docs = []
    for lines in _blocks(text):
        rows = [line.split("\t") for line in lines if line and not line.startswith("#")]
        words = [r[1] for r in rows]
        tags = [r[2] for r in rows]
        sid = _sent_id(lines)
        extra = {}
        if conllu is not None:
            tree = trees.get(sid)
            if tree is None or [r[1] for r in tree] != words:
                raise ValueError(f"Sentence {sid}: no CoNLL-U sentence with the same tokens.")
            extra = dict(
                spaces=["SpaceAfter=No" not in r[9] for r in tree],
                lemmas=[r[2] for r in tree], pos=[r[3] for r in tree],
                tags=[r[4] for r in tree], heads=[int(r[6]) - 1 if r[6] != "0" else i
                                                  for i, r in enumerate(tree)],
                deps=[r[7] for r in tree],
            )
        doc = Doc(vocab, words=words, **extra)
        doc.set_ents(biluo_tags_to_spans(doc, iob_to_biluo(tags)), default="outside")
        if sid:
            doc.user_data[("spacy_crf", "sent_id")] = sid
        docs.append(doc)
    return docs


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spacy_crf.convert", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="format", required=True)
    chunks = sub.add_parser("chunks", help="CoNLL-2000 WORD POS CHUNK columns")
    chunks.add_argument("input", type=Path)
    chunks.add_argument("output", type=Path)
    chunks.add_argument("--attr", default="chunk", help="token extension for the chunk tags")
    chunks.add_argument("--limit", type=int, default=0, help="keep only the first N sentences")
    uner = sub.add_parser("uner", help="Universal NER IOB2 (optionally joined to CoNLL-U trees)")
    uner.add_argument("input", type=Path)
    uner.add_argument("output", type=Path)
    uner.add_argument("--conllu", type=Path, default=None, help="treebank to join on sent_id")
    uner.add_argument("--limit", type=int, default=0, help="keep only the first N sentences")
    args = parser.parse_args(argv)
    for path in (args.input, getattr(args, "conllu", None)):
        if path is not None and not path.exists():
            parser.error(f"input file not found: {path}")
    text = args.input.read_text(encoding="utf8")
    if args.format == "chunks":
        docs = convert_chunks(text, attr=args.attr)
    else:
        conllu = args.conllu.read_text(encoding="utf8") if args.conllu else None
        try:
            docs = convert_uner(text, Vocab(), conllu)
        except ValueError as err:
            parser.error(f"{err} Check that --conllu is the treebank split of {args.input.name}.")
    if args.limit:
        docs = docs[: args.limit]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    DocBin(docs=docs, store_user_data=True).to_disk(args.output)
    n_tokens = sum(len(doc) for doc in docs)
    print(f"Wrote {len(docs)} docs ({n_tokens} tokens) to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
