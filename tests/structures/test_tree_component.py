"""The ``crf_tagger`` component with ``structure = "tree"`` (a CRF over the dependency
parse), tree features, the ``dep`` target, bad parses, and ``spacy train`` of the
gold-tree EWT configs.

Hand-made parsed Docs are written as ``word/UPOS/head/dep`` with absolute head
indices (a root is its own head).
"""

import itertools
from collections import Counter

import numpy as np
import pytest
import spacy
import srsly
from spacy.tokens import Doc
from spacy.training import Corpus, Example
from thinc.api import Adam
from conftest import NO_WORD_TABLES, convert_ewt_sample, spacy_train, train

from spacy_crf._kernels.tree import check_forest
from spacy_crf.augmenters import create_copy_attrs
from spacy_crf.features.doc_arrays import batch_heads

from conftest import ROOT
CONFIGS = ROOT / "configs"

# det is the most frequent relation (9), amod second (8), then nsubj / ROOT / punct (6 each)
TREE_TEXT = [
    "the/DET/2/det big/ADJ/2/amod dog/NOUN/3/nsubj saw/VERB/3/ROOT the/DET/6/det "
    "small/ADJ/6/amod cat/NOUN/3/obj ./PUNCT/3/punct",
    "a/DET/2/det red/ADJ/2/amod bird/NOUN/3/nsubj sang/VERB/3/ROOT in/ADP/7/case "
    "the/DET/7/det old/ADJ/7/amod tree/NOUN/3/obl ./PUNCT/3/punct",
    "the/DET/1/det cat/NOUN/2/nsubj sat/VERB/2/ROOT on/ADP/6/case a/DET/6/det "
    "big/ADJ/6/amod box/NOUN/2/obl ./PUNCT/2/punct",
    "a/DET/2/det small/ADJ/2/amod dog/NOUN/3/nsubj ran/VERB/3/ROOT home/ADV/3/advmod "
    "./PUNCT/3/punct",
    "the/DET/2/det old/ADJ/2/amod man/NOUN/3/nsubj walked/VERB/3/ROOT slowly/ADV/3/advmod "
    "./PUNCT/3/punct",
    "dogs/NOUN/1/nsubj chased/VERB/1/ROOT the/DET/4/det red/ADJ/4/amod ball/NOUN/1/obj "
    "./PUNCT/1/punct",
]
UNSEEN_TREES = [
    "the/DET/2/det red/ADJ/2/amod dog/NOUN/3/nsubj saw/VERB/3/ROOT a/DET/6/det "
    "big/ADJ/6/amod box/NOUN/3/obj ./PUNCT/3/punct",
    "a/DET/1/det man/NOUN/2/nsubj ran/VERB/2/ROOT slowly/ADV/2/advmod ./PUNCT/2/punct",
    # two sentences (two roots) in one doc
    "the/DET/1/det cat/NOUN/2/nsubj sat/VERB/2/ROOT ./PUNCT/2/punct a/DET/5/det "
    "bird/NOUN/6/nsubj sang/VERB/6/ROOT ./PUNCT/6/punct",
]
TREE_TEMPLATES = ["NORM[-1..1]", "SUFFIX2", "head:NORM", "DEP", "N_CHILDREN", "HEAD_DIST"]
# every tree attribute, for the bad-input tests
ALL_TREE_TEMPLATES = ["NORM", "head:NORM", "head:DEP", "N_CHILDREN", "DEPTH", "HEAD_DIST",
                      "LCHILD_DEP", "RCHILD_DEP", "DEP|head:POS"]


def tree_model(templates=TREE_TEMPLATES, n_buckets=4096):
    # spelling only: the block is merged into the factory's default model,
    # whose cluster templates would read spacy-lookups-data's clusters here
    return {"@architectures": "spacy-crf.FeatureCRF.v2", "templates": list(templates),
            "n_buckets": n_buckets, "cluster_templates": None}


def make_nlp(target="pos", structure="tree", n_relations=None, **model):
    if n_relations is not None:  # a setting of the tree's block
        structure = {"@structures": "spacy-crf.Tree.v1", "n_relations": n_relations}
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": target, "structure": structure,
                                       "model": tree_model(**model)})
    return nlp


def words_only(nlp):
    """``nlp`` with its tagger reading its templates alone: the tables a tagger
    reads by default (spaCy's lemma tables, the usual case) left out, whose
    trigram of made-up words' values would let a model fit the twins apart."""
    nlp.config["initialize"]["components"]["crf_tagger"] = dict(NO_WORD_TABLES)
    return nlp


def read_tree(line):
    """words, UPOS, absolute heads, deps of a ``word/UPOS/head/dep`` line."""
    rows = [tok.rsplit("/", 3) for tok in line.split()]
    return ([r[0] for r in rows], [r[1] for r in rows], [int(r[2]) for r in rows],
            [r[3] for r in rows])


def parsed_doc(vocab, line, pos=False, deps=None):
    """A Doc with the line's parse (and its UPOS if ``pos``); ``deps`` overrides the labels."""
    words, upos, heads, gold_deps = read_tree(line)
    return Doc(vocab, words=words, heads=heads, deps=deps or gold_deps,
               pos=upos if pos else None)


def pos_examples(nlp, lines=TREE_TEXT):
    return [Example(parsed_doc(nlp.vocab, line), parsed_doc(nlp.vocab, line, pos=True))
            for line in lines]


def labels_of(docs, attr="pos_"):
    return [[getattr(t, attr) for t in doc] for doc in docs]


def weights(nlp):
    return nlp.get_pipe("crf_tagger").model.to_bytes()


def is_projective(heads):
    arcs = [(min(i, h), max(i, h)) for i, h in enumerate(heads) if h != i]
    return not any(a < c < b < d for (a, b), (c, d) in itertools.permutations(arcs, 2))


@pytest.fixture(scope="module")
def pos_tree():
    """A tree-structured UPOS tagger with three relation groups, trained on TREE_TEXT."""
    nlp = make_nlp(n_relations=3)
    examples = pos_examples(nlp)
    losses = train(nlp, examples, n_iter=30)
    return nlp, examples, losses


# ------------------------------------------------------------------ tree structure, target pos


def test_tree_learns_toy_pattern(pos_tree):
    nlp, examples, losses = pos_tree
    assert all(np.isfinite(losses)) and losses[-1] < losses[0] / 10
    scores = nlp.evaluate(examples)
    assert scores["pos_acc"] == 1.0 and scores["crf_acc"] == 1.0
    for line, eg in zip(TREE_TEXT, examples):
        doc = nlp(parsed_doc(nlp.vocab, line))
        assert labels_of([doc]) == labels_of([eg.reference])
    # unseen sentences (one with two roots)
    for line in UNSEEN_TREES:
        doc = nlp(parsed_doc(nlp.vocab, line))
        assert [t.pos_ for t in doc] == read_tree(line)[1]


def test_n_relations_picks_most_frequent_relations(pos_tree):
    nlp, examples, _ = pos_tree
    tagger = nlp.get_pipe("crf_tagger")
    counts = Counter(t.dep_ for eg in examples for t in eg.reference)
    assert counts["det"] > counts["amod"] > max(c for d, c in counts.items() if d not in ("det", "amod"))
    assert tagger.cfg["relations"] == ["det", "amod"]
    pair = next(n for n in tagger.model.walk() if n.name == "crf_potentials").get_param("pair")
    assert pair.shape == (3, len(tagger.labels), len(tagger.labels))
    # the learnt pair matrices differ between the groups
    assert not np.allclose(pair[1], pair[0]) and not np.allclose(pair[2], pair[0])
    # each token's edge gets its relation's group (det 1, amod 2, everything else 0)
    docs = [parsed_doc(nlp.vocab, line) for line in TREE_TEXT + UNSEEN_TREES]
    structure = tagger.batch_layout(docs)
    expected = [{"det": 1, "amod": 2}.get(t.dep_, 0) for doc in docs for t in doc]
    assert structure.relations.tolist() == expected
    assert structure.lengths.tolist() == [len(doc) for doc in docs]


def test_tree_chain_is_not_used_and_default_relations_empty():
    """n_relations = 1 (the default) chooses no relation; chain structure none either."""
    for structure, n_relations in (("tree", 1), ("chain", None)):
        nlp = make_nlp(structure=structure, n_relations=n_relations)
        examples = pos_examples(nlp)
        nlp.initialize(lambda: examples)
        assert nlp.get_pipe("crf_tagger").cfg["relations"] == []


def test_tree_round_trips_disk_and_bytes(pos_tree, tmp_path):
    nlp, _, _ = pos_tree
    lines = TREE_TEXT + UNSEEN_TREES
    # a model that is not fully sure everywhere: predictions on shuffled-word docs too
    odd = ["dog/NOUN/1/det the/DET/1/ROOT red/ADJ/0/amod ./PUNCT/1/punct",
           "box/NOUN/2/nsubj slowly/ADV/2/amod ran/VERB/2/ROOT"]
    lines = lines + odd

    def run(pipeline):
        docs = list(pipeline.pipe([parsed_doc(pipeline.vocab, line) for line in lines]))
        tagger = pipeline.get_pipe("crf_tagger")
        emissions = tagger.model.predict([parsed_doc(pipeline.vocab, line) for line in lines])
        return labels_of(docs), np.asarray(emissions.emissions), np.asarray(emissions.pair)

    before = run(nlp)
    nlp.to_disk(tmp_path / "tree_nlp")
    loaded = spacy.load(tmp_path / "tree_nlp")
    assert loaded.get_pipe("crf_tagger").cfg["structure"] == "tree"
    assert loaded.get_pipe("crf_tagger").cfg["relations"] == ["det", "amod"]
    fresh = make_nlp(n_relations=3)
    fresh.from_bytes(nlp.to_bytes())
    assert fresh.get_pipe("crf_tagger").cfg["relations"] == ["det", "amod"]
    for other in (loaded, fresh):
        after = run(other)
        assert after[0] == before[0]
        np.testing.assert_array_equal(after[1], before[1])
        np.testing.assert_array_equal(after[2], before[2])


# ------------------------------------------------------------------ where the tree matters

TWIN_LABEL = {"a": "NOUN", "b": "VERB"}


def _random_forest(rng, n, roots):
    """Absolute heads (roots their own head): each other token hangs off a random
    token already placed, in a random order, so trees interleave and cross."""
    heads = list(range(n))
    placed = list(roots)
    for t in rng.permutation(n):
        if t in roots:
            continue
        heads[t] = placed[int(rng.integers(len(placed)))]
        placed.append(int(t))
    return heads


def _root_of(heads, t):
    while heads[t] != t:
        t = heads[t]
    return t


def twin_examples(vocab, seed, n_pairs, parsed_input=True):
    """Docs of two trees each: roots are 'a' (NOUN) or 'b' (VERB), every other word is
    'x' and takes the label of the root of its tree (so of its head, recursively).
    Docs come in twins with the same words and different trees."""
    rng = np.random.default_rng(seed)
    examples, twins = [], []
    for _ in range(n_pairs):
        n = int(rng.integers(4, 9))
        roots = sorted(int(r) for r in rng.choice(n, 2, replace=False))
        words = ["x"] * n
        words[roots[0]], words[roots[1]] = ("a", "b") if rng.random() < 0.5 else ("b", "a")
        pair = []
        for _ in range(2):
            heads = _random_forest(rng, n, roots)
            labels = [TWIN_LABEL[words[_root_of(heads, t)]] for t in range(n)]
            deps = ["ROOT" if heads[t] == t else "dep" for t in range(n)]
            ref = Doc(vocab, words=words, heads=heads, deps=deps, pos=labels)
            pred = (Doc(vocab, words=words, heads=heads, deps=deps) if parsed_input
                    else Doc(vocab, words=words))
            pair.append(Example(pred, ref))
        twins.append(pair)
        examples.extend(pair)
    return examples, twins


def test_tree_beats_chain_when_labels_follow_the_head():
    """Labels follow the head's label, the words say nothing except at the roots. The
    twins have the same words but different labels, so no chain CRF over the words can
    tag them all; the tree CRF with the same word features (no tree features) can, and
    it generalises to new random forests."""
    templates = ["NORM[-1..1]"]
    tree = words_only(make_nlp(templates=templates))
    tree_train, twins = twin_examples(tree.vocab, 0, 20)
    train(tree, tree_train, n_iter=40)

    chain = words_only(make_nlp(structure="chain", templates=templates))
    # the chain sees the words only (no parse, so no sentence splits either)
    chain_train, chain_twins = twin_examples(chain.vocab, 0, 20, parsed_input=False)
    train(chain, chain_train, n_iter=40)

    # the data: crossing trees, twins whose gold labels differ
    heads_of = lambda doc: [t.head.i for t in doc]  # noqa: E731
    assert any(not is_projective(heads_of(eg.reference)) for eg in tree_train)
    differing = [p for p in twins if labels_of([p[0].reference]) != labels_of([p[1].reference])]
    assert len(differing) >= 10
    # best possible accuracy of any function of the words alone
    n_tokens = sum(len(eg.reference) for eg in tree_train)
    agree = sum(a == b for p in twins for a, b in zip(labels_of([p[0].reference])[0],
                                                     labels_of([p[1].reference])[0]))
    bound = (n_tokens - (sum(len(p[0].reference) for p in twins) - agree)) / n_tokens
    assert bound < 0.95

    assert tree.evaluate(tree_train)["pos_acc"] == 1.0
    chain_acc = chain.evaluate(chain_train)["pos_acc"]
    assert chain_acc <= bound + 1e-9
    # the chain tags twins identically: its input really is the same
    for a, b in chain_twins:
        assert labels_of([chain(a.predicted.copy())]) == labels_of([chain(b.predicted.copy())])
    # held-out forests
    held_out, _ = twin_examples(tree.vocab, 1, 15)
    assert tree.evaluate(held_out)["pos_acc"] == 1.0
    held_out_chain, _ = twin_examples(chain.vocab, 1, 15, parsed_input=False)
    assert chain.evaluate(held_out_chain)["pos_acc"] < 0.95


# ------------------------------------------------------------------ decoding = brute force


def test_decode_matches_brute_force_on_multi_root_non_projective_doc(pos_tree):
    """Viterbi labels and marginals of the component equal enumeration over every
    labelling of a non-projective two-root doc, with the relation groups read from
    the doc's deps; batched with other docs, the doc decodes as alone."""
    nlp, _, _ = pos_tree
    tagger = nlp.get_pipe("crf_tagger")
    # 0->2 and 1->3 cross; roots 2 and 4; deps use both groups and group 0
    words = ["the", "red", "dog", "box", "sat"]
    heads = [2, 3, 2, 4, 4]
    deps = ["det", "amod", "ROOT", "nsubj", "ROOT"]
    assert not is_projective(heads)
    doc = Doc(nlp.vocab, words=words, heads=heads, deps=deps)
    scores = tagger.model.predict([doc])
    e, pair, root = (np.asarray(x, dtype=np.float64) for x in (scores.emissions, scores.pair, scores.root))
    L = e.shape[1]
    group = [{"det": 1, "amod": 2}.get(d, 0) for d in deps]
    best, best_y, all_scores, all_y = -np.inf, None, [], []
    for y in itertools.product(range(L), repeat=len(words)):
        s = sum(e[t, y[t]] for t in range(len(words)))
        s += sum(root[y[t]] if heads[t] == t else pair[group[t], y[t], y[heads[t]]]
                 for t in range(len(words)))
        all_scores.append(s)
        all_y.append(y)
        if s > best:
            best, best_y = s, y
    all_scores = np.asarray(all_scores)
    probs = np.exp(all_scores - np.logaddexp.reduce(all_scores))
    marg = np.zeros((len(words), L))
    for p, y in zip(probs, all_y):
        marg[np.arange(len(words)), list(y)] += p

    prediction = tagger.predict([doc])
    assert prediction.label_ids.tolist() == list(best_y)
    from spacy_crf import inference

    got, log_z = inference.marginals(scores, tagger.batch_layout([doc]))
    np.testing.assert_allclose(got, marg, atol=1e-9)
    np.testing.assert_allclose(log_z, [np.logaddexp.reduce(all_scores)], rtol=1e-9)
    # store_confidence: P(predicted label) from the tree marginals
    tagger.cfg["store_confidence"] = True
    try:
        confident = nlp(Doc(nlp.vocab, words=words, heads=heads, deps=deps))
    finally:
        tagger.cfg["store_confidence"] = False
    np.testing.assert_allclose([t._.crf_confidence for t in confident],
                               marg[np.arange(len(words)), list(best_y)], rtol=1e-5)
    # in a batch with other docs (and empty / one-token docs) the labels do not change
    others = [parsed_doc(nlp.vocab, line) for line in UNSEEN_TREES]
    batch = [others[0], Doc(nlp.vocab, words=[]), Doc(nlp.vocab, words=words, heads=heads, deps=deps),
             Doc(nlp.vocab, words=["dog"]), others[2]]
    batched = tagger.predict(batch)
    assert batched.label_ids[len(others[0]):len(others[0]) + 5].tolist() == list(best_y)


# ------------------------------------------------------------------ target dep


DEP_TEMPLATES = ["NORM[0]", "POS[-1..1]", "head:POS", "POS|head:POS", "HEAD_DIST",
                 "N_CHILDREN", "DEPTH"]


def dep_examples(nlp, lines=TREE_TEXT):
    """Input docs: words, gold heads and UPOS, placeholder relation labels."""
    out = []
    for line in lines:
        words = read_tree(line)[0]
        pred = parsed_doc(nlp.vocab, line, pos=True, deps=["dep"] * len(words))
        out.append(Example(pred, parsed_doc(nlp.vocab, line, pos=True)))
    return out


def test_dep_target_writes_relations_and_keeps_heads():
    nlp = make_nlp(target="dep", templates=DEP_TEMPLATES)
    examples = dep_examples(nlp)
    train(nlp, examples, n_iter=30)
    tagger = nlp.get_pipe("crf_tagger")
    assert set(tagger.labels) == {"det", "amod", "nsubj", "ROOT", "obj", "case", "obl",
                                  "advmod", "punct"}
    assert tagger.cfg["relations"] == []
    assert nlp.evaluate(examples)["dep_acc"] == 1.0
    for line in TREE_TEXT + UNSEEN_TREES[:2]:
        words, upos, heads, deps = read_tree(line)
        doc = parsed_doc(nlp.vocab, line, pos=True, deps=["dep"] * len(words))
        doc = nlp(doc)
        assert [t.dep_ for t in doc] == deps
        assert [t.head.i for t in doc] == heads
        assert [t.pos_ for t in doc] == upos
        assert doc.has_annotation("DEP")


@pytest.mark.parametrize("templates", [["NORM", "DEP"], ["NORM", "head:DEP"],
                                       ["NORM", "LCHILD_DEP"], ["RCHILD_DEP"],
                                       ["NORM|DEP"], ["POS", "DEP|head:POS"]])
def test_dep_target_rejects_templates_reading_dep(templates):
    with pytest.raises(ValueError, match=r"\[CRF-E017\]") as info:
        make_nlp(target="dep", templates=templates)
    assert "n_relations = 1" in str(info.value)


def test_dep_target_rejects_relation_groups():
    with pytest.raises(ValueError, match=r"\[CRF-E017\]"):
        make_nlp(target="dep", templates=["NORM", "head:POS"], n_relations=2)
    # the same templates with one relation group are fine, in both structures
    make_nlp(target="dep", templates=["NORM", "head:POS", "N_CHILDREN"], n_relations=1)
    make_nlp(target="dep", structure="chain", templates=["NORM", "head:POS"])


# ------------------------------------------------------------------ bad input


def unparsed_examples(vocab):
    out = []
    for line in TREE_TEXT[:3]:
        words, upos, _, _ = read_tree(line)
        out.append(Example(Doc(vocab, words=words), Doc(vocab, words=words, pos=upos)))
    return out


def _assert_update_fails_cleanly(nlp, build, bad_examples, code):
    """``update`` raises ``code`` before any weight changes; the optimizer step that
    follows is the same as on an untouched copy (no gradient was left behind)."""
    tagger = nlp.get_pipe("crf_tagger")
    before = weights(nlp)
    twin = build()
    twin.initialize(lambda: pos_examples(twin))
    twin.get_pipe("crf_tagger").from_bytes(tagger.to_bytes())
    sgd = Adam(0.1)
    with pytest.raises(ValueError, match=rf"\[CRF-{code}\]"):
        nlp.update(bad_examples, sgd=sgd)
    assert weights(nlp) == before
    good = pos_examples(nlp)
    nlp.update(good, sgd=sgd)
    twin.update(pos_examples(twin), sgd=Adam(0.1))
    assert weights(nlp) == weights(twin)
    return before


@pytest.mark.parametrize("structure,templates,why", [
    ("tree", ["NORM[-1..1]"], 'structure = "tree"'),
    ("tree", ALL_TREE_TEMPLATES, 'structure = "tree"'),
    ("chain", ["NORM[-1..1]", "head:NORM"], "its feature templates read the dependency tree"),
    ("chain", ["NORM", "N_CHILDREN"], "its feature templates read the dependency tree"),
])
def test_missing_parse_raises_e015_before_weights_change(structure, templates, why):
    def build():
        return make_nlp(structure=structure, templates=templates)

    nlp = build()
    train(nlp, pos_examples(nlp), n_iter=2)
    bad = unparsed_examples(nlp.vocab)
    # a parsed doc first in the batch does not hide the unparsed one
    mixed = pos_examples(nlp)[:1] + bad
    _assert_update_fails_cleanly(nlp, build, mixed, "E015")
    with pytest.raises(ValueError, match=r"\[CRF-E015\]") as info:
        nlp("the dog saw a cat .")
    message = str(info.value)
    assert why in message
    for fix in ("parser", "annotating_components", "spacy-crf.copy_attrs.v1", '"HEAD", "DEP"',
                'structure = "chain"'):
        assert fix in message
    with pytest.raises(ValueError, match=r"\[CRF-E015\]"):
        list(nlp.pipe([parsed_doc(nlp.vocab, TREE_TEXT[0]), Doc(nlp.vocab, words=["a", "b"])]))



@pytest.mark.parametrize("structure,templates", [
    ("tree", ["NORM[-1..1]"]),
    ("chain", ["NORM", "head:NORM"]),
])
def test_a_doc_parsed_on_some_tokens_only_is_refused(structure, templates):
    """A parsed doc joined with an unparsed one (``Doc.from_docs``) has heads
    on some tokens: each unparsed token was read as a tree of its own, its
    relation "", without a word."""
    nlp = make_nlp(structure=structure, templates=templates)
    train(nlp, pos_examples(nlp), n_iter=2)
    joined = Doc.from_docs([parsed_doc(nlp.vocab, TREE_TEXT[0]),
                            Doc(nlp.vocab, words=["a", "b", "c"])])
    assert joined.has_annotation("HEAD") and not joined.has_annotation("DEP",
                                                                        require_complete=True)
    with pytest.raises(ValueError, match=r"\[CRF-E015\].*only some of its tokens"):
        nlp(joined)
    assert nlp(parsed_doc(nlp.vocab, TREE_TEXT[0]))  # a whole parse still decodes


def test_chain_without_tree_features_needs_no_parse():
    nlp = make_nlp(structure="chain", templates=["NORM[-1..1]"])
    examples = unparsed_examples(nlp.vocab)
    train(nlp, examples, n_iter=20)
    assert nlp.evaluate(examples)["pos_acc"] == 1.0


@pytest.mark.parametrize("templates", [["NORM[-1..1]"], ALL_TREE_TEMPLATES])
def test_one_token_and_empty_docs_in_tree_mode(templates):
    nlp = make_nlp(templates=templates)
    examples = pos_examples(nlp)
    v = nlp.vocab
    # one-token docs need no parse; empty docs are skipped
    extra = [Example(Doc(v, words=["dog"]), Doc(v, words=["dog"], pos=["NOUN"])),
             Example(Doc(v, words=[]), Doc(v, words=[])),
             Example(Doc(v, words=["the"], heads=[0], deps=["ROOT"]),
                     Doc(v, words=["the"], pos=["DET"]))]
    losses = train(nlp, examples + extra, n_iter=30)
    assert all(np.isfinite(losses))
    the = Doc(v, words=["the"], heads=[0], deps=["ROOT"])
    docs = list(nlp.pipe([Doc(v, words=[]), Doc(v, words=["dog"]),
                          parsed_doc(v, UNSEEN_TREES[1]), the, Doc(v, words=[])]))
    assert labels_of(docs) == [[], ["NOUN"], read_tree(UNSEEN_TREES[1])[1], ["DET"], []]
    assert len(nlp(Doc(v, words=[]))) == 0
    tagger = nlp.get_pipe("crf_tagger")
    assert tagger.predict([Doc(v, words=[]), Doc(v, words=[])]).label_ids.shape == (0,)
    # a batch of only empty examples is a no-op
    assert nlp.update([Example(Doc(v, words=[]), Doc(v, words=[]))], sgd=Adam(0.1)) == {"crf_tagger": 0.0}


def cyclic_doc(vocab):
    # 0 -> 1 -> 2 -> 0 is a cycle; 3 is a root
    return Doc(vocab, words=["the", "dog", "saw", "."], heads=[1, 2, 0, 3],
               deps=["det", "nsubj", "obj", "ROOT"])


def test_cycle_check_on_arrays():
    order = np.empty(4, dtype=np.int64)
    lengths = np.asarray([4], dtype=np.int64)
    ok = np.asarray([1, -1, 1, 2], dtype=np.int64)
    assert check_forest(ok, lengths, order) == 0
    assert sorted(order.tolist()) == [0, 1, 2, 3]
    assert order.tolist().index(3) < order.tolist().index(2) < order.tolist().index(1)
    assert check_forest(np.asarray([1, 2, 0, -1], dtype=np.int64), lengths, order) == 2
    assert check_forest(np.asarray([1, 1, -1, -1], dtype=np.int64), lengths, order) == 1  # self head
    # a head in the other doc of the batch
    two = np.asarray([2, 2], dtype=np.int64)
    assert check_forest(np.asarray([-1, 2, -1, 2], dtype=np.int64), two, order) == 1


@pytest.mark.parametrize("structure,templates", [
    ("tree", ["NORM[-1..1]"]),
    ("chain", ["NORM[-1..1]", "head:NORM", "DEPTH"]),
])
def test_cycle_raises_e016_never_crashes(structure, templates):
    def build():
        return make_nlp(structure=structure, templates=templates)

    nlp = build()
    train(nlp, pos_examples(nlp), n_iter=2)
    v = nlp.vocab
    doc = cyclic_doc(v)
    assert [t.head.i for t in doc] == [1, 2, 0, 3]  # spaCy let us build it
    with pytest.raises(ValueError, match="a cycle"):
        batch_heads([parsed_doc(v, TREE_TEXT[0]), doc])
    with pytest.raises(ValueError, match=r"\[CRF-E016\].*cycle"):
        nlp(doc)
    ref = Doc(v, words=[t.text for t in doc], pos=["DET", "NOUN", "VERB", "PUNCT"])
    _assert_update_fails_cleanly(nlp, build, pos_examples(nlp)[:1] + [Example(cyclic_doc(v), ref)],
                                "E016")
    # a doc with no root at all
    with pytest.raises(ValueError, match=r"\[CRF-E016\]"):
        nlp(Doc(v, words=["a", "b"], heads=[1, 0], deps=["x", "y"]))
    # the component still works afterwards
    assert labels_of([nlp(parsed_doc(v, TREE_TEXT[0]))]) == [read_tree(TREE_TEXT[0])[1]]


def test_several_roots_per_doc_train_and_decode():
    """Docs made of several sentences (one root each) train and decode as the same
    sentences one per doc."""
    nlp = make_nlp(templates=["NORM[-1..1]", "head:NORM"])
    joined = []
    for a, b in zip(TREE_TEXT[0::2], TREE_TEXT[1::2]):
        wa = read_tree(a)
        shift = len(wa[0])
        rows_b = [tok.rsplit("/", 3) for tok in b.split()]
        b_shifted = " ".join(f"{w}/{p}/{int(h) + shift}/{d}" for w, p, h, d in rows_b)
        joined.append(a + " " + b_shifted)
    examples = pos_examples(nlp, joined)
    assert all(sum(t.head.i == t.i for t in eg.predicted) == 2 for eg in examples)
    train(nlp, examples, n_iter=30)
    assert nlp.evaluate(examples)["pos_acc"] == 1.0
    tagger = nlp.get_pipe("crf_tagger")
    whole = tagger.predict([parsed_doc(nlp.vocab, line) for line in joined]).label_ids
    alone = tagger.predict([parsed_doc(nlp.vocab, line) for line in TREE_TEXT]).label_ids
    assert whole.tolist() == alone.tolist()


def test_relation_groups_skip_root_label():
    """Roots have no edge to a head, so ROOT must not take a relation group (it would
    never be used and a real relation would lose its matrix). In UD EWT train ROOT is
    the 5th most frequent label: ranked with the rest, it took one of the 7 groups of
    configs/ewt_upos_tree.cfg (a bug until 5afcd39)."""
    nlp = make_nlp(n_relations=2, templates=["NORM"])
    lines = ["go/VERB/0/ROOT", "stop/VERB/0/ROOT", "run/VERB/0/ROOT ./PUNCT/0/punct",
             "yes/INTJ/0/ROOT ./PUNCT/0/punct"]
    examples = pos_examples(nlp, lines)
    nlp.initialize(lambda: examples)
    assert nlp.get_pipe("crf_tagger").cfg["relations"] == ["punct"]


# ------------------------------------------------------------------ spacy train, gold trees


TRAINED = {"ewt_upos_tree": "pos_acc", "ewt_deprel_tree": "dep_acc"}


@pytest.fixture(scope="module")
def ewt_tree_runs(tmp_path_factory):
    work = tmp_path_factory.mktemp("ewt_tree")
    paths = convert_ewt_sample(work)
    out = {}
    for name in TRAINED:
        out[name] = work / name
        # smaller batches than the config's, so one epoch evaluates at steps 0, 20, 40
        spacy_train(CONFIGS / f"{name}.cfg", out[name],
                    "--paths.train", paths["train"], "--paths.dev", paths["dev"],
                    "--training.max_epochs", "1", "--training.eval_frequency", "20",
                    "--training.batcher.size", "250",
                    "--components.crf_tagger.model.n_buckets", "65536", cwd=work)
    return {"paths": paths, "out": out, "work": work}


def augmented(nlp, config_name, path):
    """Examples of a .spacy file read as the config's corpora read them (its augmenter)."""
    cfg = spacy.util.load_config(CONFIGS / f"{config_name}.cfg", interpolate=False)
    attrs = cfg["corpora"]["dev"]["augmenter"]["attrs"]
    assert {"HEAD", "DEP"} <= set(attrs)
    return list(Corpus(str(path), augmenter=create_copy_attrs(attrs))(nlp))


@pytest.mark.parametrize("name", list(TRAINED))
def test_ewt_tree_config_trains_and_round_trips(ewt_tree_runs, name, tmp_path):
    key = TRAINED[name]
    best = ewt_tree_runs["out"][name] / "model-best"
    nlp = spacy.load(best)
    tagger = nlp.get_pipe("crf_tagger")
    assert tagger.cfg["structure"] == "tree"
    perf = srsly.read_json(best / "meta.json")["performance"]
    assert key in perf
    assert perf[key] > 0.6
    if name == "ewt_upos_tree":
        assert len(tagger.cfg["relations"]) == 7 and "punct" in tagger.cfg["relations"]
        assert "ROOT" not in tagger.cfg["relations"]
    else:
        assert tagger.cfg["relations"] == []
    # the saved weights are the evaluated ones: dev read with the same augmenter
    dev = augmented(nlp, name, ewt_tree_runs["paths"]["dev"])
    assert nlp.evaluate(dev)[key] == pytest.approx(perf[key], abs=1e-9)

    test = augmented(nlp, name, ewt_tree_runs["paths"]["test"])
    assert all(eg.predicted.has_annotation("DEP") for eg in test if len(eg.predicted) > 1)
    attr = "pos_" if key == "pos_acc" else "dep_"

    def predict(pipeline):
        inputs = [eg.predicted.copy() for eg in test]
        heads = [[t.head.i for t in doc] for doc in inputs]
        docs = list(pipeline.pipe(inputs, batch_size=64))
        assert [[t.head.i for t in doc] for doc in docs] == heads  # heads stay
        return labels_of(docs, attr)

    before = predict(nlp)
    gold = labels_of([eg.reference for eg in test], attr)
    acc = np.mean([p == g for ps, gs in zip(before, gold) for p, g in zip(ps, gs)])
    assert acc > 0.6
    nlp.to_disk(tmp_path / "saved")
    assert predict(spacy.load(tmp_path / "saved")) == before
    again = spacy.load(best)
    again.from_bytes(nlp.to_bytes())
    assert predict(again) == before


def test_spacy_crf_evaluate_copies_the_inputs_the_training_config_copied(ewt_tree_runs, capsys):
    """The DEPREL configs copy POS as well as the tree: by default evaluation copies what
    the model's training config copied, and a --copy that leaves an input out warns."""
    from spacy_crf.commands.evaluate import main
    from spacy_crf.evaluation import evaluate, training_copy

    best = ewt_tree_runs["out"]["ewt_deprel_tree"] / "model-best"
    test = ewt_tree_runs["paths"]["test"]
    nlp = spacy.load(best)
    assert training_copy(nlp) == ["HEAD", "DEP", "POS"]
    by_default = evaluate(nlp, test)["dep_acc"]
    assert by_default == pytest.approx(evaluate(nlp, test, ["HEAD", "DEP", "POS"])["dep_acc"])
    assert by_default == pytest.approx(nlp.evaluate(augmented(nlp, "ewt_deprel_tree", test))["dep_acc"])
    with pytest.warns(UserWarning, match=r"W004.*'crf_tagger' reads POS .*--copy HEAD,DEP,POS\."):
        without_pos = evaluate(nlp, test, ["HEAD", "DEP"])["dep_acc"]
    assert without_pos < by_default - 0.05
    # no tree at all: the structure's input is named
    with pytest.warns(UserWarning, match=r"W004.*reads DEP \(its structure = \"tree\"\)"):
        with pytest.raises(ValueError, match="E015"):
            evaluate(nlp, test, [])

    assert main([str(best), str(test)]) == 0
    out = capsys.readouterr().out
    assert "Copying ['HEAD', 'DEP', 'POS'] from the corpus" in out
    assert f"dep_acc          {by_default:.4f}" in out


def test_spacy_crf_evaluate_copies_nothing_for_a_model_that_reads_only_text(ewt_tree_runs):
    import warnings

    from spacy_crf.evaluation import evaluate, training_copy

    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos"})
    test = ewt_tree_runs["paths"]["test"]
    examples = list(Corpus(str(test))(nlp))[:50]
    nlp.initialize(lambda: examples)
    assert training_copy(nlp) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "pos_acc" in evaluate(nlp, test)


def test_a_tree_crf_behind_a_frozen_parser_initializes_on_its_parses():
    """spacy train initializes with frozen components disabled and hands every
    component the raw examples: the CRF runs the sourced parser over its sample
    itself, instead of meeting docs with no parse (E015)."""
    v = spacy.blank("en").vocab
    parser_nlp = spacy.blank("en", vocab=v)
    parser_nlp.add_pipe("parser")
    parsed = [Example(Doc(v, words=read_tree(line)[0]), parsed_doc(v, line, pos=True))
              for line in TREE_TEXT]
    parser_nlp.initialize(lambda: parsed)  # untrained: its parses are poor, but parses
    nlp = spacy.blank("en", vocab=v)
    nlp.add_pipe("parser", source=parser_nlp)
    nlp.add_pipe("crf_tagger", config={"target": "pos", "structure": "tree",
                                       "model": tree_model(templates=ALL_TREE_TEMPLATES)})
    raw = unparsed_examples(v)
    with nlp.select_pipes(disable=["parser"]):  # as spacy train does for frozen components
        optimizer = nlp.initialize(lambda: raw)
    for _ in range(10):
        nlp.update(raw, sgd=optimizer, annotates=["parser"], exclude=["parser"])
    doc = nlp(" ".join(read_tree(TREE_TEXT[0])[0]))
    assert doc.has_annotation("DEP") and all(t.pos_ for t in doc)
