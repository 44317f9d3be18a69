"""NeuralCRF on a shared tok2vec: a ``spacy.Tok2VecListener.v1`` beside a parser.

The pipeline ``[tok2vec, parser, crf_tagger]`` trains both heads through one
tok2vec, predicts, saves and loads, and goes on training after loading (the
loaded CRF must still be the listener the tok2vec sends its outputs to).
"""

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from conftest import FROM_INITIALIZE, train

WIDTH = 32
LINES = [
    "the/DET/1/det dog/NOUN/2/nsubj barked/VERB/2/ROOT ./PUNCT/2/punct",
    "a/DET/1/det cat/NOUN/2/nsubj slept/VERB/2/ROOT ./PUNCT/2/punct",
    "dogs/NOUN/1/nsubj chase/VERB/1/ROOT cats/NOUN/1/obj ./PUNCT/1/punct",
    "the/DET/2/det old/ADJ/2/amod man/NOUN/3/nsubj walked/VERB/3/ROOT ./PUNCT/3/punct",
]


def shared_tok2vec_nlp(templates=None, architecture="spacy-crf.NeuralCRF.v3"):
    nlp = spacy.blank("en")
    nlp.add_pipe("tok2vec", config={"model": {
        "@architectures": "spacy.Tok2Vec.v2",
        "embed": {"@architectures": "spacy.MultiHashEmbed.v2", "width": WIDTH,
                  "attrs": ["NORM", "SHAPE"], "rows": [500, 100],
                  "include_static_vectors": False},
        "encode": {"@architectures": "spacy.MaxoutWindowEncoder.v2", "width": WIDTH,
                   "depth": 1, "window_size": 1, "maxout_pieces": 2}}})
    listener = {"@architectures": "spacy.Tok2VecListener.v1", "width": WIDTH, "upstream": "*"}
    nlp.add_pipe("parser", config={"min_action_freq": 1, "model": {
        "@architectures": "spacy.TransitionBasedParser.v2", "state_type": "parser",
        "extra_state_tokens": False, "hidden_width": 16, "maxout_pieces": 2,
        "use_upper": True, "tok2vec": listener}})
    nlp.add_pipe("crf_tagger", config={"target": "pos", "model": {
        "@architectures": architecture, "tok2vec": listener,
        "templates": templates}})
    return nlp


def examples(vocab):
    out = []
    for line in LINES:
        rows = [tok.rsplit("/", 3) for tok in line.split()]
        words = [r[0] for r in rows]
        out.append(Example(Doc(vocab, words=words),
                           Doc(vocab, words=words, pos=[r[1] for r in rows],
                               heads=[int(r[2]) for r in rows], deps=[r[3] for r in rows])))
    return out


@pytest.mark.parametrize("architecture", ["spacy-crf.NeuralCRF.v1", "spacy-crf.NeuralCRF.v3"])
@pytest.mark.parametrize("templates", [None, ["NORM", "SUFFIX2"]])
def test_the_crf_listens_to_the_shared_tok2vec_beside_a_parser(templates, architecture):
    nlp = shared_tok2vec_nlp(templates, architecture)
    tok2vec = nlp.get_pipe("tok2vec")
    assert "crf_tagger" in tok2vec.listening_components
    assert "parser" in tok2vec.listening_components
    egs = examples(nlp.vocab)
    history = train(nlp, egs, 40, optimizer=FROM_INITIALIZE)
    assert history[-1] < history[0] / 3
    # the CRF's own gradient reaches the shared tok2vec (the parser left out)
    losses = {}
    nlp.update(egs, losses=losses, exclude=["parser"])
    assert losses["tok2vec"] > 0 and "parser" not in losses
    doc = nlp("the dog slept .")
    assert [t.pos_ for t in doc] == ["DET", "NOUN", "VERB", "PUNCT"]
    assert doc.has_annotation("DEP")


@pytest.mark.parametrize("architecture", ["spacy-crf.NeuralCRF.v1", "spacy-crf.NeuralCRF.v3"])
def test_a_loaded_shared_tok2vec_pipeline_predicts_the_same_and_trains_on(tmp_path, architecture):
    nlp = shared_tok2vec_nlp(["NORM"], architecture)
    egs = examples(nlp.vocab)
    train(nlp, egs, 30, optimizer=FROM_INITIALIZE)
    texts = ["the cat barked .", "dogs chase the man ."]
    before = [[t.pos_ for t in doc] for doc in nlp.pipe(texts)]
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert [[t.pos_ for t in doc] for doc in loaded.pipe(texts)] == before
    # the loaded CRF is still the listener its tok2vec feeds: training goes on
    crf = loaded.get_pipe("crf_tagger")
    listeners = loaded.get_pipe("tok2vec").listener_map["crf_tagger"]
    assert any(node is listeners[0] for node in crf.model.walk())
    embed = next(node for node in loaded.get_pipe("tok2vec").model.walk() if node.has_param("E"))
    weights = embed.get_param("E").copy()
    optimizer = loaded.resume_training()
    history = train(loaded, examples(loaded.vocab), 3, optimizer=optimizer, initialize=False)
    assert np.isfinite(history[-1])
    assert not np.array_equal(weights, embed.get_param("E"))
