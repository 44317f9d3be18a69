"""The ``lemma`` target: ``Token.lemma_`` as one edit tree per token, as spaCy's
edit tree lemmatizer makes them (issue #52): tree labels from gold, each
token's candidates (the trees that apply to its form), backoff, writing,
scores, saving and loading, unseen trees, missing annotation, config filling
and a short training on the shipped EWT sample."""

import warnings

import numpy as np
import pytest
import spacy
from spacy.pipeline._edit_tree_internals.edit_trees import EditTrees
from spacy.scorer import Scorer
from spacy.strings import StringStore
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import load_model_from_config

from conftest import FROM_INITIALIZE, ewt_sample_docs, filled_config, make_nlp, train, train_epochs
from spacy_crf import inference
from spacy_crf.scoring import MAIN_SCORE, default_score_weights, main_score_key, score_crf
from spacy_crf.targets import LemmaTarget, make_target, parse_edit_tree
from spacy_crf.targets.lemma import apply_edit_tree

WORDS = ["The", "dogs", "walked", "home", "and", "is", "walking", "."]
LEMMAS = ["the", "dog", "walk", "home", "and", "be", "walk", "."]
STRIP_S = "(m 0 1 () (s 's' ''))"


def tree_string(form, lemma):
    trees = EditTrees(StringStore())
    return trees.tree_to_str(trees.add(form, lemma))


def gold_doc(vocab, words=WORDS, lemmas=LEMMAS):
    return Doc(vocab, words=words, lemmas=lemmas)


def lemma_nlp(**config):
    return make_nlp("lemma", **config)


def trained(n_iter=20, **config):
    nlp = lemma_nlp(**config)
    # three of each: initialize keeps the trees seen 3+ times, as spaCy's lemmatizer
    examples = [Example(Doc(nlp.vocab, words=WORDS), gold_doc(nlp.vocab))] * 3
    train(nlp, examples, n_iter, optimizer=FROM_INITIALIZE)
    return nlp, examples


# ----------------------------------------------------------------- gold reading


def test_labels_are_spacys_edit_trees_of_the_gold_pairs():
    nlp = spacy.blank("en")
    target = make_target("lemma")
    assert isinstance(target, LemmaTarget) and target.many_labels
    # The -> the: lowercase, then keep every letter (not a tree that names the T)
    expected = {tree_string(w, l) for w, l in zip(WORDS[1:], LEMMAS[1:])} | {"lower (m 0 0 () ())"}
    assert set(target.label_strings(gold_doc(nlp.vocab))) == expected
    assert STRIP_S in expected and "(s 'is' 'be')" in expected
    assert "(m 0 0 () ())" in expected  # home -> home


@pytest.mark.parametrize("form,lemma,label", [
    ("dogs", "dog", STRIP_S),
    ("Dogs", "dog", "lower " + STRIP_S),  # any first letter: one label
    ("Cats", "cat", "lower " + STRIP_S),
    ("IPO", "ipo", "lower (m 0 0 () ())"),
    ("TEHRAN", "Tehran", "capitalize (m 0 0 () ())"),
    ("israelians", "Israelian", "capitalize " + STRIP_S),
    ("Paris", "Paris", "(m 0 0 () ())"),  # the lemma keeps the form's capitals
    ("USA", "USA", "(m 0 0 () ())"),
    ("iPhones", "iPhone", STRIP_S),
    ("I", "I", "(m 0 0 () ())"),
    ("3", "3", "(m 0 0 () ())"),
    # İ lowercases to i, not to i and a combining dot no lemma has
    ("İSTANBUL", "istanbul", "lower (m 0 0 () ())"),
    ("BİLGİ", "bilgi", "lower (m 0 0 () ())"),
    ("İZMİR", "İzmir", "capitalize (m 0 0 () ())"),
])
def test_a_label_is_a_case_then_a_tree_where_the_capitals_differ(form, lemma, label):
    nlp = spacy.blank("en")
    target = make_target("lemma")
    assert target.label_strings(Doc(nlp.vocab, words=[form], lemmas=[lemma])) == [label]
    target.set_labels([label], nlp.vocab)
    ids, lemmas = target.candidates(form)
    assert lemmas == [lemma]


def test_a_cased_label_applies_only_where_its_case_changes_the_form():
    nlp = spacy.blank("en")
    target = make_target("lemma")
    target.set_labels([STRIP_S, "lower " + STRIP_S, "capitalize " + STRIP_S], nlp.vocab)
    ids, lemmas = target.candidates("dogs")
    assert ids.tolist() == [0, 2] and lemmas == ["dog", "Dog"]
    assert target.candidates("Dogs")[1] == ["Dog", "dog"]  # plain, lower (capitalize: no change)
    assert target.candidates("DOGS")[1] == ["dog", "Dog"]  # (the plain tree strips an "s", not an "S")
    assert target.candidates("Dog")[1] == []  # no tree strips an "s" it has not


def test_a_tree_that_would_leave_no_lemma_is_no_candidate_and_writes_the_form():
    """A tree learned from children -> child cuts "ren" off: on the form "ren"
    it left an empty lemma, written as such."""
    nlp = spacy.blank("en")
    target = make_target("lemma")
    (label,) = target.label_strings(Doc(nlp.vocab, words=["children"], lemmas=["child"]))
    target.set_labels([label, STRIP_S], nlp.vocab)
    assert target.candidates("children") == (target.candidates("children")[0], ["child"])
    ids, lemmas = target.candidates("ren")
    assert ids.tolist() == [] and lemmas == []
    doc = Doc(nlp.vocab, words=["ren", "children"])
    target.write_batch([doc], np.asarray([0, 0]), np.asarray([2]), False)
    assert [t.lemma_ for t in doc] == ["ren", "child"]


def test_a_forms_cache_keeps_label_ids_alone():
    """A form's candidates were cached with the lemma of every tree that
    applies (45 strings a form, 1.8 GB over 500,000 forms of a long run): the
    cache keeps the ids, and the lemmas are made as they are written."""
    nlp = spacy.blank("en")
    target = make_target("lemma")
    target.set_labels([STRIP_S, "lower " + STRIP_S, "capitalize " + STRIP_S], nlp.vocab)
    ids, lemmas = target.candidates("dogs")
    assert lemmas == ["dog", "Dog"]
    cached = target._candidates["dogs"]
    assert isinstance(cached, np.ndarray) and cached.dtype.itemsize <= 4
    assert cached.tolist() == ids.tolist()


def test_the_labels_of_a_model_trained_before_cases_read_as_they_did():
    # a tree that names the letter it lowercases: every label before lemma_case.py
    target = make_target("lemma")
    target.set_labels(["(m 1 0 (s 'T' 't') ())", STRIP_S], spacy.blank("en").vocab)
    assert target.candidates("The") == (target.candidates("The")[0], ["the"])
    assert target.candidates("Dogs")[1] == ["Dog"]


def test_a_cased_label_of_a_tree_that_is_no_tree_is_refused():
    target = make_target("lemma")
    with pytest.raises(ValueError, match=r"\[CRF-E220\]"):
        target.set_labels(["lower (m 0 x)"], spacy.blank("en").vocab)
    with pytest.raises(ValueError, match=r"\[CRF-E220\]"):
        target.labels_for("upper (m 0 0 () ())")  # no such case


def test_every_tree_string_parses_back_into_the_same_tree():
    pairs = [("walked", "walk"), ("is", "be"), ("The", "the"), ("I/C", "i/c"),
             ("don't", "do"), ("children", "child"), ("'s", "'s")]
    labels = [tree_string(w, l) for w, l in pairs]
    target = make_target("lemma")
    target.set_labels(sorted(set(labels)), spacy.blank("en").vocab)
    for (form, lemma), label in zip(pairs, labels):
        ids, lemmas = target.candidates(form)
        assert lemma in lemmas, (form, label)
    assert parse_edit_tree(STRIP_S) == ("m", 0, 1, None, ("s", "s", ""))
    # spaCy's strings are not escaped: a form with "' '" in it reads as its first parse
    assert parse_edit_tree(tree_string("a' 'b", "x")) == ("s", "a", "b' 'x")


def test_a_tree_applies_as_spacys_edit_trees_apply_it():
    """apply_edit_tree against spaCy's EditTrees.apply: every tree of the
    shipped sample's (form, lemma) pairs on every form of the sample
    (applying or not, short forms, substitutions that differ)."""
    trees = EditTrees(StringStore())
    pairs = {(t.text, t.lemma_) for doc in ewt_sample_docs("dev") for t in doc if t.lemma_}
    forms = sorted({form for form, _ in pairs} | {"", "a", "s", "ies", "I/C"})
    ids = sorted({trees.add(form, lemma) for form, lemma in pairs})
    applied = 0
    for tree in ids:
        node = parse_edit_tree(trees.tree_to_str(tree))
        for form in forms:
            want = trees.apply(tree, form)
            assert apply_edit_tree(node, form) == want, (trees.tree_to_str(tree), form)
            applied += want is not None
    assert len(ids) > 50 and 0 < applied < len(ids) * len(forms) / 2


@pytest.mark.parametrize("label", ["NOUN", "(m 0 1 ())", "(s 'a')", "(m 01 0 () ())"])
def test_a_label_that_is_no_edit_tree_is_refused(label):
    nlp = lemma_nlp()
    with pytest.raises(ValueError, match="CRF-E220"):
        nlp.get_pipe("crf_tagger").add_label(label)


def test_rare_trees_are_left_out_as_spacys_min_tree_freq():
    nlp = lemma_nlp()
    common = gold_doc(nlp.vocab)
    rare = gold_doc(nlp.vocab, ["went"], ["go"])
    examples = [Example(Doc(nlp.vocab, words=d.text.split()), d) for d in [common] * 3 + [rare]]
    nlp.initialize(lambda: examples)
    labels = nlp.get_pipe("crf_tagger").labels
    assert tree_string("went", "go") not in labels and STRIP_S in labels
    # ... and a tiny corpus whose every tree is rare keeps them all
    nlp = lemma_nlp()
    nlp.initialize(lambda: examples[-1:])
    assert nlp.get_pipe("crf_tagger").labels == (tree_string("went", "go"),)


# ------------------------------------------------------------------- candidates


def test_a_token_takes_only_trees_that_apply_to_its_form():
    nlp, _ = trained(n_iter=0)
    pipe = nlp.get_pipe("crf_tagger")
    docs = [Doc(nlp.vocab, words=["cats", "is", "xyzzy", "cats"])]
    allowed = pipe.target.allowed_labels(docs)
    labels = list(pipe.tags)
    assert allowed.shape == (4, len(labels))
    assert allowed[0, labels.index(STRIP_S)] and not allowed[0, labels.index("(s 'is' 'be')")]
    assert allowed[1, labels.index("(s 'is' 'be')")]
    assert (allowed[0] == allowed[3]).all()
    scores = pipe.constrain_scores(pipe.model.predict(docs), docs)
    assert np.isneginf(scores.emissions[~allowed]).all()
    assert np.isfinite(scores.emissions[allowed]).all()


def test_a_non_applicable_tree_is_never_predicted_even_when_it_scores_best():
    nlp, _ = trained(n_iter=0)
    pipe = nlp.get_pipe("crf_tagger")
    is_be = pipe.tags.index("(s 'is' 'be')")
    docs = [Doc(nlp.vocab, words=["cats", "walked", "home"])]
    scores = pipe.model.predict(docs)
    boosted = np.array(scores.emissions, copy=True)
    boosted[:, is_be] = 1e6  # the model's favourite for every token, applicable to none
    layout = pipe.batch_layout(docs)
    masked = pipe.constrain_scores(scores.replace(emissions=boosted), docs)
    ids, _ = inference.viterbi(masked, layout, None)
    assert is_be not in ids.tolist()
    unmasked, _ = inference.viterbi(pipe.constrain_scores(scores.replace(emissions=boosted)),
                                    layout, None)
    assert (unmasked == is_be).all()  # what it would have been without the candidates


def test_a_form_no_tree_fits_backs_off_to_the_form():
    nlp, _ = trained()
    target = nlp.get_pipe("crf_tagger").target
    # labels without the identity tree: none applies to "xyzzy"
    target.set_labels([STRIP_S, "(s 'is' 'be')"], nlp.vocab)
    doc = Doc(nlp.vocab, words=["xyzzy", "cats"])
    assert not target.allowed_labels([doc])[0].any()
    target.write(doc, np.asarray([1, 0]))
    assert [t.lemma_ for t in doc] == ["xyzzy", "cat"]


def test_lemmas_written_again_come_from_the_kept_keys_into_any_vocab():
    """A (form, tree) pair's lemma is worked out once and its key kept; a doc
    of a vocab that lacks the lemma's string still reads it, and new labels
    forget the kept keys."""
    from spacy.vocab import Vocab

    target = make_target("lemma")
    target.set_labels([STRIP_S, "(s 'is' 'be')", "(m 0 0 () ())"], Vocab())
    first = Doc(Vocab(), words=["cats", "is", "cats"])
    target.write(first, np.asarray([0, 1, 2]))
    assert [t.lemma_ for t in first] == ["cat", "be", "cats"]
    assert len(target._lemma_keys) == 3
    other = Doc(Vocab(), words=["cats", "is"])  # "cat" and "be" in no string store of it
    target.write(other, np.asarray([0, 1]))
    assert [t.lemma_ for t in other] == ["cat", "be"]
    target.set_labels(["(m 0 0 () ())"], Vocab())
    assert not target._lemma_keys
    target.write(other, np.asarray([0, 0]))
    assert [t.lemma_ for t in other] == ["cats", "is"]


def test_a_batch_writes_each_tokens_own_form_and_tree():
    """The batch numbers each distinct (form, tree) pair once: a form under
    two trees, a tree over two forms, across docs, each token gets the lemma
    its own pair gives (the form where the tree does not apply)."""
    from spacy.vocab import Vocab

    labels = [STRIP_S, "(s 'is' 'be')", "(m 0 0 () ())", "lower (m 0 0 () ())"]
    target = make_target("lemma")
    target.set_labels(labels, Vocab())
    rng = np.random.default_rng(0)
    forms = ["cats", "is", "Dogs", "cats", "is", "Dogs", "ox", "Ox"]
    vocab = Vocab()  # a batch's docs share the pipeline's
    docs = [Doc(vocab, words=["cats", "is", "Dogs", "cats"])]
    docs += [Doc(vocab, words=[str(w) for w in rng.choice(forms, size=n)])
             for n in (5, 0, 9, 1, 7)]
    ids = np.concatenate([[0, 1, 3, 1], rng.integers(0, len(labels), size=22)])
    target.write_batch(docs, ids, np.asarray([len(d) for d in docs]), False)
    tokens = [t for d in docs for t in d]
    assert [t.lemma_ for t in tokens[:4]] == ["cat", "be", "dogs", "cats"]
    assert [t.lemma_ for t in tokens] == [target._lemma_of(t.text, int(i))
                                          for t, i in zip(tokens, ids)]
    assert len({(t.text, int(i)) for t, i in zip(tokens, ids)}) > 10


def test_a_token_with_no_applicable_tree_keeps_every_label_open():
    nlp, _ = trained(n_iter=0)
    pipe = nlp.get_pipe("crf_tagger")
    pipe.target.set_labels([STRIP_S, "(s 'is' 'be')"], nlp.vocab)
    docs = [Doc(nlp.vocab, words=["xyzzy", "cats"])]
    scores = pipe.model.predict(docs)
    scores = scores.replace(emissions=np.zeros((2, 2), dtype=np.float32))
    masked = pipe.constrain_target(scores, docs)
    assert np.isfinite(masked.emissions[0]).all()  # no labelling otherwise
    assert np.isneginf(masked.emissions[1, 1])


# ---------------------------------------------------------------------- writing


def test_predictions_set_token_lemma():
    nlp, _ = trained()
    doc = nlp(" ".join(WORDS + ["cats"]))
    assert [t.lemma_ for t in doc] == LEMMAS + ["cat"]
    assert "cat" in nlp.vocab.strings
    assert "token.lemma" in nlp.get_pipe_meta("crf_tagger").assigns


@pytest.mark.parametrize("keep", [False, True])
def test_keep_existing_keeps_a_lemma_already_there(keep):
    nlp, _ = trained(keep_existing=keep)
    doc = Doc(nlp.vocab, words=WORDS, lemmas=["X"] + [""] * (len(WORDS) - 1))
    doc = nlp.get_pipe("crf_tagger")(doc)
    assert doc[0].lemma_ == ("X" if keep else "the")
    assert [t.lemma_ for t in doc[1:]] == LEMMAS[1:]


# ----------------------------------------------------------------------- scores


def test_lemma_acc_is_spacys_token_attr_score():
    nlp = spacy.blank("en")
    gold = gold_doc(nlp.vocab)
    pred = gold_doc(nlp.vocab, lemmas=["the", "dogs", "walk", "home", "and", "is", "walk", "."])
    examples = [Example(pred, gold)]
    scores = score_crf(examples, target="lemma")
    expected = Scorer.score_token_attr(examples, "lemma")["lemma_acc"]
    assert scores["lemma_acc"] == pytest.approx(expected) == pytest.approx(6 / 8)
    assert scores[MAIN_SCORE] == scores["crf_acc"] == scores["lemma_acc"]
    assert main_score_key("lemma") == "lemma_acc"
    assert default_score_weights("lemma") == {"lemma_acc": 1.0}


def test_nlp_evaluate_reports_lemma_acc():
    nlp, examples = trained()
    assert nlp.evaluate(examples)["lemma_acc"] == 1.0


# --------------------------------------------------------------- save and load


def test_saved_and_loaded_pipelines_predict_the_same(tmp_path):
    nlp, _ = trained(n_iter=5)
    texts = ["The cats walked home .", "It is walking and dogs is ."]
    before = [[t.lemma_ for t in d] for d in nlp.pipe(texts)]
    nlp.to_disk(tmp_path / "model")
    for loaded in (spacy.load(tmp_path / "model"), lemma_nlp().from_disk(tmp_path / "model")):
        assert [[t.lemma_ for t in d] for d in loaded.pipe(texts)] == before
        assert loaded.get_pipe("crf_tagger").labels == nlp.get_pipe("crf_tagger").labels
    fresh = lemma_nlp()  # a vocab of its own: the trees come with the labels
    fresh.get_pipe("crf_tagger").from_bytes(nlp.get_pipe("crf_tagger").to_bytes())
    assert [[t.lemma_ for t in d] for d in fresh.pipe(texts)] == before


def test_add_label_grows_a_trained_component_by_a_tree():
    nlp, examples = trained(n_iter=5)
    pipe = nlp.get_pipe("crf_tagger")
    went = tree_string("went", "go")
    assert pipe.add_label(went) == 1 and went in pipe.labels
    assert nlp("went")[0].lemma_ != "go"  # not predicted before an update has it
    eg = Example(Doc(nlp.vocab, words=["went"]), gold_doc(nlp.vocab, ["went"], ["go"]))
    optimizer = nlp.resume_training()
    for _ in range(20):
        nlp.update([eg] + examples, sgd=optimizer)
    assert nlp("went")[0].lemma_ == "go"


# ---------------------------------------------------------------- unseen labels


def test_an_unseen_tree_at_update_warns_and_trains_on():
    nlp, _ = trained(n_iter=2)
    eg = Example(Doc(nlp.vocab, words=["went", "dogs"]),
                 gold_doc(nlp.vocab, ["went", "dogs"], ["go", "dog"]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        losses = nlp.update([eg], sgd=nlp.create_optimizer())
    assert any("W035" in str(w.message) and "'went' -> 'go'" in str(w.message) for w in caught)
    assert np.isfinite(losses["crf_tagger"]) and losses["crf_tagger"] > 0  # dogs still learns


def test_gold_whose_tree_does_not_apply_to_its_form_is_unannotated():
    # a form with "' '" in it: its tree's string reads back as another tree (the
    # first parse), which does not apply to the form
    nlp = lemma_nlp()
    form = "a' 'b"
    doc = gold_doc(nlp.vocab, [form, "dogs"], ["x", "dog"])
    examples = [Example(Doc(nlp.vocab, words=[form, "dogs"]), doc)]
    nlp.initialize(lambda: examples * 3)
    pipe = nlp.get_pipe("crf_tagger")
    assert tree_string(form, "x") in pipe.labels
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gold = pipe.target.gold_ids(examples[0])
        losses = nlp.update(examples, sgd=nlp.create_optimizer())
    assert gold.tolist() == [-1, pipe.tags.index(STRIP_S)]
    assert any("W036" in str(w.message) and form in str(w.message) for w in caught)
    assert np.isfinite(losses["crf_tagger"])


# ----------------------------------------------------------------- bad input


def test_a_doc_with_no_lemma_annotation_trains_and_predicts():
    nlp, _ = trained(n_iter=2)
    bare = Doc(nlp.vocab, words=["no", "lemmas", "."])
    losses = nlp.update([Example(Doc(nlp.vocab, words=["no", "lemmas", "."]), bare)],
                        sgd=nlp.create_optimizer())
    assert losses["crf_tagger"] == 0.0  # nothing to learn
    assert all(t.lemma_ for t in nlp("no lemmas ."))


def test_initialize_without_any_lemma_is_e008():
    nlp = lemma_nlp()
    bare = Doc(nlp.vocab, words=["no", "lemmas"])
    with pytest.raises(ValueError, match="CRF-E008"):
        nlp.initialize(lambda: [Example(Doc(nlp.vocab, words=["no", "lemmas"]), bare)])


# ------------------------------------------------------------------- configs


def test_fill_config_works_from_the_factory_and_target_alone(tmp_path):
    config = filled_config(tmp_path, "lemmatizer", "lemma")
    assert config["components"]["lemmatizer"]["target"] == "lemma"
    assert config["training"]["score_weights"]["lemma_acc"] == 1.0
    nlp = load_model_from_config(config, auto_fill=True)
    pipe = nlp.get_pipe("lemmatizer")
    assert pipe.target.name == "lemma" and pipe.crf_structure.name == "pruned_chain"


# ---------------------------------------------------------- the EWT sample


def test_a_short_training_on_the_sample_beats_the_lowercase_baseline():
    train = ewt_sample_docs("train")
    dev = ewt_sample_docs("dev")
    nlp = spacy.blank("en")
    # the factory's model, with a smaller table
    nlp.add_pipe("crf_tagger", config={"target": "lemma", "model": {"n_buckets": 65536}})
    examples = [Example(Doc(nlp.vocab, words=[t.text for t in d]), d) for d in train]
    train_epochs(nlp, examples)
    gold = [(t.text, t.lemma_) for d in dev for t in d if t.lemma]
    lowercase = sum(form.lower() == lemma for form, lemma in gold) / len(gold)
    scores = nlp.evaluate([Example(Doc(nlp.vocab, words=[t.text for t in d]), d) for d in dev])
    # (measured: lowercase 0.720; lemma_acc 0.954)
    assert scores["lemma_acc"] > lowercase + 0.15


def test_annotate_records_hold_the_lemma_beside_the_tree(tmp_path):
    """crf-annotate's rows: each token's label is its tree, and its lemma is
    written beside it (a form no tree fits has no label, its lemma the form),
    in JSON lines and in Parquet alike."""
    pytest.importorskip("pyarrow")
    from spacy_crf.annotation import doc_record
    from spacy_crf.shard_io import output_schema, read_rows, write_rows

    nlp, _ = trained()
    pipe = nlp.get_pipe("crf_tagger")
    doc = nlp(Doc(nlp.vocab, words=WORDS + ["xyzzy"]))
    record = doc_record(pipe, doc, "d1")
    assert [t["lemma"] for t in record["tokens"]] == [t.lemma_ for t in doc]
    assert [t["lemma"] for t in record["tokens"]][:len(LEMMAS)] == LEMMAS
    assert record["tokens"][1]["label"] == STRIP_S and record["tokens"][1]["lemma"] == "dog"
    schema = output_schema(False, None, pipe.target.record_fields)
    assert "lemma" in str(schema.field("tokens").type)
    for name in ("out.jsonl", "out.parquet"):
        write_rows(tmp_path / name, [record], schema if name.endswith("parquet") else None)
        (line, row, error), = list(read_rows(tmp_path / name))
        assert error is None and [t["lemma"] for t in row["tokens"]] == [t.lemma_ for t in doc]
    tag = make_nlp("tag").get_pipe("crf_tagger")
    assert tag.target.record_fields == () and tag.target.record_values(doc) == {}


def test_a_pair_whose_tree_its_name_does_not_tell_apart_is_unannotated_with_w036():
    """spaCy's tree strings are not escaped: ``a' 'b -> c`` is named
    ``(s 'a' 'b' 'c')``, which reads back as ``a -> b' 'c``. The gold token
    trains as unannotated, said by W036 (docs/usage.md), not as a wrong tree."""
    nlp = spacy.blank("en")
    target = make_target("lemma")
    gold = Doc(nlp.vocab, words=["a' 'b"], lemmas=["c"])
    label = target.label_strings(gold)[0]
    assert label == "(s 'a' 'b' 'c')"
    assert parse_edit_tree(label) == ("s", "a", "b' 'c")  # the other tree
    target.set_labels([label], nlp.vocab)
    with pytest.warns(UserWarning, match="W036"):
        ids = target.gold_ids(Example(Doc(nlp.vocab, words=["a' 'b"]), gold))
    assert ids.tolist() == [-1]


def test_the_named_trees_stay_bounded_past_the_cache_size(monkeypatch):
    """Lemmas a doc brings (kept at prediction, keep_existing) are named to be
    read: random (form, lemma) pairs grew the tables without bound."""
    import spacy
    from spacy.tokens import Doc

    from spacy_crf.targets import make_target

    target = make_target("lemma")
    monkeypatch.setattr(type(target), "CACHE_SIZE", 5)
    vocab = spacy.blank("en").vocab
    words = [f"w{i}x" for i in range(40)]
    doc = Doc(vocab, words=words, lemmas=[f"q{i}z{i}" for i in range(40)])
    keys = target.reference_keys(doc)
    assert len(target._tree_names) == 5 and len(target._pair_keys) == 5
    assert (keys != 0).all() and len(set(keys.tolist())) > 5  # every pair still keyed
    assert len(target.label_strings(doc)) == 5
    assert "past the first 5" in target.string_of(doc, int(keys[-1]))


@pytest.mark.parametrize("form,lemma,name", [
    ("dogs", "dog", "*s -> *"),
    ("Dogs", "dog", "lower: *s -> *"),
    ("flies", "fly", "*ies -> *y"),
    ("is", "be", "is -> be"),
    ("home", "home", "* -> *"),
    ("TEHRAN", "Tehran", "capitalize: * -> *"),
    ("unhappiest", "unhappy", "*iest -> *y"),
    ("Dec", "December", "* -> *ember"),
])
def test_figures_name_a_tree_by_the_rule_it_is(form, lemma, name):
    """crf-plots names lemma labels so (Target.label_names), not as tree strings."""
    nlp = spacy.blank("en")
    target = make_target("lemma")
    label, = target.label_strings(Doc(nlp.vocab, words=[form], lemmas=[lemma]))
    assert target.label_names([label, "no tree"]) == [name, "no tree"]
    assert make_target("tag").label_names([label]) == [label]
