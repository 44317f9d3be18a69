"""A batch's sentence boundaries and heads are read once per call of the component.

The features (windows stop at sentences, tree templates read heads) and the
structure (the CRF's chains or forest) both need them; the component hands
both one ``DocBatch``, whose second reading returns the first's arrays. These
tests count readings, and check that nothing is shared by a plain list of
Docs or between batches.
"""

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from spacy_crf.features import doc_arrays
from spacy_crf.features.doc_arrays import DocBatch, batch_heads, batch_sequence_lengths

WORDS = ["the", "dog", "saw", "a", "cat", ".", "it", "ran", "."]
HEADS = [1, 2, 2, 4, 2, 2, 7, 7, 7]
DEPS = ["det", "nsubj", "ROOT", "det", "obj", "punct", "nsubj", "ROOT", "punct"]
POS = ["DET", "NOUN", "VERB", "DET", "NOUN", "PUNCT", "PRON", "VERB", "PUNCT"]


def parsed(vocab, pos=False):
    return Doc(vocab, words=WORDS, heads=HEADS, deps=DEPS, pos=POS if pos else None)


@pytest.fixture
def readings(monkeypatch):
    """Counts of sentence-length and head readings from Docs."""
    counts = {"sentences": 0, "heads": 0}
    sentence_lengths, read_heads = doc_arrays.sentence_lengths, doc_arrays._read_heads

    def counted_sentences(doc):
        counts["sentences"] += 1
        return sentence_lengths(doc)

    def counted_heads(docs):
        counts["heads"] += 1
        return read_heads(docs)

    monkeypatch.setattr(doc_arrays, "sentence_lengths", counted_sentences)
    monkeypatch.setattr(doc_arrays, "_read_heads", counted_heads)
    return counts


def trained(structure, templates):
    nlp = spacy.blank("en")
    # a chain per sentence: the structure reads the sentences too
    nlp.add_pipe("crf_tagger", config={"target": "pos", "structure": structure,
                                       "sequence": "sentence", "model": {
        "@architectures": "spacy-crf.FeatureCRF.v2", "templates": templates, "n_buckets": 1024}})
    examples = [Example(parsed(nlp.vocab), parsed(nlp.vocab, pos=True))]
    nlp.initialize(lambda: examples)
    return nlp, examples


@pytest.mark.parametrize("structure", ["chain", "tree"])
def test_predict_and_update_read_sentences_and_heads_once(readings, structure):
    # NORM[-1..1] stops at sentences; head:NORM and HEAD_DIST read the heads
    nlp, examples = trained(structure, ["NORM[-1..1]", "head:NORM", "HEAD_DIST"])
    pipe = nlp.get_pipe("crf_tagger")
    for call in (lambda: pipe.predict([parsed(nlp.vocab)]),
                 lambda: nlp.update(examples)):
        readings.update(sentences=0, heads=0)
        call()
        assert readings == {"sentences": 1, "heads": 1}


def test_a_plain_list_is_read_at_every_reading(readings):
    docs = [parsed(spacy.blank("en").vocab)]
    batch_heads(docs)
    batch_heads(docs)
    batch_sequence_lengths(docs)
    batch_sequence_lengths(docs)
    assert readings == {"sentences": 2, "heads": 2}


def test_a_batch_shares_only_its_own_readings():
    vocab = spacy.blank("en").vocab
    starts = [i in (0, 6) for i in range(len(WORDS))]
    batch = DocBatch([Doc(vocab, words=WORDS, sent_starts=starts)])
    other = DocBatch([Doc(vocab, words=WORDS)])
    parsed_batch = DocBatch([parsed(vocab)])
    first = batch_sequence_lengths(batch)
    assert batch_sequence_lengths(batch) is first
    # another batch (no sentence boundaries: one sequence) is read as it is
    assert batch_sequence_lengths(other).tolist() == [len(WORDS)]
    assert first.tolist() == [6, 3]
    assert batch_heads(parsed_batch)[0] is batch_heads(parsed_batch)[0]
    # a new batch of the same (changed) docs is read anew
    batch[0][6].is_sent_start = False
    assert batch_sequence_lengths(DocBatch(batch)).tolist() == [len(WORDS)]
    # ... and a plain list of them too
    assert batch_sequence_lengths(list(batch)).tolist() == [len(WORDS)]


def test_a_failed_reading_fails_again():
    docs = DocBatch([Doc(spacy.blank("en").vocab, words=WORDS)])  # no parse
    for _ in range(2):
        with pytest.raises(ValueError, match="no parse"):
            batch_heads(docs)


def test_the_layout_and_the_model_read_one_batch_and_the_layout_travels_with_it(readings):
    nlp, _ = trained("tree", ["NORM[-1..1]", "head:NORM", "HEAD_DIST"])
    pipe = nlp.get_pipe("crf_tagger")
    readings.update(sentences=0, heads=0)
    batch = pipe.read_batch([parsed(nlp.vocab)])
    assert readings == {"sentences": 0, "heads": 1}  # a tree per doc: no sentences
    assert isinstance(batch, DocBatch) and batch.layout.heads is batch_heads(batch)[0]
    scores = pipe.model.predict(batch)
    assert readings == {"sentences": 1, "heads": 1}
    assert scores.emissions.shape[0] == batch.layout.n_tokens == len(WORDS)


# ---------------------------------------------------------- shared features
WORD_TEMPLATES = ["NORM[-1..1]", "SUFFIX3", "SHAPE"]
TREE_TEMPLATES = ["head:NORM", "DEP|HEAD_DIST"]


@pytest.fixture
def hashings(monkeypatch):
    """The templates hashed, call by call (their count and first position)."""
    from spacy_crf.features import extract
    calls = []
    hash_templates = extract.kernels.hash_templates

    def counted(values, begin, end, ptr, col, off, first, out):
        calls.append((ptr.shape[0] - 1, first))
        return hash_templates(values, begin, end, ptr, col, off, first, out)

    monkeypatch.setattr(extract.kernels, "hash_templates", counted)
    return calls


@pytest.mark.parametrize("by_sentence", [True, False])
def test_a_template_list_that_extends_another_hashes_only_its_new_templates(hashings, by_sentence):
    from spacy_crf.features.extract import extract_features
    from spacy_crf.features.templates import FeatureTemplates

    vocab = spacy.blank("en").vocab
    starts = [i in (0, 6) for i in range(len(WORDS))]
    docs = [Doc(vocab, words=WORDS, heads=HEADS, deps=DEPS, sent_starts=starts), parsed(vocab)]
    words, both = FeatureTemplates(WORD_TEMPLATES), FeatureTemplates(WORD_TEMPLATES + TREE_TEMPLATES)
    alone_words = extract_features(docs, words, by_sentence)
    alone_both = extract_features(docs, both, by_sentence)
    assert np.array_equal(alone_both[:, :len(words)], alone_words)  # ids depend on position only
    del hashings[:]
    batch = DocBatch(docs)  # as chain_tree's experts: the chain's templates, then the tree's
    shared_words = extract_features(batch, words, by_sentence)
    shared_both = extract_features(batch, both, by_sentence)
    assert extract_features(batch, words, by_sentence) is shared_words
    assert hashings == [(len(words), 0), (len(both) - len(words), len(words))]
    np.testing.assert_array_equal(shared_words, alone_words)
    np.testing.assert_array_equal(shared_both, alone_both)
    del hashings[:]
    batch = DocBatch(docs)  # the longer list first: the shorter is its first columns
    np.testing.assert_array_equal(extract_features(batch, both, by_sentence), alone_both)
    np.testing.assert_array_equal(extract_features(batch, words, by_sentence), alone_words)
    # other sequences are other features: hashed anew
    extract_features(batch, words, not by_sentence)
    assert hashings == [(len(both), 0), (len(words), 0)]


def test_chain_tree_hashes_the_chains_templates_once_per_batch(hashings):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos", "structure": "chain_tree"})
    examples = [Example(parsed(nlp.vocab), parsed(nlp.vocab, pos=True))]
    nlp.initialize(lambda: examples)
    pipe = nlp.get_pipe("crf_tagger")
    for call in (lambda: pipe.predict([parsed(nlp.vocab)]), lambda: nlp.update(examples)):
        del hashings[:]
        call()
        (n_chain, first_chain), (n_tree, first_tree) = hashings
        assert first_chain == 0 and first_tree == n_chain > 0 and n_tree > 0


def test_a_batch_of_docs_from_two_vocabs_reads_each_ones_strings():
    """Examples made before spacy.load beside the loaded pipeline's: the affixes
    of a word only the other vocab knows are read from that vocab (spaCy's own
    tagger trains on such a batch; this was E018 from the affix table)."""
    import spacy
    from spacy.training import Example

    from conftest import make_nlp
    from spacy_crf.features.doc_arrays import BatchStrings, batch_strings

    nlp = make_nlp("tag")
    old = [Example.from_dict(nlp.make_doc("the cat sat"), {"tags": ["DT", "NN", "VBD"]})]
    optimizer = nlp.initialize(lambda: old)
    other = spacy.blank("en")
    new = [Example.from_dict(other.make_doc("zebras grazed quietly"),
                             {"tags": ["NNS", "VBD", "RB"]})]
    assert "quietly" not in nlp.vocab.strings
    losses = [nlp.update(old + new, sgd=optimizer)["crf_tagger"] for _ in range(30)]
    assert losses[-1] < losses[0] / 4
    assert [t.tag_ for t in nlp(nlp.make_doc("the cat sat"))] == ["DT", "NN", "VBD"]
    strings = batch_strings([old[0].predicted, new[0].predicted])
    assert isinstance(strings, BatchStrings)
    assert strings[other.vocab.strings["quietly"]] == "quietly"
    assert batch_strings([old[0].predicted]) is nlp.vocab.strings
