"""What a crf_tagger stores beside its labels (confidences, span confidences,
n-best lists, ``_.NAME`` labels) follows its tokens through ``doc.retokenize()``
and ``Span.as_doc``, or is dropped where it cannot (issue #48); each component
stores its own, read through extensions named after it (issue #49)."""

import pickle

import pytest
import spacy
from spacy.pipeline.functions import merge_entities
from spacy.tokens import Doc, DocBin
from spacy.training import Example

from spacy_crf.targets import set_doc_labels
from conftest import FROM_INITIALIZE, train

SMALL_MODEL = {"@architectures": "spacy-crf.FeatureCRF.v2", "templates": ["NORM[-1..1]", "SUFFIX3"],
               "n_buckets": 4096}
TEXT = "Barack Obama visited the big city of Paris today ."
POS = ["PROPN", "PROPN", "VERB", "DET", "ADJ", "NOUN", "ADP", "PROPN", "NOUN", "PUNCT"]
ENTS = ["B-PER", "L-PER", "O", "O", "O", "O", "O", "U-LOC", "O", "O"]
CHUNKS = ["B-NP", "I-NP", "B-VP", "B-NP", "I-NP", "I-NP", "B-PP", "B-NP", "B-NP", "O"]


def _train(nlp, examples, steps=15):
    train(nlp, examples, steps, optimizer=FROM_INITIALIZE, component=None)
    return nlp


@pytest.fixture(scope="module")
def pos_ner():
    """A POS and an NER crf_tagger in one pipeline, both storing confidences."""
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", name="pos", config={
        "model": SMALL_MODEL, "target": "pos", "store_confidence": True, "n_best": 2})
    nlp.add_pipe("crf_tagger", name="ner", config={
        "model": SMALL_MODEL, "target": "ents", "store_confidence": True, "n_best": 2})
    doc = nlp.make_doc(TEXT)
    return _train(nlp, [Example.from_dict(doc, {"pos": POS, "entities": ENTS})])


@pytest.fixture(scope="module")
def chunker():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", name="chunker", config={
        "model": SMALL_MODEL, "target": "_.chunk", "store_confidence": True})
    doc = nlp.make_doc(TEXT)
    set_doc_labels(doc, "chunk", CHUNKS)
    return _train(nlp, [Example(nlp.make_doc(TEXT), doc)])


def _confidences(doc, name):
    return [getattr(token._, f"{name}_confidence") for token in doc]


def test_two_components_keep_their_own_confidences(pos_ner):
    doc = pos_ner(TEXT)
    pos, ner = _confidences(doc, "pos"), _confidences(doc, "ner")
    assert all(isinstance(c, float) for c in pos + ner)
    assert pos != ner
    # the shared name cannot tell whose: an error naming each component's own
    with pytest.raises(ValueError, match=r"token\._\.ner_confidence.*token\._\.pos_confidence"):
        doc[0]._.crf_confidence
    with pytest.raises(ValueError, match=r"doc\._\.ner_nbest"):
        doc._.crf_nbest
    # with one of them off, the shared name reads the other's
    with pos_ner.select_pipes(disable=["ner"]):
        alone = pos_ner(TEXT)
    assert [t._.crf_confidence for t in alone] == pos
    assert alone._.crf_nbest == doc._.pos_nbest
    assert doc._.pos_nbest != doc._.ner_nbest


def test_the_pipe_meta_names_each_components_places_and_scores(pos_ner):
    assert pos_ner.get_pipe_meta("pos").scores == ["pos_acc"]
    assert pos_ner.get_pipe_meta("ner").scores == ["ents_f", "ents_p", "ents_r"]
    assigns = pos_ner.analyze_pipes()["summary"]
    assert "token._.pos_confidence" in assigns["pos"]["assigns"]
    assert "token._.ner_confidence" in assigns["ner"]["assigns"]
    assert "span._.ner_confidence" in assigns["ner"]["assigns"]


def test_two_names_that_read_as_one_place_are_refused_in_one_pipeline():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", name="my-tagger", config={"model": SMALL_MODEL})
    with pytest.raises(ValueError, match=r"E190.*'my-tagger' and 'my_tagger'.*my_tagger_conf"):
        nlp.add_pipe("crf_tagger", name="my_tagger", config={"model": SMALL_MODEL})
    # in a pipeline of its own, either name is fine
    other = spacy.blank("en")
    other.add_pipe("crf_tagger", name="my_tagger", config={"model": SMALL_MODEL})
    # and replacing a component by one of the same name is no collision
    nlp.replace_pipe("my-tagger", "crf_tagger", config={"model": SMALL_MODEL})


def test_an_extension_of_another_library_is_not_overwritten():
    from spacy.tokens import Token
    Token.set_extension("theirs_confidence", default=None, force=True)
    try:
        nlp = spacy.blank("en")
        with pytest.raises(ValueError, match=r"E192.*token\._\.theirs_confidence"):
            nlp.add_pipe("crf_tagger", name="theirs", config={"model": SMALL_MODEL})
    finally:
        Token.remove_extension("theirs_confidence")


def test_a_component_named_crf_owns_the_shared_names(pos_ner):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", name="crf", config={
        "model": SMALL_MODEL, "target": "pos", "store_confidence": True})
    nlp.add_pipe("crf_tagger", name="ner", config={
        "model": SMALL_MODEL, "target": "ents", "store_confidence": True})
    doc = nlp.make_doc(TEXT)
    _train(nlp, [Example.from_dict(doc, {"pos": POS, "entities": ENTS})], steps=3)
    doc = nlp(TEXT)
    assert [t._.crf_confidence for t in doc] != _confidences(doc, "ner")
    assert all(isinstance(t._.crf_confidence, float) for t in doc)
    assert nlp.get_pipe_meta("crf").assigns[-1] == "token._.crf_confidence"


def test_confidences_follow_their_tokens_through_a_merge(pos_ner):
    doc = pos_ner(TEXT)
    before = {t.idx: (t.text, t._.pos_confidence, t._.ner_confidence) for t in doc}
    ents = {(e.start_char, e.end_char): e._.ner_confidence for e in doc.ents}
    assert ents and all(isinstance(c, float) for c in ents.values())
    merged = merge_entities(doc)
    assert len(merged) < len(TEXT.split())
    for token in merged:
        if token.ent_type_ and len(token.text.split()) > 1:
            # no one token's value is the merged token's: dropped, never a neighbour's
            assert token._.pos_confidence is None and token._.ner_confidence is None
        else:
            assert (token.text, token._.pos_confidence, token._.ner_confidence) == before[token.idx]
    # an entity keeps its probability: it covers the same characters
    assert {(e.start_char, e.end_char): e._.ner_confidence for e in merged.ents} == ents


def test_a_split_drops_the_split_tokens_values_and_keeps_the_others(pos_ner):
    doc = pos_ner(TEXT)
    before = _confidences(doc, "pos")
    with doc.retokenize() as retokenizer:
        retokenizer.split(doc[2], ["visit", "ed"], heads=[(doc[2], 1), doc[3]])
    after = _confidences(doc, "pos")
    assert len(after) == len(before) + 1
    assert after[2] is None and after[3] is None
    assert after[:2] == before[:2] and after[4:] == before[3:]
    assert doc._.pos_nbest is None  # its labellings are of the tokens it had


def test_as_doc_reads_the_spans_tokens_values(pos_ner):
    doc = pos_ner(TEXT)
    span = doc[4:9]
    part = span.as_doc(copy_user_data=True)
    assert _confidences(part, "pos") == _confidences(span, "pos")
    assert [e._.ner_confidence for e in part.ents] == [
        e._.ner_confidence for e in doc.ents if e.start >= 4 and e.end <= 9]
    assert part._.pos_nbest is None  # the lists are of the whole doc
    whole = doc[:].as_doc(copy_user_data=True)
    assert whole._.pos_nbest == doc._.pos_nbest


def test_values_survive_docbin_and_pickle(pos_ner):
    doc = pos_ner(TEXT)
    data = DocBin(docs=[doc], store_user_data=True).to_bytes()
    (back,) = DocBin().from_bytes(data).get_docs(pos_ner.vocab)
    assert _confidences(back, "pos") == _confidences(doc, "pos")
    # (DocBin reads user data back with tuples for lists, as spaCy does)
    assert back._.ner_nbest == tuple((tuple((p, tuple(labels)) for p, labels in seq))
                                     for seq in doc._.ner_nbest)
    # and as_doc on a doc read back (its lists came back as tuples)
    assert _confidences(back[3:6].as_doc(copy_user_data=True), "ner") == _confidences(
        doc[3:6], "ner")
    assert _confidences(pickle.loads(pickle.dumps(doc)), "ner") == _confidences(doc, "ner")


def test_docs_put_together_keep_each_ones_values(pos_ner):
    first, second = pos_ner(TEXT), pos_ner("Paris is big .")
    joined = Doc.from_docs([first, second])
    assert _confidences(joined, "pos") == _confidences(first, "pos") + _confidences(
        second, "pos")


def test_extension_labels_follow_their_tokens(chunker):
    doc = chunker(TEXT)
    labels = [t._.chunk for t in doc]
    assert labels == CHUNKS
    with doc.retokenize() as retokenizer:
        retokenizer.merge(doc[0:2])
    # "visited" keeps B-VP and "the" B-NP: nothing shifts onto a neighbour
    assert [t._.chunk for t in doc] == [None] + CHUNKS[2:]
    part = doc[2:5].as_doc(copy_user_data=True)
    assert [t._.chunk for t in part] == CHUNKS[3:6]
    # setting a label stores it for the token's characters too
    doc[0]._.chunk = "B-NP"
    assert [t._.chunk for t in doc] == ["B-NP"] + CHUNKS[2:]


def test_labels_of_corpora_written_before_are_read(chunker):
    """A .spacy corpus of the last release kept ``_.NAME`` labels as a plain
    per-doc list: it is still gold."""
    doc = chunker.make_doc(TEXT)
    doc.user_data[("spacy_crf", "chunk")] = list(CHUNKS)
    assert [t._.chunk for t in doc] == CHUNKS
    target = chunker.get_pipe("chunker").target
    assert target.labels_of(doc) == CHUNKS


def test_a_part_made_by_as_doc_lends_no_value_to_the_docs_beside_it(pos_ner, chunker):
    """``as_doc(copy_user_data=True)`` copies the values of the tokens outside
    the span too; ``Doc.from_docs`` shifted them onto the next doc's
    characters, where a token of the same length read another doc's value."""
    source, other = pos_ner(TEXT), pos_ner("Paris is big and old .")
    part = source[0:3].as_doc(copy_user_data=True)  # "Barack Obama visited"
    joined = Doc.from_docs([part, other])
    assert _confidences(joined, "pos") == _confidences(source[0:3], "pos") + _confidences(
        other, "pos")
    assert joined._.pos_nbest is None  # a doc of parts
    # the same with labels, the part second
    chunked, chunked_other = chunker(TEXT), chunker("the cat ran .")
    joined = Doc.from_docs([chunked_other, chunked[3:6].as_doc(copy_user_data=True)])
    assert [t._.chunk for t in joined] == [t._.chunk for t in chunked_other] + CHUNKS[3:6]


def test_values_spacys_merge_overwrote_read_none_not_another_docs(chunker):
    """Where the part's values land on the key of the first doc's (its span
    starts at the first doc's length), spaCy's merge keeps the part's: the
    first doc's tokens read None, not the part's source's labels."""
    source = chunker("the dog sat in the box .")
    first = chunker("sat the dog")  # 11 characters and a space: the span's start
    joined = Doc.from_docs([first, source[3:].as_doc(copy_user_data=True)])
    assert [t._.chunk for t in joined][:3] == [None, None, None]
    assert [t._.chunk for t in joined][3:] == [t._.chunk for t in source[3:]]


def test_an_n_best_list_is_not_read_over_tokens_retokenized_to_the_same_count(pos_ner):
    doc = pos_ner(TEXT)
    assert doc._.ner_nbest is not None
    with doc.retokenize() as retokenizer:
        retokenizer.merge(doc[0:2])
    with doc.retokenize() as retokenizer:
        retokenizer.split(doc[1], ["visit", "ed"], heads=[(doc[1], 1), doc[2]])
    assert len(doc) == len(TEXT.split())
    assert doc._.ner_nbest is None and doc._.pos_nbest is None


def test_values_stored_before_marks_are_read_by_their_characters(pos_ner):
    """An entry of three lists (a .spacy file of the last release) is read as before."""
    from spacy_crf.pipeline.extensions import CONFIDENCE
    from spacy_crf.token_values import entry_key

    doc = pos_ner(TEXT)
    expected = _confidences(doc, "pos")
    entry = doc.user_data[entry_key(CONFIDENCE)]
    doc.user_data[entry_key(CONFIDENCE)] = {owner: stored[:3] for owner, stored in entry.items()}
    assert _confidences(doc, "pos") == expected


def test_register_extensions_reads_stored_values_without_the_pipeline(pos_ner, chunker, tmp_path):
    import subprocess
    import sys

    docs = [pos_ner(TEXT), chunker(TEXT)]
    DocBin(docs=docs, store_user_data=True).to_disk(tmp_path / "d.spacy")
    code = ("import spacy, spacy_crf\nfrom spacy.tokens import DocBin\n"
            "spacy_crf.register_extensions('pos', labels=['chunk'])\n"
            f"a, b = DocBin().from_disk({str(tmp_path / 'd.spacy')!r}).get_docs("
            "spacy.blank('en').vocab)\n"
            "print([t._.pos_confidence for t in a][:2], [t._.chunk for t in b][:2])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"{_confidences(docs[0], 'pos')[:2]} {CHUNKS[:2]}"


def test_a_run_that_stores_no_values_drops_those_an_earlier_run_stored(pos_ner, tmp_path):
    """Docs annotated again (spacy apply on a .spacy file, a DocBin read back)
    by a component of the same name with store_confidence and n_best off: its
    earlier values would read beside labels they are not of."""
    doc = pos_ner(TEXT)
    assert doc.ents and doc.ents[0]._.ner_confidence is not None and doc._.ner_nbest
    pos_ner.to_disk(tmp_path / "m")
    quiet = spacy.load(tmp_path / "m", config={
        "components": {"ner": {"store_confidence": False, "n_best": 0}}})
    again = quiet(Doc(pos_ner.vocab).from_bytes(doc.to_bytes()))
    assert _confidences(again, "ner") == [None] * len(again)
    assert all(ent._.ner_confidence is None for ent in again.ents)
    assert again._.ner_nbest is None
    # the component that stores them again stores its new ones
    assert all(isinstance(c, float) for c in _confidences(again, "pos")) and again._.pos_nbest
    assert again[0]._.crf_confidence == again[0]._.pos_confidence  # ner's are gone


def test_e191_names_the_call_that_registers_the_own_extensions(pos_ner):
    with pytest.raises(ValueError, match=r"register_extensions\('ner', 'pos'\)"):
        pos_ner(TEXT)[0]._.crf_confidence


class _CountingDict(dict):
    """A doc's user data that counts how often it is walked through."""

    walks = 0

    def __iter__(self):
        type(self).walks += 1
        return super().__iter__()


def test_reads_that_find_no_value_do_not_walk_the_user_data_each_time(pos_ner):
    """A token merged away, or a span not predicted, reads None: finding that
    looked for shifted entries over every key of the user data each time, so
    with a per-token extension value set on each token reading every token
    was O(n^2)."""
    from spacy.tokens import Token

    Token.set_extension("plain_note", default=None, force=True)
    try:
        doc = pos_ner(TEXT)
        for token in doc:
            token._.plain_note = "x"  # a user data key per token
        with doc.retokenize() as retokenizer:
            retokenizer.merge(doc[0:2])
        doc.user_data = _CountingDict(doc.user_data)
        _CountingDict.walks = 0
        confidences = [t._.pos_confidence for t in doc for _ in range(5)]
        assert confidences[0] is None and confidences[-1] is not None
        assert _CountingDict.walks <= 2
    finally:
        Token.remove_extension("plain_note")


def test_setting_each_tokens_label_keeps_every_other(chunker):
    doc = chunker("Barack Obama visited the big city of Paris today .")
    part = doc[2:5].as_doc(copy_user_data=True)
    before = [t._.chunk for t in doc]
    labels = [f"B-{i}" for i in range(len(part))]
    for token, label in zip(part, labels):
        token._.chunk = label
    assert [t._.chunk for t in part] == labels
    assert [t._.chunk for t in doc] == before  # the doc the part came from: unchanged
    doc[3]._.chunk = "I-X"
    assert [t._.chunk for t in doc] == before[:3] + ["I-X"] + before[4:]
