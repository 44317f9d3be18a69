"""What the sentence target gains where the text keeps its line breaks.

UD's CoNLL-U marks where a paragraph starts (``# newpar``; ``# newdoc`` starts
one too); the raw text has a line break there, which spaCy's tokenizer keeps
as a whitespace token (``"\\n"``). spaCy's converter drops the marks and joins
the sentences with a space, so a senter trained on its output never sees one.
This trial builds docs of ``--n-sents`` sentences twice: as spaCy's converter
joins them, and as ``spacy crf-convert conllu --line-breaks`` does, a ``"\\n"``
token closing the sentence before each paragraph inside a doc (training and
scored docs alike; :mod:`spacy_crf.conllu_documents`). Each is
trained by the factory's defaults in a plain ``nlp.update`` loop (5 epochs,
batches of 32 docs) and scored on dev and test with spaCy's senter scores.

Run from a checkout::

    python benchmarks/line_breaks.py --data-dir ../shared/data

It prints a table (one run each) and, with ``--out``, writes it as JSON.
"""

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SHARED_DATA, markdown_table, write_json  # noqa: E402
from defaults import update_loop  # noqa: E402

from spacy_crf.conllu_documents import LINE_BREAK, conllu_documents  # noqa: E402

MODES = {"joined": "sentences joined with a space (spaCy's converter)",
         "line_breaks": "a line-break token before each paragraph (crf-convert conllu --line-breaks)"}


def examples(vocab: Any, path: Path, n_sents: int, line_breaks: bool) -> List[Any]:
    """Examples of docs of ``n_sents`` consecutive sentences of ``path``, made
    as ``crf-convert conllu`` makes them: the reference with its sentence
    starts, the predicted doc with the same words and no annotation."""
    from spacy.tokens import Doc, DocBin
    from spacy.training import Example

    docs = conllu_documents(path.read_text(encoding="utf8"), n_sents, line_breaks)
    return [Example(Doc(vocab, words=[t.text for t in ref],
                        spaces=[bool(t.whitespace_) for t in ref]), ref)
            for ref in DocBin(docs=docs).get_docs(vocab)]


def run_mode(data: Path, n_sents: int, line_breaks: bool, epochs: int) -> Dict[str, Any]:
    import spacy

    import spacy_crf  # noqa: F401  (registers the factory)

    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "sent_starts"})
    prefix = "en_ewt-ud"
    train = examples(nlp.vocab, data / f"{prefix}-train.conllu", n_sents, line_breaks)
    train_s, _ = update_loop(nlp, train, epochs, 32)
    row: Dict[str, Any] = {"train_s": round(train_s, 1)}
    for split in ("dev", "test"):
        scored = examples(nlp.vocab, data / f"{prefix}-{split}.conllu", n_sents, line_breaks)
        for eg, doc in zip(scored, nlp.pipe([eg.predicted for eg in scored], batch_size=1000)):
            eg.predicted = doc
        scores = nlp.get_pipe("crf_tagger").score(scored)
        row[split] = {k: round(100 * scores[k], 2) for k in ("sents_f", "sents_p", "sents_r")}
        row[split]["line_break_tokens"] = sum(t.text == LINE_BREAK for eg in scored
                                              for t in eg.reference)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA,
                        help="the shared data folder (holds ud_english_ewt/)")
    parser.add_argument("--n-sents", type=int, default=10, help="sentences a doc")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None, help="write the rows as JSON here")
    args = parser.parse_args()
    data = args.data_dir / "ud_english_ewt"
    rows = {mode: run_mode(data, args.n_sents, mode == "line_breaks", args.epochs)
            for mode in MODES}
    table = [[MODES[mode], f"{row['dev']['sents_f']:.2f}", f"{row['test']['sents_f']:.2f}",
              f"{row['test']['sents_p']:.2f} / {row['test']['sents_r']:.2f}",
              str(row["test"]["line_break_tokens"]), f"{row['train_s']:.1f}"]
             for mode, row in rows.items()]
    print(markdown_table(["docs", "dev sents_f", "test sents_f", "test P / R",
                          "line-break tokens in test", "train s"], table))
    if args.out:
        write_json(args.out, {"command": " ".join(sys.argv), "n_sents": args.n_sents,
                              "epochs": args.epochs, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
