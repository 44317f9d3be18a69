"""Feature templates: parsing, validation, and the hashed feature ids they give."""

import os
import subprocess
import sys

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc

from spacy_crf.features.extract import extract_features
from spacy_crf.features.templates import FeatureTemplates


@pytest.fixture(scope="module")
def vocab():
    return spacy.blank("en").vocab


def mk(vocab, words, sent_starts=None):
    return Doc(vocab, words=words, sent_starts=sent_starts)


def feats(docs, templates):
    return extract_features(docs, FeatureTemplates(templates))


# --------------------------------------------------------------------- parsing


def test_window_expands_to_one_template_per_offset():
    ft = FeatureTemplates(["NORM[-2..2]"])
    assert ft.names == ["NORM[-2]", "NORM[-1]", "NORM[0]", "NORM[1]", "NORM[2]"]
    assert len(ft) == 5
    assert ft.token_attrs == ["NORM"]
    assert not ft.uses_affixes


def test_mixed_template_list_expands_in_order():
    ft = FeatureTemplates(["NORM[-1..1]", "NORM[-1]|NORM[0]", "SUFFIX3", "SHAPE", "TAG[+1]"])
    assert ft.names == [
        "NORM[-1]", "NORM[0]", "NORM[1]", "NORM[-1]|NORM[0]", "SUFFIX3[0]", "SHAPE[0]", "TAG[1]",
    ]
    assert set(ft.token_attrs) == {"NORM", "SHAPE", "TAG"}
    assert ft.uses_affixes
    # a conjunction is one template with several parts
    conj = ft.templates[3]
    assert [(p.attr, p.offset) for p in conj] == [("NORM", -1), ("NORM", 0)]


def test_bare_attribute_means_offset_zero_and_single_string_is_a_list():
    assert FeatureTemplates("NORM").names == ["NORM[0]"]
    assert FeatureTemplates(["NORM"]).names == FeatureTemplates(["NORM[0]"]).names
    assert FeatureTemplates(["LIKE_NUM", "PREFIX4"]).names == ["LIKE_NUM[0]", "PREFIX4[0]"]


def test_three_part_conjunction():
    ft = FeatureTemplates(["TAG[-1]|TAG[0]|TAG[1]"])
    assert len(ft) == 1
    assert [(p.attr, p.offset) for p in ft.templates[0]] == [("TAG", -1), ("TAG", 0), ("TAG", 1)]


@pytest.mark.parametrize(
    "templates, must_mention",
    [
        (["FOO"], ["FOO", "Unknown feature attribute"]),
        (["NORM[-1]|BOGUS[0]"], ["BOGUS", "Unknown feature attribute"]),
        (["NORM[-11]"], ["-11", "out of range"]),
        (["NORM[11]"], ["11", "out of range"]),
        (["NORM[-2..12]"], ["12", "out of range"]),
        (["NORM[x]"], ["NORM[x]", "Cannot parse"]),
        (["NORM[-1"], ["NORM[-1", "Cannot parse"]),
        (["NORM[2..1]"], ["2..1", "empty"]),
        (["NORM[-1..1]|SHAPE"], ["window", "one-part"]),
        (["SHAPE|NORM[0..1]"], ["window", "one-part"]),
        (["NORM[-1]|"], ["Cannot parse"]),
        ([], ["empty"]),
        ([""], ["empty"]),
        (["   "], ["empty"]),
    ],
    ids=[
        "unknown-attr", "unknown-attr-in-conjunction", "offset-too-small", "offset-too-big",
        "window-end-too-big", "non-numeric-offset", "unclosed-bracket", "empty-window",
        "window-in-conjunction", "window-in-conjunction-2nd", "empty-part", "empty-list",
        "empty-string", "blank-string",
    ],
)
def test_config_errors_are_value_errors_naming_the_problem(templates, must_mention):
    with pytest.raises(ValueError) as excinfo:
        FeatureTemplates(templates)
    message = str(excinfo.value)
    for text in must_mention:
        assert text in message, message


def test_unknown_attribute_error_lists_the_options():
    with pytest.raises(ValueError) as excinfo:
        FeatureTemplates(["NROM[0]"])
    assert "NORM" in str(excinfo.value) and "SUFFIX3" in str(excinfo.value)


def test_template_errors_surface_at_add_pipe():
    nlp = spacy.blank("en")
    model = {"@architectures": "spacy-crf.FeatureCRF.v2", "templates": ["NORM[-1..1]|SHAPE"],
             "n_buckets": 64}
    with pytest.raises(ValueError, match="one-part"):
        nlp.add_pipe("crf_tagger", config={"model": model})


# ------------------------------------------------------------------ feature ids


def test_output_shape_and_dtype(vocab):
    out = feats([mk(vocab, ["a", "b", "c"]), mk(vocab, ["d"])], ["NORM[-2..2]", "SUFFIX3"])
    assert out.shape == (4, 6)
    assert out.dtype == np.uint64


def test_identical_contexts_give_identical_ids(vocab):
    templates = ["NORM[-1..1]", "NORM[-1]|NORM[0]", "SHAPE", "SUFFIX3", "PREFIX2"]
    a = feats([mk(vocab, ["the", "cat", "sat"])], templates)
    b = feats([mk(vocab, ["the", "cat", "ran"])], templates)
    # "the": same word, same neighbours -> every feature equal
    assert np.array_equal(a[0], b[0])
    # "cat": only NORM[+1] (column 2) sees the change
    differs = a[1] != b[1]
    assert differs.tolist() == [False, False, True, False, False, False, False]
    # "sat" vs "ran": NORM[-1] (col 0) is the same word, the rest differs
    assert a[2, 0] == b[2, 0]
    assert a[2, 1] != b[2, 1]


def test_different_templates_give_different_ids_for_the_same_values(vocab):
    # at "b" in "a b a", NORM[-1] and NORM[1] both read "a"; NORM and LOWER of "b" agree
    out = feats([mk(vocab, ["a", "b", "a"])], ["NORM[-1]", "NORM[1]", "NORM", "LOWER"])
    row = out[1]
    assert len(set(row.tolist())) == 4


def test_ids_do_not_depend_on_the_batch(vocab):
    templates = ["NORM[-2..2]", "NORM[0]|NORM[1]", "SUFFIX2", "PREFIX3"]
    d1, d2, d3 = mk(vocab, ["one", "two"]), mk(vocab, ["three", "four", "five"]), mk(vocab, ["six"])
    together = feats([d1, d2, d3], templates)
    alone = np.vstack([feats([d], templates) for d in (d1, d2, d3)])
    assert np.array_equal(together, alone)


def test_windows_stop_at_doc_boundaries(vocab):
    templates = ["NORM[-1]", "NORM[1]", "NORM[-1]|NORM[0]"]
    x = feats([mk(vocab, ["x", "y"]), mk(vocab, ["b", "c"])], templates)
    z = feats([mk(vocab, ["z", "w"]), mk(vocab, ["b", "c"])], templates)
    # "b" starts the second doc: its left context is padding, not "y"/"w"
    assert np.array_equal(x[2], z[2])
    # and "y"/"w" end the first doc: their right context is padding in both
    assert x[1, 1] == z[1, 1]


def test_windows_stop_at_sentence_boundaries(vocab):
    templates = ["NORM[-2..1]", "NORM[-1]|NORM[0]"]
    starts = [True, False, True, False]
    a = feats([mk(vocab, ["x", "y", "b", "c"], sent_starts=starts)], templates)
    b = feats([mk(vocab, ["p", "q", "b", "c"], sent_starts=starts)], templates)
    alone = feats([mk(vocab, ["b", "c"])], templates)
    # a token at a sentence start has the same features whatever the previous
    # sentence's words, the same as at a doc start
    assert np.array_equal(a[2], b[2])
    assert np.array_equal(a[2], alone[0])
    assert np.array_equal(a[3], alone[1])
    # the last token of the first sentence does not see the next sentence
    c = feats([mk(vocab, ["x", "y", "z", "c"], sent_starts=starts)], templates)
    assert np.array_equal(a[1], c[1])


def test_without_sentence_boundaries_windows_cross_sentences(vocab):
    templates = ["NORM[-1]", "NORM[-1]|NORM[0]"]
    a = feats([mk(vocab, ["x", "y", "b", "c"])], templates)
    b = feats([mk(vocab, ["p", "q", "b", "c"])], templates)
    alone = feats([mk(vocab, ["b", "c"])], templates)
    assert not np.array_equal(a[2], b[2])
    assert not np.array_equal(a[2], alone[0])


def test_padding_is_not_a_word(vocab):
    # no real word at offset -1 gives the padding feature of a sequence start
    start = feats([mk(vocab, ["b"])], ["NORM[-1]"])[0, 0]
    for prev in ["", " ", "<s>", "__BOS__", "-1", "0"]:
        words = [prev, "b"] if prev.strip() else ["x", "b"]
        assert feats([mk(vocab, words)], ["NORM[-1]"])[1, 0] != start
    # and padding at different offsets differs (w[-1] vs w[-2] at a sentence start)
    pad = feats([mk(vocab, ["b", "c"])], ["NORM[-1]|NORM[-2]"])[0, 0]
    shifted = feats([mk(vocab, ["a", "b", "c"])], ["NORM[-1]|NORM[-2]"])[1, 0]
    assert pad != shifted


def test_wide_windows_on_short_docs(vocab):
    out = feats([mk(vocab, ["only"])], ["NORM[-10..10]", "SUFFIX4[-10]", "PREFIX4[10]"])
    assert out.shape == (1, 23)
    assert len(set(out[0].tolist())) == 23


def test_hashing_is_stable_across_processes(vocab):
    """Saved weights are indexed by feature id: ids must not depend on PYTHONHASHSEED."""
    templates = ["NORM[-1..1]", "SHAPE|SUFFIX3", "PREFIX2"]
    here = feats([mk(vocab, ["Walking", "the", "dog", "42"])], templates)
    code = (
        "import spacy, sys\n"
        "from spacy.tokens import Doc\n"
        "from spacy_crf.features.extract import extract_features\n"
        "from spacy_crf.features.templates import FeatureTemplates\n"
        f"ft = FeatureTemplates({templates!r})\n"
        "doc = Doc(spacy.blank('en').vocab, words=['Walking', 'the', 'dog', '42'])\n"
        "print(' '.join(str(int(v)) for v in extract_features([doc], ft).ravel()))\n"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout.split()
    assert [int(v) for v in out] == [int(v) for v in here.ravel()]


# ---------------------------------------------------------------------- affixes


def test_suffix_features_are_shared_by_words_with_the_same_ending(vocab):
    out = feats([mk(vocab, ["walking", "talking", "walked", "singing"])],
                ["SUFFIX3", "SUFFIX4", "PREFIX4"])
    assert out[0, 0] == out[1, 0]  # "ing"
    assert out[0, 1] == out[1, 1]  # "king"
    assert out[0, 0] != out[2, 0]  # "ing" vs "ked"
    assert out[0, 2] == out[2, 2]  # "walk"
    assert out[0, 2] != out[1, 2]  # "walk" vs "talk"
    assert out[3, 0] == out[0, 0] and out[3, 1] != out[0, 1]  # "ing" yes, "ging" vs "king"


def test_affixes_are_lower_cased(vocab):
    out = feats([mk(vocab, ["walking", "TALKING", "Talking", "WaLk"])],
                ["SUFFIX3", "PREFIX2"])
    assert out[0, 0] == out[1, 0] == out[2, 0]
    assert out[1, 1] == out[2, 1]  # "ta"
    assert out[0, 1] == out[3, 1]  # "wa"


def test_short_tokens_and_prefix_lengths(vocab):
    out = feats([mk(vocab, ["ab", "abc", "ab", "a"])], ["PREFIX3", "PREFIX1", "SUFFIX1"])
    assert out[0, 0] == out[2, 0]
    assert out[0, 0] != out[1, 0]  # "ab" vs "abc"
    assert out[0, 1] == out[1, 1] == out[3, 1]  # all start with "a"
    assert out[0, 2] == out[2, 2] and out[0, 2] != out[1, 2]  # "b" vs "c"
    # a prefix and a suffix of the same characters are different features
    pal = feats([mk(vocab, ["aba"])], ["PREFIX3|SUFFIX3"])
    assert pal.shape == (1, 1)


@pytest.mark.parametrize("before", ["xx", "café", "日本語", "😀", "naïve déjà"])
def test_affix_offsets_after_non_ascii_text(vocab, before):
    """Affixes are read by character offsets: wide characters before a token must not shift them."""
    nlp = spacy.blank("en")
    doc = nlp(f"{before} walking")
    assert doc[-1].text == "walking"
    templates = ["SUFFIX3", "SUFFIX4", "PREFIX3"]
    assert np.array_equal(feats([doc], templates)[-1], feats([mk(vocab, ["walking"])], templates)[0])


def test_empty_docs_and_empty_batches(vocab):
    for templates in (["NORM[-1..1]"], ["NORM[-1..1]", "SUFFIX3", "PREFIX1"]):
        assert feats([], templates).shape == (0, len(FeatureTemplates(templates)))
        assert feats([mk(vocab, [])], templates).shape == (0, len(FeatureTemplates(templates)))
        d = mk(vocab, ["the", "cat"])
        mixed = feats([mk(vocab, []), d, mk(vocab, []), mk(vocab, ["x"]), mk(vocab, [])], templates)
        expected = np.vstack([feats([d], templates), feats([mk(vocab, ["x"])], templates)])
        assert np.array_equal(mixed, expected)


def test_doc_whose_lower_case_changes_length(vocab):
    """'İ'.lower() has two code points: offsets of later tokens must not shift."""
    nlp = spacy.blank("en")
    assert len("İ".lower()) != len("İ")
    doc = nlp("İstanbul walking İİ talking")
    templates = ["SUFFIX3", "PREFIX2", "NORM[-1..1]"]
    out = feats([doc], templates)
    assert out.shape == (len(doc), 5)
    walking = feats([mk(vocab, ["walking"])], ["SUFFIX3", "PREFIX2"])[0]
    assert np.array_equal(out[1, :2], walking)
    assert out[3, 0] == walking[0]  # "talking" shares "ing"
    # in a batch, the docs after it are not affected either
    batch = feats([doc, mk(vocab, ["walking"])], ["SUFFIX3", "PREFIX2"])
    assert np.array_equal(batch[-1], walking)


def test_affixes_are_lower_cased_in_a_doc_with_dotted_capital_i(vocab):
    nlp = spacy.blank("en")
    doc = nlp("İstanbul WALKING")
    plain = feats([mk(vocab, ["walking"])], ["SUFFIX3", "PREFIX2"])[0]
    assert np.array_equal(feats([doc], ["SUFFIX3", "PREFIX2"])[1], plain)


@pytest.mark.parametrize("words", [["det", "root", "punct"], ["nsubj", "amod", "noun"]])
def test_affixes_of_words_that_are_spacy_symbols(vocab, words):
    """Some lower-cased words ('det', 'root', ...) are spaCy symbols, whose string-store key
    is a small symbol id rather than a hash: their affixes must still be those of the text."""
    lookalikes = ["x" + w for w in words]  # same last characters, not symbols
    a = feats([mk(vocab, words)], ["SUFFIX3", "SUFFIX2"])
    b = feats([mk(vocab, lookalikes)], ["SUFFIX3", "SUFFIX2"])
    assert np.array_equal(a, b)


def test_affix_ids_are_the_same_in_every_vocab():
    templates = ["SUFFIX3", "PREFIX3", "NORM"]
    words = ["Alpha", "beta", "gamma", "Alpha"]
    a = feats([Doc(spacy.blank("en").vocab, words=words)], templates)
    b = feats([Doc(spacy.blank("en").vocab, words=words[::-1])], templates)
    assert np.array_equal(a, b[::-1])


def test_affixes_of_new_and_already_seen_words_in_one_batch(vocab):
    templates = ["SUFFIX2", "PREFIX2", "SUFFIX4"]
    seen = ["zebra", "quokka"]
    feats([mk(vocab, seen)], templates)
    fresh = ["xylophone%d" % i for i in range(5)]
    words = [w for pair in zip(fresh, seen * 3) for w in pair]
    together = feats([mk(vocab, words)], templates)
    one_by_one = np.vstack([feats([mk(vocab, [w])], templates) for w in words])
    assert np.array_equal(together, one_by_one)


def test_affix_table_overflow_keeps_lookups_correct(vocab, monkeypatch):
    import spacy_crf.features.affixes as affixes

    templates = ["SUFFIX2", "PREFIX2"]
    words = ["walking", "talking", "sitting", "eating"]
    expected = feats([mk(vocab, words)], templates)
    monkeypatch.setattr(affixes, "AFFIXES", affixes.AffixTable())
    monkeypatch.setattr(affixes, "MAX_TYPES", 3)
    feats([mk(vocab, words[:2])], templates)
    assert np.array_equal(feats([mk(vocab, words)], templates), expected)
