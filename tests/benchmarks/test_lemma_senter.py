"""benchmarks/lemma_senter.py's corpora and scoring, on the shipped EWT sample:
the doc-aware conversion (one doc per ``# newdoc`` document), spaCy's scores of
predictions read back onto Docs of the gold words, and the goals' verdicts."""

import sys

import pytest

from conftest import ROOT
sys.path.insert(0, str(ROOT / "benchmarks"))

import common  # noqa: E402
import lemma_senter  # noqa: E402

SAMPLE = ROOT / "assets" / "ewt_sample" / "en_ewt-test.conllu"


def gold_docs(path):
    import spacy
    from spacy.tokens import DocBin

    return list(DocBin().from_disk(path).get_docs(spacy.blank("en").vocab))


@pytest.mark.parametrize("n_sents,line_breaks", [(0, False), (10, False), (0, True), (10, True)])
def test_convert_conllu_joins_sentences(tmp_path, n_sents, line_breaks):
    text = SAMPLE.read_text(encoding="utf8")
    docs = gold_docs(common.convert_conllu(SAMPLE, tmp_path, n_sents, line_breaks))
    n_sentences = text.count("# sent_id")
    assert sum(len(list(doc.sents)) for doc in docs) == n_sentences
    expected = text.count("# newdoc") if n_sents == 0 else -(-n_sentences // n_sents)
    assert len(docs) == expected
    assert all(doc.has_annotation("SENT_START") for doc in docs)
    # the line breaks before paragraphs are kept only when asked
    assert any(t.text == "\n" for doc in docs for t in doc) == line_breaks


def test_gold_predictions_score_full_marks_and_fewer_starts_less(tmp_path):
    path = common.convert_conllu(SAMPLE, tmp_path, 0)
    docs = gold_docs(path)
    lemmas = [[t.lemma_ for t in doc] for doc in docs]
    assert lemma_senter.score_predictions("lemma", path, lemmas)["lemma_acc"] == 1.0
    starts = [[t.is_sent_start for t in doc] for doc in docs]
    assert lemma_senter.score_predictions("sent_starts", path, starts)["sents_f"] == 1.0
    firsts = [[i == 0 for i in range(len(doc))] for doc in docs]
    scores = lemma_senter.score_predictions("sent_starts", path, firsts)
    assert scores["sents_p"] < 1.0 and scores["sents_r"] < 0.2
    assert scores["starts_r"] == 0.0 and scores["starts_f"] == 0.0
    assert lemma_senter.score_predictions("sent_starts", path, starts)["starts_f"] == 1.0
    pos = [[t.pos_ for t in doc] for doc in docs]
    assert lemma_senter.score_predictions("pos", path, pos)["pos_acc"] == 1.0
    with pytest.raises(ValueError, match="test docs"):
        lemma_senter.score_predictions("lemma", path, lemmas[1:])


def system(score, tok_s, metric="sents_f", train_s=10.0, rss=500.0):
    return {"scores": {metric: score, "starts_f": 0.95}, "decode": {"decode_tokens_per_s": tok_s},
            "train_s": train_s, "train_peak_rss_mb": rss}


def test_goals_pass_and_fail():
    result = {"title": "UD English EWT sentences, the corpus's documents (# newdoc)",
              "systems": {lemma_senter.PLAIN: system(0.92, 2e6),
                          lemma_senter.peer_name("sents_doc"): system(0.915, 5e5)}}
    rows = lemma_senter.goals("sents_doc", result)
    assert [r[2] for r in rows] == ["pass", "pass", "FAIL", "pass"]
    assert rows[0][0].startswith("the corpus's documents (# newdoc): sents_f >= 91.0")
    lemma = {"title": "UD English EWT lemmas",
             "systems": {lemma_senter.PLAIN: system(0.976, 5e4, "lemma_acc", 100.0, 2000.0),
                         lemma_senter.UPOS: system(0.95, 1e6, "pos_acc", 10.0, 500.0)}}
    rows = lemma_senter.goals("lemma", lemma)
    assert rows[0] == ["lemma_acc >= 97.5", "97.60", "pass"]
    assert rows[1][1].startswith("0.05x") and rows[2][1].startswith("10.00x")
    assert rows[3][1] == "4.00x (2,000 / 500)"


# -- the pipeline task: its config and its entities ------------------------------------

def test_the_pipeline_config_has_the_factory_defaults(tmp_path):
    """configs/ewt_pipeline.cfg's components are what ``spacy init fill-config``
    writes from a config naming only each one's factory and target (the old
    three-CRF config went stale when the defaults moved on), in the order and
    with the targets of the benchmark's PIPELINE."""
    from spacy.cli.init_config import fill_config
    from spacy.util import load_config

    config = load_config(ROOT / "configs" / "ewt_pipeline.cfg", interpolate=False)
    targets = {name: config["components"][name]["target"] for name in config["nlp"]["pipeline"]}
    assert list(targets.values()) == [target for target, _ in lemma_senter.PIPELINE]
    base, filled = tmp_path / "base.cfg", tmp_path / "filled.cfg"
    base.write_text(common.factory_config(targets), encoding="utf8")
    fill_config(filled, base, silent=True)
    assert config["components"] == load_config(filled, interpolate=False)["components"]


SAMPLE_IOB2 = SAMPLE.with_suffix(".iob2")


def sample_with_entities(tmp_path, iob2=SAMPLE_IOB2, line_breaks=False):
    """The sample's test split as docs of 10 sentences with UNER's entities from
    ``iob2`` (by default the sample's own .iob2 file): the stats and the docs."""
    path = common.convert_conllu(SAMPLE, tmp_path / "corpus", 10, line_breaks)
    stats = common.add_uner_entities(path, SAMPLE, iob2)
    return stats, gold_docs(path)


@pytest.mark.parametrize("line_breaks", [False, True])
def test_uner_entities_on_every_matching_sentence(tmp_path, line_breaks):
    stats, docs = sample_with_entities(tmp_path, line_breaks=line_breaks)
    # a line-break token closing a sentence is outside every entity
    breaks = [t for doc in docs for t in doc if t.text == "\n"]
    assert bool(breaks) == line_breaks and all(t.ent_iob_ == "O" for t in breaks)
    text = SAMPLE_IOB2.read_text(encoding="utf8")
    assert stats["sentences"] == stats["matched"] == text.count("# sent_id") == 200
    assert stats["unmatched"] == {"no_sent_id": 0, "tokens_differ": 0}
    assert sum(stats["entities"].values()) == text.count("\tB-") == sum(len(d.ents) for d in docs)
    assert all(t.ent_iob_ in ("B", "I", "O") for doc in docs for t in doc)
    # the morphology, lemmas and sentences of spaCy's converter are kept
    assert all(d.has_annotation(a) for d in docs for a in ("MORPH", "LEMMA", "SENT_START"))


def sid_of(block):
    return next(line.split("= ", 1)[1] for line in block.splitlines()
                if line.startswith("# sent_id"))


def test_sentences_uner_lacks_or_tokenizes_otherwise_stay_unannotated(tmp_path):
    from spacy_crf.converters import read_conllu

    blocks = SAMPLE_IOB2.read_text(encoding="utf8").strip("\n").split("\n\n")
    dropped = blocks.pop(3)  # UNER without this sentence
    lines = blocks[10].splitlines()  # and with another first token in this one
    row = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    cols = lines[row].split("\t")
    lines[row] = "\t".join([cols[0], cols[1] + "x", *cols[2:]])
    blocks[10] = "\n".join(lines)
    changed = tmp_path / "changed.iob2"
    changed.write_text("\n\n".join(blocks) + "\n", encoding="utf8")
    stats, docs = sample_with_entities(tmp_path, changed)
    assert stats["matched"] == 198
    assert stats["unmatched"] == {"no_sent_id": 1, "tokens_differ": 1}
    ids = [sid for sid, _ in read_conllu(SAMPLE.read_text(encoding="utf8"))]
    sentences = [s for doc in docs for s in doc.sents]
    assert len(sentences) == len(ids)
    missing = {sid for sid, s in zip(ids, sentences) if all(t.ent_iob_ == "" for t in s)}
    assert missing == {sid_of(dropped), sid_of(blocks[10])}
    assert stats["unmatched_ids"] == {"no_sent_id": [sid_of(dropped)],
                                      "tokens_differ": [sid_of(blocks[10])]}
    assert all(t.ent_iob_ != "" for sid, s in zip(ids, sentences) if sid not in missing for t in s)
    # no UNER file: nothing matches, nothing is annotated
    stats, docs = sample_with_entities(tmp_path / "none", tmp_path / "absent.iob2")
    assert stats["matched"] == 0 and stats["unmatched"]["no_sent_id"] == 200
    assert stats["uner_file"] is None and stats["entities"] == {}
    assert not any(doc.has_annotation("ENT_IOB") for doc in docs)


def test_the_pipeline_title_names_the_components_of_the_run():
    def result(pipes):
        return {"systems": {lemma_senter.tuned_name("pipeline"): {},
                            "spaCy x (efficiency config)": {"decode": {"pipeline": pipes}}}}

    three = ["tok2vec", "senter", "morphologizer", "trainable_lemmatizer"]
    assert lemma_senter.pipeline_title(result(three)) == (
        "a pipeline of sent_starts, morph and lemma CRFs against spaCy's senter, "
        "morphologizer and trainable_lemmatizer, on raw text")
    assert lemma_senter.pipeline_title(result(three + ["ner"])) == (
        "a pipeline of sent_starts, morph, lemma and ents CRFs against spaCy's senter, "
        "morphologizer, trainable_lemmatizer and ner, on raw text")


@pytest.mark.slow
def test_the_pipeline_config_trains_and_its_pipeline_annotates_raw_text(tmp_path):
    """configs/ewt_pipeline.cfg on the sample's docs of 10 sentences with UNER's
    entities: a short spacy train, then the saved pipeline loaded by spacy.load
    sets sentences, morphology, lemmas and entities on raw text."""
    import spacy
    from conftest import run_python

    corpus = {}
    for split in ("train", "dev"):
        conllu = SAMPLE.with_name(f"en_ewt-{split}.conllu")
        corpus[split] = common.convert_conllu(conllu, tmp_path / "corpus", 10)
        assert common.add_uner_entities(corpus[split], conllu, conllu.with_suffix(".iob2"))["entities"]
    run_python(["-m", "spacy", "train", ROOT / "configs" / "ewt_pipeline.cfg", "--output",
                tmp_path / "out", "--paths.train", corpus["train"], "--paths.dev", corpus["dev"],
                "--training.max_steps", "40", "--training.eval_frequency", "20"], cwd=ROOT)
    nlp = spacy.load(tmp_path / "out" / "model-last")
    assert nlp.pipe_names == ["senter", "morphologizer", "lemmatizer", "ner"]
    doc = nlp("The president met Angela Merkel in Berlin on Monday. They talked about "
              "trade and the companies were running new tests. Google said nothing.")
    assert len(list(doc.sents)) >= 2
    assert all(t.pos_ and t.lemma_ for t in doc) and any(str(t.morph) for t in doc)
    assert doc.has_annotation("ENT_IOB")
    assert {t.lemma_ for t in doc} >= {"the", "."}


def test_gold_line_breaks_are_left_out_of_the_token_scores():
    # spaCy's token scores skip a predicted whitespace token but count a gold
    # one as missed: perfect predictions score below 1 until the gold line
    # breaks hold no POS, morphology or lemma
    import spacy
    from spacy.pipeline.lemmatizer import lemmatizer_score
    from spacy.pipeline.morphologizer import morphologizer_score
    from spacy.training import Example

    from spacy_crf.conllu_documents import conllu_documents

    docs = conllu_documents(SAMPLE.read_text(encoding="utf8"), 10, line_breaks=True)[:3]
    assert any(t.is_space for doc in docs for t in doc)

    def scores(gold):
        examples = [Example(doc.copy(), ref) for doc, ref in zip(docs, gold)]
        return {**morphologizer_score(examples), **lemmatizer_score(examples)}

    gold = [doc.copy() for doc in docs]
    before = scores(gold)
    assert all(before[k] < 1.0 for k in ("pos_acc", "morph_acc", "lemma_acc"))
    lemma_senter.whitespace_unscored(gold)
    after = scores(gold)
    assert all(after[k] == 1.0 for k in ("pos_acc", "morph_acc", "lemma_acc"))
    # the words keep their annotation
    assert [t.lemma_ for t in gold[0] if not t.is_space] == [t.lemma_ for t in docs[0]
                                                             if not t.is_space]
