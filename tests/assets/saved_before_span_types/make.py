"""Save a small trained pipeline with the code on PYTHONPATH, and what it predicts
(``python make.py OUT``): an ``ents`` crf_tagger (BILUO) and a ``spans:sc`` one
(BIO, grown by one tag, ``B-MISC``, after training), saved when ``labels`` and
``cfg["labels"]`` held the scheme's tags (before ``labels`` gave span types)."""
import json, sys
from pathlib import Path
import spacy
from spacy.tokens import Doc, Span
from spacy.training import Example

OUT = Path(sys.argv[1]) if __name__ == "__main__" else None
WORDS = [["Alice", "met", "Bob", "in", "Paris", "."], ["the", "dog", "saw", "New", "York", "."],
         ["Carol", "Smith", "left", "Berlin", "today", "."], ["a", "cat", "ran", "home", "."]]
SPANS = [[(0, 1, "PER"), (2, 3, "PER"), (4, 5, "LOC")], [(3, 5, "LOC")],
         [(0, 2, "PER"), (3, 4, "LOC")], []]
MODEL = {"@architectures": "spacy-crf.FeatureCRF.v2", "templates": ["NORM[-1..1]", "SUFFIX2", "SHAPE"],
         "n_buckets": 1024, "cluster_templates": None, "boost_updates": 0}
CASES = {"ner": {"target": "ents", "scheme": "BILUO", "store_confidence": True, "n_best": 3},
         "spans": {"target": "spans:sc", "scheme": "BIO", "store_confidence": True, "n_best": 2}}


def doc(vocab, i, gold=False):
    d = Doc(vocab, words=WORDS[i])
    if gold:
        spans = [Span(d, a, b, label=k) for a, b, k in SPANS[i]]
        d.set_ents(spans, default="outside")
        d.spans["sc"] = spans
    return d


def expected_of(nlp):
    docs = [nlp(doc(nlp.vocab, i)) for i in range(len(WORDS))]
    return {"labels": {name: list(nlp.get_pipe(name).cfg["labels"]) for name in CASES},
            "ents": [[[e.start, e.end, e.label_] for e in d.ents] for d in docs],
            "spans": [[[s.start, s.end, s.label_] for s in d.spans["sc"]] for d in docs],
            "token_confidence": {name: [[t._.get(f"{name}_confidence") for t in d] for d in docs]
                                 for name in CASES},
            "span_confidence": {"ner": [[e._.ner_confidence for e in d.ents] for d in docs],
                                "spans": [[s._.spans_confidence for s in d.spans["sc"]] for d in docs]},
            "nbest": {name: [d._.get(f"{name}_nbest") for d in docs] for name in CASES}}


if __name__ == "__main__":
    nlp = spacy.blank("en")
    for name, config in CASES.items():
        nlp.add_pipe("crf_tagger", name=name, config={**config, "model": MODEL})
    examples = [Example(doc(nlp.vocab, i), doc(nlp.vocab, i, gold=True)) for i in range(len(WORDS))]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(8):
        nlp.update(examples, sgd=optimizer)
    nlp.get_pipe("spans").add_label("B-MISC")  # a partial type, grown and not yet learned
    nlp.to_disk(OUT)
    expected = expected_of(nlp)
    (OUT / "expected.json").write_text(json.dumps(expected))
    print(expected["labels"], expected["ents"][1], expected["spans"][1])
