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
batches of 32 docs) and scored on dev and test with spaCy's senter scores,
on docs without line breaks, with them as ``"\\n"``, and with them as
``"\\n\\n"`` (a blank line, which the converter never writes): what a senter
meets in raw text. ``--no-line-break-templates`` is the ablation of the
target's ``IS_SPACE`` templates.

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

#: the docs a senter is trained on
TRAINED_ON = {"joined": "sentences joined with a space (spaCy's converter)",
              "line_breaks": "a line break before each paragraph (crf-convert conllu --line-breaks)"}
#: the docs it is scored on (their line-break token, None for none): as the
#: converter writes them, or with a raw text's other line break
SCORED_ON = {"no line breaks": None, 'line breaks as "\\n"': "\n",
             'line breaks as "\\n\\n" (a blank line)': "\n\n"}


def examples(vocab: Any, path: Path, n_sents: int, line_breaks: bool,
             line_break: str = LINE_BREAK) -> List[Any]:
    """Examples of docs of ``n_sents`` consecutive sentences of ``path``, made
    as ``crf-convert conllu`` makes them (each line-break token then written
    ``line_break``): the reference with its sentence starts, the predicted doc
    with the same words and no annotation."""
    from spacy.tokens import Doc, DocBin
    from spacy.training import Example

    docs = conllu_documents(path.read_text(encoding="utf8"), n_sents, line_breaks)
    out = []
    for ref in DocBin(docs=docs).get_docs(vocab):
        words = [line_break if t.text == LINE_BREAK else t.text for t in ref]
        spaces = [bool(t.whitespace_) for t in ref]
        gold = Doc(vocab, words=words, spaces=spaces,
                   sent_starts=[bool(t.is_sent_start) for t in ref])
        out.append(Example(Doc(vocab, words=words, spaces=spaces), gold))
    return out


def run_trained_on(data: Path, trained_on: str, args: Any) -> Dict[str, Any]:
    """Train the factory's senter on ``trained_on`` docs, score it on every kind of docs."""
    import spacy

    import spacy_crf  # noqa: F401  (registers the factory)
    from spacy_crf.targets.sent_starts import LINE_BREAK_TEMPLATES, SentStartsTarget

    if args.no_line_break_templates:  # the ablation: the target without them
        SentStartsTarget.optional_templates = tuple(
            t for t in SentStartsTarget.optional_templates if t not in LINE_BREAK_TEMPLATES)
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "sent_starts"})
    prefix = "en_ewt-ud"
    train = examples(nlp.vocab, data / f"{prefix}-train.conllu", args.n_sents,
                     trained_on == "line_breaks")
    train_s, _ = update_loop(nlp, train, args.epochs, 32)
    row: Dict[str, Any] = {"train_s": round(train_s, 1)}
    for split in ("dev", "test"):
        for scored_on, line_break in SCORED_ON.items():
            scored = examples(nlp.vocab, data / f"{prefix}-{split}.conllu", args.n_sents,
                              line_break is not None, line_break or LINE_BREAK)
            predicted = nlp.pipe([eg.predicted for eg in scored], batch_size=1000)
            for eg, doc in zip(scored, predicted):
                eg.predicted = doc
            scores = nlp.get_pipe("crf_tagger").score(scored)
            row[f"{split} {scored_on}"] = {k: round(100 * scores[k], 2)
                                           for k in ("sents_f", "sents_p", "sents_r")}
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA,
                        help="the shared data folder (holds ud_english_ewt/)")
    parser.add_argument("--n-sents", type=int, default=10, help="sentences a doc")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--no-line-break-templates", action="store_true",
                        help="the ablation: the sent_starts target without IS_SPACE[-1] and IS_SPACE")
    parser.add_argument("--out", type=Path, default=None, help="write the rows as JSON here")
    args = parser.parse_args()
    data = args.data_dir / "ud_english_ewt"
    rows = {trained_on: run_trained_on(data, trained_on, args) for trained_on in TRAINED_ON}
    for split in ("dev", "test"):
        print(f"\n{split} sents_f, factory defaults, plain loop"
              + (", without the line-break templates" if args.no_line_break_templates else ""))
        table = [[TRAINED_ON[trained_on]] + [f"{row[f'{split} {s}']['sents_f']:.2f}"
                                             for s in SCORED_ON] + [f"{row['train_s']:.1f}"]
                 for trained_on, row in rows.items()]
        print(markdown_table(["trained on"] + [f"scored on: {v}" for v in SCORED_ON]
                             + ["train s"], table))
    if args.out:
        write_json(args.out, {"command": " ".join(sys.argv), "n_sents": args.n_sents,
                              "epochs": args.epochs, "rows": rows,
                              "line_break_templates": not args.no_line_break_templates})
    return 0


if __name__ == "__main__":
    sys.exit(main())
