"""Brown clustering against a brute-force reference on tiny texts.

The reference recomputes the average mutual information of every candidate
clustering from the counts at every step; the kernel updates merge losses
incrementally. Both must merge the same pairs, in the same order, and give
the same paths.
"""

import math

import numpy as np
import pytest

from spacy_crf.features.brown_induction import count_text, induce, merge_tree_paths


def ami(members, unigram, bigrams, added):
    """sum over cluster pairs of p(c,d) log p(c,d) / (p(c) p(d)), bigrams of added words."""
    total = sum(bigrams.values())
    cluster_of = {w: i for i, ws in members.items() for w in ws}
    p2 = {}
    for (a, b), n in bigrams.items():
        if a in added and b in added:
            key = (cluster_of[a], cluster_of[b])
            p2[key] = p2.get(key, 0.0) + n / total
    p1 = {i: sum(unigram[w] for w in ws) for i, ws in members.items()}
    return sum(p * math.log(p / (p1[c] * p1[d])) for (c, d), p in p2.items() if p > 0)


def reference(sentences, n_clusters, min_count=1):
    counts, bigrams = count_text(sentences)
    total = sum(counts.values())
    vocab = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    unigram = {w: counts[w] / total for w in vocab}
    bigrams = {k: v for k, v in bigrams.items() if k[0] in counts and k[1] in counts
               and counts[k[0]] >= min_count and counts[k[1]] >= min_count}
    members, added = {}, set()

    def best_merge():
        before = ami(members, unigram, bigrams, added)
        best = None
        slots = sorted(members)
        for x in range(len(slots)):
            for y in range(x + 1, len(slots)):
                a, b = slots[x], slots[y]
                trial = {k: v for k, v in members.items() if k != b}
                trial[a] = members[a] | members[b]
                loss = before - ami(trial, unigram, bigrams, added)
                if best is None or loss < best[0] - 1e-12:
                    best = (loss, a, b)
        return best[1], best[2]

    for w in vocab:
        slot = next(s for s in range(n_clusters + 1) if s not in members)
        members[slot] = {w}
        added.add(w)
        if len(members) == n_clusters + 1:
            a, b = best_merge()
            members[a] |= members.pop(b)
    slot_of = {w: s for s, ws in members.items() for w in ws}
    merges = []
    while len(members) > 1:
        a, b = best_merge()
        merges.append((a, b))
        members[a] |= members.pop(b)
    paths = merge_tree_paths(np.asarray(merges, dtype=np.int64).reshape(-1, 2),
                             np.asarray(sorted(set(slot_of.values()))))
    return {w: paths[slot_of[w]] for w in vocab}


def random_text(seed, n_words=9, n_sentences=40):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(n_words)]
    weights = rng.dirichlet(np.ones(n_words))
    return [list(rng.choice(words, size=int(rng.integers(2, 8)), p=weights))
            for _ in range(n_sentences)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_clusters", [1, 2, 3, 5])
def test_kernel_merges_as_the_brute_force_reference(seed, n_clusters):
    text = random_text(seed)
    got = {w: bits for bits, w, _ in induce(text, n_clusters=n_clusters, min_count=1)}
    assert got == reference(text, n_clusters)


def test_paths_group_words_that_occur_in_the_same_contexts():
    rng = np.random.default_rng(0)
    animals, verbs = ["cat", "dog", "cow"], ["runs", "eats", "sleeps"]
    places, preps = ["home", "town", "school"], ["at", "in"]
    text = [["the", rng.choice(animals), rng.choice(verbs), rng.choice(preps), rng.choice(places)]
            for _ in range(400)]
    rows = induce(text, n_clusters=5, min_count=1)  # "the" and four groups
    paths = {w: bits for bits, w, _ in rows}
    for group in (animals, verbs, places, preps):
        assert len({paths[w] for w in group}) == 1, (group, paths)
    assert len({paths[g[0]] for g in (animals, verbs, places, preps)} | {paths["the"]}) == 5
    assert rows[0][1] == "the"  # most frequent first


def test_rare_words_are_left_out_and_empty_text_gives_nothing():
    rows = induce([["a", "b", "a"], ["a", "c"]], n_clusters=2, min_count=2)
    assert [w for _, w, _ in rows] == ["a"]
    assert induce([], n_clusters=3) == []
    with pytest.raises(ValueError):
        induce([["a"]], n_clusters=0)
