"""Entity sets of OntoNotes size and 1,000 entity types (issue #51).

A span target's ``order = null`` is chosen at ``initialize`` from its
scheme's label triples (``structures/chain.py``: order 2 up to
``DEFAULT_ORDER2_TRIPLES``, order 1 above, and the pruned chain above
``DEFAULT_PRUNED_SPAN_LABELS`` tags), and the factory's weight table
(``n_buckets = null``) gets fewer rows where many labels would make it
larger (``hashed_linear.table_rows``; W039 below 2^18 rows).
"""

import random
import warnings

import numpy as np
import pytest
import spacy
from spacy.lang.en import English
from spacy.tokens import Doc
from spacy.training import Example

from spacy_crf import schemes
from spacy_crf.models import hashed_linear
from spacy_crf.models.hashed_linear import NAME as TABLE, table_rows
from spacy_crf.models.potentials import find_potentials
from spacy_crf.structures.chain import (DEFAULT_ORDER2_TRIPLES, DEFAULT_PRUNED_SPAN_LABELS,
                                        PRUNED_MARGIN, SPAN_CANDIDATES)
from spacy_crf.structures.second_order import allowed_pairs, allowed_triples

from conftest import SPELLING_ONLY

MODEL = {"@architectures": "spacy-crf.FeatureCRF.v2",
         "templates": ["NORM[-1..1]", "SUFFIX2", "IS_TITLE[-1..1]"], "n_buckets": 4096,
         **SPELLING_ONLY}
WORDS = "Ann met Bob Lee in Paris on Monday with Acme Corp staff".split()


def ner_examples(vocab, n_types: int):
    """Sentences whose entities take ``n_types`` types (every type seen)."""
    out = []
    for i in range(n_types):
        ents = ["B-T%d" % i, "I-T%d" % i] + ["O"] * 3 + ["B-T%d" % ((i + 1) % n_types)] \
            + ["O"] * 6
        out.append(Example(Doc(vocab, words=WORDS), Doc(vocab, words=WORDS, ents=ents)))
    return out


def trained(n_types: int, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": dict(MODEL), "target": "ents", **config})
    examples = ner_examples(nlp.vocab, n_types)
    nlp.initialize(lambda: examples)
    for _ in range(3):
        nlp.update(examples)
    return nlp


def has_triples(nlp) -> bool:
    return bool(find_potentials(nlp.get_pipe("crf_tagger").model).has_param("triples"))


@pytest.mark.parametrize("scheme", ["BILUO", "BIO"])
@pytest.mark.parametrize("n_types", [1, 3, 7])
def test_allowed_triples_counts_the_pair_graph_edges(scheme, n_types):
    tags = schemes.tag_set([f"T{i}" for i in range(n_types)], scheme)
    allowed, start, _ = schemes.allowed_moves(tags, scheme)
    pairs = allowed_pairs(allowed, start)
    # brute force: pairs (a, b) and (b, c) join where the first's label is the second's previous
    edges = sum(1 for _, b in pairs for prev, _ in pairs if prev == b)
    assert allowed_triples(allowed, start) == edges


def test_few_types_keep_order_2_and_many_take_order_1():
    few, many = trained(3), trained(18)
    assert few.get_pipe("crf_tagger").cfg["order"] == 2 and has_triples(few)
    assert many.get_pipe("crf_tagger").cfg["order"] == 1 and not has_triples(many)
    # (the bound sits between: 6 BILUO types are order 2, 8 are not)
    assert 1622 <= DEFAULT_ORDER2_TRIPLES < 3346


def test_an_order_given_in_the_config_is_kept_whatever_the_label_count():
    nlp = trained(18, structure={"@structures": "spacy-crf.Chain.v1", "order": 2})
    assert nlp.get_pipe("crf_tagger").cfg["order"] == 2 and has_triples(nlp)


def test_a_fresh_initialize_chooses_again_for_its_labels():
    nlp = trained(18)
    few = ner_examples(nlp.vocab, 3)
    nlp.initialize(lambda: few)
    assert nlp.get_pipe("crf_tagger").cfg["order"] == 2 and has_triples(nlp)
    nlp.update(few)
    many = ner_examples(nlp.vocab, 18)
    nlp.initialize(lambda: many)
    assert nlp.get_pipe("crf_tagger").cfg["order"] == 1 and not has_triples(nlp)


@pytest.mark.parametrize("n_types,order", [(3, 2), (18, 1)])
def test_the_chosen_order_is_saved_and_loads_predicting_the_same(tmp_path, n_types, order):
    nlp = trained(n_types)
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    assert loaded.get_pipe("crf_tagger").cfg["order"] == order
    for text in ("Ann met Bob Lee in Paris", "Acme Corp staff met Ann on Monday"):
        a, b = nlp(text), loaded(text)
        assert [(e.start, e.end, e.label_) for e in a.ents] == \
            [(e.start, e.end, e.label_) for e in b.ents]


def test_a_wide_table_gets_fewer_rows():
    assert table_rows(17) == 2 ** 20  # 4 types
    assert table_rows(73) == 2 ** 19  # 18 types: 146 MiB
    assert table_rows(4001) == 2 ** 16  # 1,000 types: 1,000 MiB, not 16 GiB
    assert table_rows(10 ** 10) == 1


def test_a_table_above_the_wide_bound_gets_fewer_rows_and_loads_so(tmp_path, monkeypatch):
    # a bound of 1 MiB: 13 labels x 2^20 rows x 4 bytes (52 MiB) halve to 2^14 (832 KiB)
    monkeypatch.setattr(hashed_linear, "WIDE_TABLE_BYTES", 2 ** 20)
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"model": {**MODEL, "n_buckets": None},
                                       "target": "ents"})
    examples = ner_examples(nlp.vocab, 3)
    with pytest.warns(UserWarning, match=r"\[CRF-W039\].*13 columns.*16384 rows"):
        nlp.initialize(lambda: examples)
    table = next(n for n in nlp.get_pipe("crf_tagger").model.walk() if n.name == TABLE)
    assert table.get_param("W").shape == (2 ** 14, 13)
    nlp.update(examples)
    nlp.to_disk(tmp_path / "p")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a load allocates nothing anew: no W039
        loaded = spacy.load(tmp_path / "p")
    loaded_table = next(n for n in loaded.get_pipe("crf_tagger").model.walk() if n.name == TABLE)
    np.testing.assert_array_equal(loaded_table.get_param("W"), table.get_param("W"))
    text = "Ann met Bob Lee in Paris"
    assert [e.label_ for e in nlp(text).ents] == [e.label_ for e in loaded(text).ents]


def test_issue2800_1000_entity_types_train():
    """spaCy's test_issue2800 (tests/parser/test_ner.py) with crf_tagger: 1,000
    entity types (4,001 BILUO labels) added to a blank English pipeline with
    the factory's defaults train without an error (order 2 refused them with
    E147, and their table with E161), over the pruned chain that ``order =
    null`` takes above ``DEFAULT_PRUNED_SPAN_LABELS`` tags (each update was
    0.6 s of L^2 work at order 1)."""
    nlp = English()
    train_data = [Example.from_dict(nlp.make_doc("One sentence"), {"entities": []})]
    ner = nlp.add_pipe("crf_tagger", config={"target": "ents"})
    for entity_type in [str(i) for i in range(1000)]:
        ner.add_label(entity_type)
    with pytest.warns(UserWarning, match=r"\[CRF-W039\].*65536 rows"):
        optimizer = nlp.initialize()
    for _ in range(20):
        losses = {}
        random.shuffle(train_data)
        for example in train_data:
            nlp.update([example], sgd=optimizer, losses=losses, drop=0.5)
    assert len(ner.tags) == 4001 and ner.crf_structure.name == "pruned_chain"
    assert "order" not in ner.cfg and ner.cfg["margin"] == PRUNED_MARGIN
    assert ner.cfg["candidates"] == SPAN_CANDIDATES
    assert np.isfinite(losses["crf_tagger"])
    assert nlp("One sentence").ents == ()


def test_many_tags_take_the_pruned_chain(tmp_path):
    """Above ``DEFAULT_PRUNED_SPAN_LABELS`` tags the pruned chain (saved with
    the component, the chain's order left out of its cfg), span confidences
    too (the full chain's); an order given in the config is kept."""
    n_types = DEFAULT_PRUNED_SPAN_LABELS // 4 + 1  # BILUO: 4 tags a type, and O
    many = trained(n_types)
    pipe = many.get_pipe("crf_tagger")
    assert len(pipe.tags) > DEFAULT_PRUNED_SPAN_LABELS
    assert pipe.crf_structure.name == "pruned_chain" and "order" not in pipe.cfg
    many.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p").get_pipe("crf_tagger")
    assert loaded.crf_structure.name == "pruned_chain" and "order" not in loaded.cfg
    text = "Ann met Bob Lee in Paris on Monday"
    assert [(e.start, e.end, e.label_) for e in many(text).ents] == \
        [(e.start, e.end, e.label_) for e in loaded.pipe([many.make_doc(text)]).__next__().ents]
    sure = trained(n_types, store_confidence=True)
    assert sure.get_pipe("crf_tagger").crf_structure.name == "pruned_chain"
    assert all(0.0 < e._.crf_confidence <= 1.0 for e in sure(text).ents)
    given = trained(n_types, structure={"@structures": "spacy-crf.Chain.v1", "order": 1})
    assert given.get_pipe("crf_tagger").crf_structure.name == "chain"
