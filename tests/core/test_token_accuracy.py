"""``scoring.token_accuracy`` counts exactly as spaCy's ``Scorer.score_token_attr``.

It compares label arrays where the predicted doc has the reference's tokens
and falls back to spaCy's alignment elsewhere; random docs with missing gold
labels, whitespace tokens and other tokenisations must give spaCy's figure.
"""

import numpy as np
import pytest
import spacy
from spacy.scorer import Scorer
from spacy.tokens import Doc
from spacy.training import Example

from spacy_crf.scoring import score_crf, token_accuracy
from spacy_crf.targets import make_target

TAGS = ["NN", "VB", "DT", ""]
POS = ["NOUN", "VERB", "DET", ""]
CHUNKS = ["B-NP", "I-NP", "O", None]
ENTS = ["B-PER", "I-PER", "O", "B-LOC", ""]


def random_doc(vocab, rng, words, spaces, target):
    doc = Doc(vocab, words=words, spaces=spaces)
    for token in doc:
        if target == "tag":
            token.tag_ = TAGS[rng.integers(len(TAGS))]
        elif target == "pos":
            token.pos_ = POS[rng.integers(len(POS))]
    if target == "_.chunk":
        make_target(target)  # registers the extension
        for token in doc:
            token._.chunk = CHUNKS[rng.integers(len(CHUNKS))]
    if target == "ents":
        tags = [ENTS[rng.integers(len(ENTS))] for _ in words]
        # well formed IOB: I- only after a B-/I- of its type; "" (missing) anywhere
        for i, tag in enumerate(tags):
            if tag.startswith("I-") and (i == 0 or tags[i - 1][2:] != tag[2:]):
                tags[i] = "B-" + tag[2:]
        doc = Doc(vocab, words=words, spaces=spaces,
                  ents=[t or None for t in tags] if any(tags) else None)
    return doc


@pytest.mark.parametrize("target", ["tag", "pos", "_.chunk", "ents"])
@pytest.mark.parametrize("seed", range(4))
def test_token_accuracy_equals_spacys(target, seed):
    rng = np.random.default_rng(seed)
    nlp = spacy.blank("en")
    tgt = make_target(target)
    attr = {"ents": "ent_tag"}.get(target, tgt.score_attr)
    vocab = ["a", "b", "c", " ", "dd", "\n"]
    examples = []
    for k in range(12):
        words = [vocab[i] for i in rng.integers(len(vocab), size=int(rng.integers(1, 9)))]
        spaces = [bool(s) for s in rng.integers(2, size=len(words))]
        gold = random_doc(nlp.vocab, rng, words, spaces, target)
        split = next((i for i, w in enumerate(words) if len(w) > 1), None)
        if k % 4 == 3 and split is not None:  # another tokenisation: split "dd" in two
            words = words[:split] + ["d", "d"] + words[split + 1:]
            spaces = spaces[:split] + [False, spaces[split]] + spaces[split + 1:]
        pred = random_doc(nlp.vocab, rng, words, spaces, target)
        assert pred.text == gold.text
        examples.append(Example(pred, gold))
    expected = Scorer.score_token_attr(examples, attr, getter=tgt.getter())
    if target == "ents":  # through the scorer, which passes the IOB keys
        got = {attr + "_acc": score_crf(examples, target="ents")["crf_acc"]}
    else:
        got = token_accuracy(examples, tgt, attr)
    assert expected[attr + "_acc"] is not None
    assert got == pytest.approx(expected)
    assert any(len(eg.predicted) != len(eg.reference) for eg in examples)


@pytest.mark.parametrize("target,annotations", [
    ("tag", {"tags": ["DT", "NN"]}),
    ("morph", {"morphs": ["Definite=Def", "Number=Sing"], "pos": ["DET", "NOUN"]}),
    ("lemma", {"lemmas": ["the", "cat"]}),
    ("sent_starts", {"sent_starts": [1, -1]}),
])
def test_an_empty_doc_counts_nothing(target, annotations):
    """nlp.evaluate over a batch with an empty doc scores the others, as spaCy's
    own pipes do (an empty doc has no row length to reshape its keys to)."""
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": target})
    example = Example.from_dict(nlp.make_doc("the cats"), annotations)
    optimizer = nlp.initialize(lambda: [example])
    for _ in range(5):
        nlp.update([example], sgd=optimizer)
    empty = Example(nlp.make_doc(""), nlp.make_doc(""))
    with_empty = nlp.evaluate([example, empty])
    alone = nlp.evaluate([example])
    key = {"tag": "tag_acc", "morph": "morph_acc", "lemma": "lemma_acc",
           "sent_starts": "sents_f"}[target]
    assert with_empty[key] == alone[key] == 1.0
    assert nlp.evaluate([empty])[key] is None
