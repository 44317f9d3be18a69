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


def test_newdoc_documents_cut_at_every_mark():
    text = SAMPLE.read_text(encoding="utf8")
    documents = common.newdoc_documents(text)
    assert len(documents) == text.count("# newdoc")
    assert sum(len(d) for d in documents) == text.count("# sent_id")
    assert all(d[0].lstrip().startswith("# newdoc") for d in documents)
    # sentences before the first mark are a document of their own
    assert common.newdoc_documents("1\ta\n\n# newdoc id = x\n1\tb\n\n") == [["1\ta"], ["# newdoc id = x\n1\tb"]]


@pytest.mark.parametrize("n_sents", [0, 10])
def test_convert_conllu_joins_sentences(tmp_path, n_sents):
    text = SAMPLE.read_text(encoding="utf8")
    docs = gold_docs(common.convert_conllu(SAMPLE, tmp_path, n_sents))
    n_sentences = text.count("# sent_id")
    assert sum(len(list(doc.sents)) for doc in docs) == n_sentences
    expected = text.count("# newdoc") if n_sents == 0 else -(-n_sentences // n_sents)
    assert len(docs) == expected
    assert all(doc.has_annotation("SENT_START") for doc in docs)


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
