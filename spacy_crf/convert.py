"""Corpus conversion to ``.spacy`` files, on top of spaCy's own converters.

``python -m spacy_crf.convert chunks INPUT OUTPUT.spacy [--attr chunk]``
    CoNLL-2000 style ``WORD POS CHUNK`` columns. spaCy's ``conll_ner_to_docs``
    reads them (POS into ``Token.tag_``, the last column as IOB entities); the
    chunk tags are then also stored as the ``_.ATTR`` label list, one sentence
    per doc.

For CoNLL-U use spaCy's converter directly:
``python -m spacy convert FILE.conllu OUTPUT_DIR -c conllu -n 1``.
"""

import argparse
import sys
from pathlib import Path
from typing import List, Optional

from spacy.attrs import ENT_IOB, ENT_TYPE
from spacy.tokens import Doc, DocBin
from spacy.training.converters import conll_ner_to_docs

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
    """Docs (one per sentence) from CoNLL-2000 style text, chunk tags in ``_.attr``."""
    docs = list(conll_ner_to_docs(text, n_sents=1, no_print=True))
    for doc in docs:
        set_doc_labels(doc, attr, iob_tags_from_ents(doc))
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
    args = parser.parse_args(argv)
    if not args.input.exists():
        parser.error(f"input file not found: {args.input}")
    docs = convert_chunks(args.input.read_text(encoding="utf8"), attr=args.attr)
    if args.limit:
        docs = docs[: args.limit]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    DocBin(docs=docs, store_user_data=True).to_disk(args.output)
    n_tokens = sum(len(doc) for doc in docs)
    print(f"Wrote {len(docs)} docs ({n_tokens} tokens) to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
