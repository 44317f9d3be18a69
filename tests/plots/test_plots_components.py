"""``crf-plots`` on a pipeline of several crf_taggers: each token and span is
coloured by the plotted component's own confidence (``token._.{name}_confidence``),
whatever the others stored on the docs, and what goes wrong is a ``✘`` line.

The shared ``token._.crf_confidence`` raises E191 where two components stored
theirs, and reads the values of a component named ``crf`` where one is among
them: the page must read neither.
"""

import html
import re

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc, DocBin
from spacy.training import Example

from conftest import SMALL_MODEL, run_main, train

pytest.importorskip("matplotlib")

from spacy_crf import token_values  # noqa: E402
from spacy_crf.commands.plots import main as plots_main  # noqa: E402
from spacy_crf.errors import Errors  # noqa: E402
from spacy_crf.pipeline.extensions import CONFIDENCE, SPAN_CONFIDENCE  # noqa: E402

#: words, PTB tags, UPOS, entity IOB tags
SENTS = [
    ("Alice met Bob in Paris .", "NNP VBD NNP IN NNP .", "PROPN VERB PROPN ADP PROPN PUNCT",
     "B-PER O B-PER O B-LOC O"),
    ("Carol left Rome today .", "NNP VBD NNP NN .", "PROPN VERB PROPN NOUN PUNCT",
     "B-PER O B-LOC O O"),
    ("the cat saw Dan .", "DT NN VBD NNP .", "DET NOUN VERB PROPN PUNCT", "O O O B-PER O"),
]


def trained(folder, components):
    """A pipeline of crf_taggers ``(name, target, store_confidence)``, trained on
    SENTS and saved in ``folder/model``, SENTS in ``folder/data.spacy``."""
    nlp = spacy.blank("en")
    for name, target, store in components:
        nlp.add_pipe("crf_tagger", name=name, config={"model": SMALL_MODEL, "target": target,
                                                      "store_confidence": store})
    examples = []
    for words, tags, pos, ents in SENTS:
        words = words.split()
        gold = Doc(nlp.vocab, words=words, tags=tags.split(), pos=pos.split(),
                   ents=ents.split())
        examples.append(Example(Doc(nlp.vocab, words=words), gold))
    train(nlp, examples, 2, component=None)  # (a few updates: confidences below 1)
    nlp.to_disk(folder / "model")
    DocBin(docs=[eg.reference for eg in examples]).to_disk(folder / "data.spacy")
    return folder / "model", folder / "data.spacy"


def own_values(model, data, name):
    """The component ``name``'s own token and span confidences on ``data``, as
    crf-plots predicts them (that component's store_confidence on)."""
    nlp = spacy.load(model)
    nlp.get_pipe(name).cfg["store_confidence"] = True
    docs = list(nlp.pipe(d.text for d in DocBin().from_disk(data).get_docs(nlp.vocab)))
    tokens = [round(t._.get(f"{name}_confidence"), 3) for doc in docs for t in doc]
    spans = {(d, ent.text): ent._.get(f"{name}_confidence")
             for d, doc in enumerate(docs) for ent in doc.ents}
    return docs, tokens, spans


def page_tokens(out):
    page = html.unescape((out / "confidence.html").read_text(encoding="utf-8"))
    return [float(x) for x in re.findall(r"\| confidence: ([0-9.]+)", page)], page


def test_a_component_without_confidences_beside_two_with_them(tmp_path):
    """tagger stores none, upos and ner do: token._.crf_confidence is ambiguous
    (E191, a traceback before); the page shows tagger's own confidences."""
    model, data = trained(tmp_path, [("tagger", "tag", False), ("upos", "pos", True),
                                     ("ner", "ents", True)])
    out = tmp_path / "out"
    result = run_main(plots_main, [model, data, out, "--component", "tagger"])
    assert result.returncode == 0, result.stdout + result.stderr
    shown, _ = page_tokens(out)
    _, expected, _ = own_values(model, data, "tagger")
    assert shown == expected
    assert len(shown) == sum(len(words.split()) for words, *_ in SENTS)


def test_a_component_beside_one_named_crf_shows_its_own_confidences(tmp_path):
    """Beside a component named 'crf', the shared extension reads crf's values:
    the page of ner showed the POS component's confidences under ner's labels."""
    model, data = trained(tmp_path, [("crf", "pos", True), ("ner", "ents", True)])
    out = tmp_path / "out"
    result = run_main(plots_main, [model, data, out, "--component", "ner"])
    assert result.returncode == 0, result.stdout + result.stderr
    shown, page = page_tokens(out)
    _, expected, spans = own_values(model, data, "ner")
    _, of_crf, _ = own_values(model, data, "crf")
    assert expected != of_crf  # (else the test could not tell them apart)
    assert shown == expected
    # each predicted span box: its own probability, as span._.ner_confidence gives it
    assert spans
    for (_, text), conf in spans.items():
        label_pct = f"{int(round(100 * conf))}%"
        assert re.search(rf"predicted \w+ \u201c{re.escape(text)}\u201d, confidence "
                         rf"{label_pct}", page), (text, label_pct)
    stdout = " ".join(result.stdout.split())
    assert "wrote" in stdout and "span_confidence.png" in stdout


def _two_owners():
    """A doc on which the components 'a' and 'b' both stored confidences."""
    doc = Doc(spacy.blank("en").vocab, words=["Alice", "ran"], ents=["B-PER", "O"])
    for owner, values, span_p in (("a", [0.25, 0.5], 0.3), ("b", [0.75, 1.0], 0.9)):
        token_values.store_per_token(doc, CONFIDENCE, owner, values)
        token_values.store(doc, SPAN_CONFIDENCE, owner, [0], [5], [span_p])
    return doc


def test_the_page_reads_the_named_components_values():
    from spacy_crf.pipeline.extensions import register_extensions
    from spacy_crf.plots.confidence_html import render_html, token_confidences
    from spacy_crf.plots.entities import span_confidences

    register_extensions("a")
    register_extensions("b")
    doc = _two_owners()
    assert token_confidences(doc, "a") == [0.25, 0.5]
    assert token_confidences(doc, "b") == [0.75, 1.0]
    assert token_confidences(doc, "c") == [None, None]  # stored nothing
    with pytest.raises(ValueError, match="E191"):  # the shared extension: ambiguous
        token_confidences(doc, None)
    ids = [np.zeros(2, dtype=np.int64)]
    page = html.unescape(render_html([doc], ids, ids, ["O"], "t", gold_spans=[list(doc.ents)],
                                     pred_spans=[list(doc.ents)], component="b"))
    assert re.findall(r"\| confidence: ([0-9.]+)", page) == ["0.750", "1.000"]
    assert "PER 90%" in page
    conf, correct = span_confidences([list(doc.ents)], [list(doc.ents)], "a")
    assert conf.tolist() == [0.3] and correct.tolist() == [True]


def test_an_error_drawing_the_page_is_a_fail_line_and_writes_nothing(tmp_path, monkeypatch):
    model, data = trained(tmp_path, [("tagger", "tag", True)])

    def fails(*args, **kwargs):
        raise ValueError(Errors.E191.format(shared="token._.crf_confidence", owners="a, b",
                                            own="token._.a_confidence", names="'a', 'b'"))

    monkeypatch.setattr("spacy_crf.commands.plots.render_html", fails)
    out = tmp_path / "out"
    result = run_main(plots_main, [model, data, out])
    assert result.returncode == 2
    assert "✘ [CRF-E191]" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()
