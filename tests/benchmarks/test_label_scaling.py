"""The label-scaling benchmark (``benchmarks/label_scaling.py``): its synthetic
corpora are what the table claims (K valid morph labels, all trained on, parts
growing sublinearly, the same words for every K), and its verdicts follow
from the slopes."""

import sys

import pytest

from conftest import ROOT
sys.path.insert(0, str(ROOT / "benchmarks"))

import label_scaling  # noqa: E402


@pytest.mark.parametrize("k", [10, 250])
def test_a_corpus_has_k_valid_labels_and_trains_on_every_one(k):
    from spacy.morphology import Morphology

    labels, train, test, planted = label_scaling.morph_corpus(k, 200, 50)
    assert len(set(labels)) == k
    for pos, feats in labels:
        assert pos in label_scaling.UPOS
        fields = Morphology.feats_to_dict(feats)
        assert 2 <= len(fields) <= 4 and "POS" not in fields
    assert {i for _, ids in train for i in ids} == set(range(k))
    assert planted >= 0 and len(test) == 50
    # the same words whatever K (only the labels change)
    _, other, _, _ = label_scaling.morph_corpus(10 if k != 10 else 250, 200, 50)
    assert [w for w, _ in train] == [w for w, _ in other]


def test_label_parts_grow_sublinearly():
    parts = {}
    for k in (100, 2000):
        labels, _, _, _ = label_scaling.morph_corpus(k, 300, 1)
        parts[k] = len({f"POS={pos}" for pos, _ in labels}
                       | {f for _, feats in labels for f in feats.split("|")})
    assert parts[2000] / parts[100] < 2000 / 100 / 4


def test_a_training_set_too_small_for_every_label_is_refused():
    with pytest.raises(ValueError, match="labels to plant"):
        label_scaling.morph_corpus(2000, 10, 1)


def test_entity_corpus_is_valid_iob():
    train, _ = label_scaling.ner_corpus(18, 300, 10)
    previous = "O"
    types = set()
    for _, tags in train:
        for tag in tags:
            if tag.startswith("I-"):
                assert previous[2:] == tag[2:]
            types.add(tag[2:])
            previous = tag
        previous = "O"
    assert len(types - {""}) > 4


def test_a_weight_per_label_is_skipped_where_it_cannot_fit():
    assert label_scaling.skip_reason("factored", 2000, 5.0) is None
    # the factory's n_buckets = null: 2^18 rows from 129 columns on, fewer
    # above 1 GiB (2,000 labels: 2^17 rows, 1,000 MiB)
    assert label_scaling.skip_reason("per_label", 500, 5.0) is None
    assert label_scaling.skip_reason("per_label", 2000, 5.0) is None
    assert "budget" in label_scaling.skip_reason("per_label", 2000, 2.0)
    assert "K = 250" in label_scaling.skip_reason("full_chain", 500, 5.0)


def test_slopes_and_verdicts():
    rows = [{"k": k, "system": "factored", "train_us_per_token": 10.0 * k,
             "train_peak_rss_mb": 500.0, "decode_us_per_token": k ** 2 / 100,
             "model_bytes": 2**20 * k, "label_parts": k ** 0.5}
            for k in (10, 100, 1000)]
    rows.append({"k": 2000, "system": "factored", "skipped": "not run"})
    fit = label_scaling.fits(rows, ["factored"])["factored"]
    assert fit["ks"] == [100, 1000]
    assert fit["train_us_per_token"] == pytest.approx(1.0)
    assert fit["decode_us_per_token"] == pytest.approx(2.0)
    assert label_scaling.verdict(fit["train_us_per_token"]) == "at most linear"
    assert label_scaling.verdict(fit["decode_us_per_token"]) == "super-linear"
    assert label_scaling.verdict(None) == "n/a"
