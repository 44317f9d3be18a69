"""The ``morph`` target: ``Token.morph`` and ``Token.pos`` as one label per token,
as spaCy's morphologizer makes them (issue #51): gold reading, writing, label
parts, scores, saving and loading, unseen labels, missing annotation, config
filling and a short training on the shipped EWT sample."""

import warnings
from collections import Counter

import numpy as np
import pytest
import spacy
from spacy.attrs import MORPH, POS
from spacy.pipeline.morphologizer import morphologizer_score
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import load_model_from_config

from conftest import FROM_INITIALIZE, ewt_sample_docs, filled_config, make_nlp, train, train_epochs
from spacy_crf.scoring import MAIN_SCORE, default_score_weights, main_score_key, score_crf
from spacy_crf.targets import MorphTarget, make_target

WORDS = ["The", "dogs", "ran", "home", "."]
POS_TAGS = ["DET", "NOUN", "VERB", "ADV", "PUNCT"]
FEATS = ["Definite=Def|PronType=Art", "Number=Plur", "Mood=Ind|Tense=Past|VerbForm=Fin", "_", "_"]
LABELS = ["Definite=Def|POS=DET|PronType=Art", "Number=Plur|POS=NOUN",
          "Mood=Ind|POS=VERB|Tense=Past|VerbForm=Fin", "POS=ADV", "POS=PUNCT"]


def gold_doc(vocab, words=WORDS, pos=POS_TAGS, morphs=FEATS):
    return Doc(vocab, words=words, pos=pos, morphs=morphs)


def gold_examples(nlp, n=4):
    """The five-token sentence and a variant, each as an Example with a bare
    predicted doc."""
    other = gold_doc(nlp.vocab, ["A", "dog", "runs", "home", "."],
                     ["DET", "NOUN", "VERB", "ADV", "PUNCT"],
                     ["Definite=Ind|PronType=Art", "Number=Sing",
                      "Mood=Ind|Number=Sing|Person=3|Tense=Pres|VerbForm=Fin", "_", "_"])
    docs = [gold_doc(nlp.vocab), other] * (n // 2)
    return [Example(Doc(nlp.vocab, words=[t.text for t in d]), d) for d in docs]


def morph_nlp(**config):
    return make_nlp("morph", **config)


def trained(n_iter=30, **config):
    nlp = morph_nlp(**config)
    examples = gold_examples(nlp)
    train(nlp, examples, n_iter, optimizer=FROM_INITIALIZE)
    return nlp, examples


# ----------------------------------------------------------------- gold reading


def test_labels_join_the_pos_into_the_feats_as_spacys_morphologizer_does():
    nlp = spacy.blank("en")
    target = make_target("morph")
    assert isinstance(target, MorphTarget)
    assert sorted(target.label_strings(gold_doc(nlp.vocab))) == sorted(LABELS)


def test_key_of_a_label_is_the_key_gold_gives_its_tokens():
    nlp = spacy.blank("en")
    target = make_target("morph")
    keys = target.reference_keys(gold_doc(nlp.vocab))
    assert keys.dtype == np.uint64 and (keys != target.missing_key).all()
    assert keys.tolist() == [target.key_of(label, nlp.vocab) for label in LABELS]
    # the key does not depend on how the label's fields are ordered
    assert target.key_of("POS=NOUN|Number=Plur", nlp.vocab) == keys[1]


def test_a_token_with_neither_morph_nor_pos_is_unannotated():
    nlp = spacy.blank("en")
    target = make_target("morph")
    # (Doc(morphs=[""]) would set the empty FEATS "_": unset morphs come from arrays)
    doc = Doc(nlp.vocab, words=["a", "b", "c"], pos=["NOUN", "", "VERB"])
    doc.from_array([MORPH], np.asarray([nlp.vocab.morphology.add("Number=Plur"), 0, 0],
                                       dtype=np.uint64))
    assert not doc[1].has_morph() and not doc[2].has_morph()
    keys = target.reference_keys(doc)
    assert keys[1] == target.missing_key and keys[0] != target.missing_key
    # a POS without FEATS (morph unset) is the label "POS=X", the same as FEATS "_"
    assert target.string_of(doc, int(keys[2])) == "POS=VERB"
    assert keys[2] == target.key_of("POS=VERB", nlp.vocab)
    assert sorted(target.label_strings(doc)) == ["Number=Plur|POS=NOUN", "POS=VERB"]
    target.set_labels(["Number=Plur|POS=NOUN", "POS=VERB"], nlp.vocab)
    ids = target.gold_ids(Example(Doc(nlp.vocab, words=["a", "b", "c"]), doc))
    assert ids.tolist() == [0, -1, 1]


def test_a_pos_written_into_the_feats_reads_as_the_pos():
    """Example.from_dict's "morphs" may carry the labels as the docs write them
    ("Number=Plur|POS=NOUN"): the POS field is the token's POS, so the gold
    keys are the labels' keys and the component learns them."""
    nlp = spacy.blank("en")
    target = make_target("morph")
    joined = Doc(nlp.vocab, words=WORDS, morphs=LABELS)
    assert joined[1].pos_ == "" and "POS=NOUN" in str(joined[1].morph)
    assert sorted(target.label_strings(joined)) == sorted(LABELS)
    assert target.reference_keys(joined).tolist() == \
        target.reference_keys(gold_doc(nlp.vocab)).tolist()
    # a POS of the token's own wins over one in its FEATS, as label_of reads it
    both = Doc(nlp.vocab, words=["dogs"], pos=["PROPN"], morphs=["Number=Plur|POS=NOUN"])
    assert target.label_strings(both) == ["Number=Plur|POS=PROPN"]

    nlp = morph_nlp()
    examples = [Example(Doc(nlp.vocab, words=WORDS), Doc(nlp.vocab, words=WORDS, morphs=LABELS))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no W001: every gold label is a label
        train(nlp, examples * 4, 30, optimizer=FROM_INITIALIZE)
    doc = nlp(Doc(nlp.vocab, words=WORDS))
    assert [t.pos_ for t in doc] == POS_TAGS
    assert [str(t.morph) or "_" for t in doc] == [f or "_" for f in FEATS]


def test_feats_without_a_pos_is_a_label_of_its_own():
    nlp = spacy.blank("en")
    target = make_target("morph")
    doc = Doc(nlp.vocab, words=["a", "b"], morphs=["Number=Sing", "_"])
    assert sorted(target.label_strings(doc)) == ["Number=Sing", "_"]
    assert (target.reference_keys(doc) != 0).all()


def test_a_doc_without_morph_annotation_has_no_gold():
    nlp = spacy.blank("en")
    target = make_target("morph")
    target.set_labels(LABELS, nlp.vocab)
    doc = Doc(nlp.vocab, words=["no", "annotation", "here"])
    assert (target.reference_keys(doc) == 0).all() and target.label_strings(doc) == []
    assert (target.gold_ids(Example(Doc(nlp.vocab, words=doc.text.split()), doc)) == -1).all()


def test_a_pos_that_is_no_upos_is_refused():
    with pytest.raises(ValueError, match="E200"):
        make_target("morph").set_labels(["Number=Sing|POS=NN"], spacy.blank("en").vocab)


# ---------------------------------------------------------------------- writing


def test_writing_sets_morph_and_pos_and_reads_back_as_the_same_labels():
    nlp = spacy.blank("en")
    target = make_target("morph")
    labels = sorted(LABELS + ["Number=Sing", "_"])
    target.set_labels(labels, nlp.vocab)
    ids = np.random.default_rng(0).integers(0, len(labels), 40)
    doc = Doc(nlp.vocab, words=[f"w{i}" for i in range(40)])
    target.write(doc, ids)
    assert target.ids_of_keys(target.reference_keys(doc)).tolist() == ids.tolist()
    for token, i in zip(doc, ids):
        feats = labels[i].split("|")
        pos = [f[4:] for f in feats if f.startswith("POS=")]
        assert token.pos_ == (pos[0] if pos else "")
        rest = "|".join(f for f in feats if not f.startswith("POS=") and f != "_")
        assert str(token.morph) == rest
        assert token.morph.key == nlp.vocab.morphology.add(rest)  # "_" when empty


def test_predictions_set_token_morph_and_pos():
    nlp, examples = trained()
    doc = nlp(examples[0].reference.text)
    assert [t.pos_ for t in doc] == POS_TAGS
    assert [str(t.morph) or "_" for t in doc] == FEATS
    assert nlp.get_pipe_meta("crf_tagger").assigns == ["token.morph", "token.pos"]


@pytest.mark.parametrize("keep", [False, True])
def test_keep_existing_as_for_pos_and_tag(keep):
    nlp, examples = trained(keep_existing=keep)
    doc = nlp.make_doc(examples[0].reference.text)
    # a known label, not the one the model predicts here (an unknown one is
    # decoded anew either way, as for pos and tag)
    doc[1].pos_ = "NOUN"
    doc[1].set_morph("Number=Sing")
    doc = nlp(doc)
    assert str(doc[1].morph) == ("Number=Sing" if keep else "Number=Plur")
    assert nlp.get_pipe("crf_tagger").keep_existing is keep


def test_keep_existing_keeps_a_pos_alone_and_decodes_feats_for_it():
    """A POS from a tagger or a rule, no FEATS: spaCy's morphologizer with
    overwrite = false keeps the POS and fills in the morph; here the FEATS are
    decoded among the labels with that POS (it wrote "POS=NOUN"'s empty FEATS,
    and nothing, before)."""
    nlp, examples = trained(keep_existing=True)
    doc = nlp.make_doc(examples[0].reference.text)  # The dogs ran home .
    doc[2].pos_ = "NOUN"  # "ran": a POS alone, not the predicted VERB
    doc = nlp(doc)
    assert doc[2].pos_ == "NOUN"
    assert str(doc[2].morph) in ("Number=Plur", "Number=Sing")  # a NOUN label's FEATS
    assert [t.pos_ for t in doc][:2] == ["DET", "NOUN"]  # the rest decoded as ever
    # FEATS alone: kept, and the POS decoded among the labels with them
    doc = nlp.make_doc(examples[0].reference.text)
    doc[1].set_morph("Number=Sing")
    doc = nlp(doc)
    assert str(doc[1].morph) == "Number=Sing" and doc[1].pos_ == "NOUN"
    # a POS alone that no label has is kept, but cannot condition: W044
    doc = nlp.make_doc(examples[0].reference.text)
    doc[2].pos_ = "SYM"
    with pytest.warns(UserWarning, match="W044"):
        assert nlp(doc)[2].pos_ == "SYM"
    # overwritten by default, as the morphologizer (overwrite = true)
    nlp_default, _ = trained()
    doc = nlp_default.make_doc(examples[0].reference.text)
    doc[2].pos_ = "NOUN"
    assert nlp_default(doc)[2].pos_ == "VERB"


def test_a_kept_pos_an_order_2_chain_has_no_pair_for_is_decoded_freely_w046():
    """A POS alone rules out the labels of other POS (masked scores, no fixed
    label): where that leaves an order-2 chain no pair it saw, the sequence is
    decoded as if nothing were kept (W046), not as a labelling of -inf (every
    token the first label's FEATS, confidence 0)."""
    order_2 = {"@structures": "spacy-crf.Chain.v1", "order": 2}
    nlp, examples = trained(keep_existing=True, structure=order_2, store_confidence=True)
    text = examples[0].reference.text  # The dogs ran home .
    free = nlp(nlp.make_doc(text))
    doc = nlp.make_doc(text)
    doc[2].pos_ = "NOUN"  # NOUN after NOUN: a pair the chain never saw
    with pytest.warns(UserWarning, match="W046"):
        doc = nlp(doc)
    assert doc[2].pos_ == "NOUN"  # kept
    assert [str(t.morph) for t in doc] == [str(t.morph) for t in free]
    assert min(t._.crf_confidence for t in doc) > 0.5


def test_a_doc_on_a_vocab_of_its_own_gets_its_morphs():
    """A doc made on another vocab lacks the labels' FEATS in its strings:
    they are added there, not E109 (spaCy's E018 inside)."""
    nlp, _ = trained()
    other = spacy.blank("en").vocab  # (English lexical attributes: the same features)
    doc = nlp(Doc(other, words=WORDS))
    assert [t.pos_ for t in doc] == POS_TAGS
    assert [str(t.morph) or "_" for t in doc] == [f or "_" for f in FEATS]
    mixed = list(nlp.pipe([nlp.make_doc("The dogs ran home ."),
                           Doc(spacy.blank("en").vocab, words=WORDS)]))
    assert [str(t.morph) for t in mixed[1]] == [str(t.morph) for t in mixed[0]]


def test_gold_with_the_pos_in_its_feats_is_scored_as_learned():
    """Gold morphs like "Number=Plur|POS=NOUN" with no POS: the component learns
    and writes the POS as Token.pos, and the scores read the gold's POS field
    as its POS (morph_acc was 0.0 however well it learned)."""
    nlp = morph_nlp()
    gold = Doc(nlp.vocab, words=WORDS, morphs=LABELS)
    examples = [Example(Doc(nlp.vocab, words=WORDS), gold)] * 4
    train(nlp, examples, 30, optimizer=FROM_INITIALIZE)
    scores = nlp.evaluate(examples)
    assert scores["morph_acc"] == scores["pos_acc"] == 1.0
    assert scores["morph_per_feat"]["Number"]["f"] == 1.0 and "POS" not in scores["morph_per_feat"]
    # and a wrong POS counts against pos_acc, not against morph_acc
    pred = Doc(nlp.vocab, words=WORDS, pos=["DET", "VERB", "VERB", "ADV", "PUNCT"], morphs=FEATS)
    scores = score_crf([Example(pred, gold)], target="morph")
    assert scores["pos_acc"] == pytest.approx(4 / 5) and scores["morph_acc"] == 1.0


# ------------------------------------------------------------------ label parts


def test_label_parts_and_group():
    target = make_target("morph")
    assert target.label_parts("Number=Sing|POS=NOUN") == ["POS=NOUN", "Number=Sing"]
    assert target.label_group("Number=Sing|POS=NOUN") == "POS=NOUN"
    assert target.label_parts("POS=PUNCT") == ["POS=PUNCT"]
    assert target.label_parts("Number=Sing") == ["Number=Sing"]
    assert target.label_group("Number=Sing") == ""
    assert target.label_parts("_") == [] and target.label_group("_") == ""
    # a field with several values is one part
    assert target.label_parts("POS=PRON|PronType=Int,Rel") == ["POS=PRON", "PronType=Int,Rel"]


@pytest.mark.parametrize("bad", ["Number", "Plural", "Number=Sing|Tense", "Number=|POS=NOUN",
                                 "=Sing|POS=NOUN", "POS=NOUN|POS=VERB",
                                 "Number=Plur|Number=Sing|POS=NOUN"])
def test_a_label_that_is_not_feats_is_refused_before_anything_changes(bad):
    nlp, examples = trained(n_iter=5)
    pipe = nlp.get_pipe("crf_tagger")
    labels, before = pipe.labels, [str(t.morph) for t in nlp(Doc(nlp.vocab, words=WORDS))]
    with pytest.raises(ValueError, match=r"\[CRF-E201\].*'Number=Sing\|POS=NOUN'"):
        pipe.add_label(bad)
    with pytest.raises(ValueError, match=r"\[CRF-E201\]"):
        make_target("morph").set_labels(["POS=NOUN", bad], nlp.vocab)
    fresh = morph_nlp().get_pipe("crf_tagger")
    with pytest.raises(ValueError, match=r"\[CRF-E201\]"):
        fresh.initialize(lambda: examples, nlp=nlp, labels=["POS=NOUN", bad])
    assert pipe.labels == labels
    assert [str(t.morph) for t in nlp(Doc(nlp.vocab, words=WORDS))] == before


def test_add_label_normalises_the_label():
    nlp = morph_nlp()
    pipe = nlp.get_pipe("crf_tagger")
    assert pipe.add_label("POS=NOUN|Number=Sing") == 1
    assert pipe.add_label("Number=Sing|POS=NOUN") == 0
    assert pipe.labels == ("Number=Sing|POS=NOUN",)


# ----------------------------------------------------------------------- scores


def test_scores_are_spacys_morphologizer_scores():
    nlp = spacy.blank("en")
    gold = gold_doc(nlp.vocab)
    pred = gold_doc(nlp.vocab, pos=["DET", "NOUN", "NOUN", "ADV", "PUNCT"],
                    morphs=["Definite=Def|PronType=Art", "Number=Sing", "Number=Sing", "_", "_"])
    examples = [Example(pred, gold)]
    scores = score_crf(examples, target="morph")
    expected = morphologizer_score(examples)
    assert scores["morph_per_feat"] == expected["morph_per_feat"]
    for key in ("pos_acc", "morph_acc", "morph_micro_f"):
        assert scores[key] == pytest.approx(expected[key]), key
    assert scores["pos_acc"] == pytest.approx(4 / 5) and scores["morph_acc"] == pytest.approx(3 / 5)
    assert scores[MAIN_SCORE] == scores["morph_acc"]
    assert scores["crf_acc"] == pytest.approx(3 / 5)  # the joined labels


def test_main_score_and_weights():
    assert main_score_key("morph") == "morph_acc"
    assert default_score_weights("morph") == {"morph_acc": 1.0, "pos_acc": 0.0,
                                              "morph_per_feat": None}
    nlp = morph_nlp()
    assert nlp.config["training"]["score_weights"] == default_score_weights("morph")


def test_nlp_evaluate_reports_the_morphologizer_keys():
    nlp, examples = trained()
    scores = nlp.evaluate(examples)
    assert scores["pos_acc"] == scores["morph_acc"] == 1.0
    assert set(scores["morph_per_feat"]) >= {"Number", "Definite", "Tense"}


# --------------------------------------------------------------- save and load


def test_saved_and_loaded_pipelines_predict_the_same(tmp_path):
    nlp, examples = trained(n_iter=5)
    texts = ["The dog runs home .", "A dogs ran ."]
    before = [d.to_array([MORPH, POS]).tolist() for d in nlp.pipe(texts)]
    nlp.to_disk(tmp_path / "model")
    for loaded in (spacy.load(tmp_path / "model"),
                   morph_nlp().from_disk(tmp_path / "model")):
        docs = list(loaded.pipe(texts))
        assert [d.to_array([MORPH, POS]).tolist() for d in docs] == before
        assert [str(t.morph) for t in docs[0]] == [str(t.morph) for t in nlp(texts[0])]
    # the pipe alone, from bytes into a fresh vocab: the FEATS strings come with the labels
    fresh = morph_nlp()
    fresh.get_pipe("crf_tagger").from_bytes(nlp.get_pipe("crf_tagger").to_bytes())
    assert [str(t.morph) for t in fresh(texts[0])] == [str(t.morph) for t in nlp(texts[0])]


# ---------------------------------------------------------------- unseen labels


def test_an_unseen_label_at_update_warns_and_trains_on():
    nlp, examples = trained(n_iter=2)
    new = gold_doc(nlp.vocab, morphs=["Definite=Def|PronType=Art", "Number=Plur", "Mood=Imp",
                                      "_", "_"])
    eg = Example(Doc(nlp.vocab, words=WORDS), new)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        losses = nlp.update([eg], sgd=nlp.create_optimizer())
    assert any("W001" in str(w.message) and "Mood=Imp|POS=VERB" in str(w.message)
               for w in caught)
    assert np.isfinite(losses["crf_tagger"])


def test_a_doc_with_no_morph_annotation_trains_and_predicts():
    nlp, examples = trained(n_iter=2)
    bare = Doc(nlp.vocab, words=["no", "annotation", "."])
    losses = nlp.update([Example(Doc(nlp.vocab, words=["no", "annotation", "."]), bare)],
                        sgd=nlp.create_optimizer())
    assert losses["crf_tagger"] == 0.0
    doc = nlp("no annotation .")
    assert all(t.pos_ for t in doc)


# ------------------------------------------------------------------- configs


def test_fill_config_works_from_the_factory_and_target_alone(tmp_path):
    config = filled_config(tmp_path, "morph", "morph")
    assert config["components"]["morph"]["target"] == "morph"
    assert config["training"]["score_weights"]["morph_acc"] == 1.0
    nlp = load_model_from_config(config, auto_fill=True)
    assert nlp.get_pipe("morph").target.name == "morph"


# ---------------------------------------------------------- the EWT sample


def test_a_short_training_on_the_sample_beats_the_majority_label():
    train = ewt_sample_docs("train")
    dev = ewt_sample_docs("dev")
    nlp = spacy.blank("en")
    # the factory's model, with a smaller table (112 labels x 2**16 rows)
    nlp.add_pipe("crf_tagger", config={"target": "morph", "model": {"n_buckets": 65536}})
    examples = [Example(Doc(nlp.vocab, words=[t.text for t in d]), d) for d in train]
    train_epochs(nlp, examples)
    target = nlp.get_pipe("crf_tagger").target
    counts = Counter(label for d in train for label in
                     [target.string_of(d, int(k)) for k in target.reference_keys(d)])
    majority = counts.most_common(1)[0][1] / sum(counts.values())
    scores = nlp.evaluate([Example(Doc(nlp.vocab, words=[t.text for t in d]), d) for d in dev])
    # (measured: majority 0.11; labels 0.89, morph_acc and pos_acc 0.92)
    assert majority < 0.15
    assert scores["crf_acc"] > 0.8 and scores["morph_acc"] > 0.85 and scores["pos_acc"] > 0.85
