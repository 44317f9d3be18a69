"""CoNLL-U as documents (spacy_crf.conllu_documents, ``crf-convert conllu``): the
corpus's documents or docs of N sentences, and a line-break token before each
paragraph, with everything spaCy's converter reads kept."""

import pytest
import spacy
from spacy.tokens import Doc, DocBin
from spacy.training.converters import conllu_to_docs

from spacy_crf.commands.convert import main
from spacy_crf.conllu_documents import LINE_BREAK, conllu_documents

from conftest import ROOT, run_main

SAMPLE = ROOT / "assets" / "ewt_sample" / "en_ewt-test.conllu"
TEXT = SAMPLE.read_text(encoding="utf8")
BLOCKS = TEXT.strip().split("\n\n")


def opens(block, mark):
    return any(line.startswith(mark) for line in block.split("\n"))


def without_breaks(doc):
    return [(t.text, t.lemma_, t.pos_, t.tag_, str(t.morph), t.dep_, t.is_sent_start)
            for t in doc if t.text != LINE_BREAK]


def test_documents_are_cut_at_newdoc_and_keep_every_sentence():
    docs = conllu_documents(TEXT)
    assert len(docs) == TEXT.count("# newdoc") > 1
    assert sum(len(list(doc.sents)) for doc in docs) == len(BLOCKS)
    # the first sentence of each doc is the one its # newdoc opens
    firsts = [i for i, block in enumerate(BLOCKS) if opens(block, "# newdoc")]
    sentence_docs = list(conllu_to_docs(TEXT, n_sents=1, no_print=True))
    assert [doc[0].text for doc in docs] == [sentence_docs[i][0].text for i in firsts]


def test_docs_of_n_sentences_are_spacys_converter_output():
    ours = conllu_documents(TEXT, n_sents=10)
    spacys = list(conllu_to_docs(TEXT, n_sents=10, no_print=True))
    assert len(ours) == len(spacys) == -(-len(BLOCKS) // 10)
    for a, b in zip(ours, spacys):
        assert without_breaks(a) == without_breaks(b)
        assert [(e.start, e.end, e.label_) for e in a.ents] == [(e.start, e.end, e.label_)
                                                                for e in b.ents]


@pytest.mark.parametrize("n_sents", [0, 10])
def test_a_line_break_ends_each_sentence_a_paragraph_follows(n_sents):
    plain = conllu_documents(TEXT, n_sents)
    broken = conllu_documents(TEXT, n_sents, line_breaks=True)
    # the sentences after which a break is expected: a paragraph follows inside the doc
    expected = 0
    starts = [i for i, block in enumerate(BLOCKS)
              if (opens(block, "# newdoc") if n_sents == 0 else i % n_sents == 0)]
    for i, block in enumerate(BLOCKS):
        if i not in starts and (opens(block, "# newpar") or opens(block, "# newdoc")):
            expected += 1
    breaks = [t for doc in broken for t in doc if t.text == LINE_BREAK]
    assert len(breaks) == expected > 0
    for token in breaks:
        # closes its sentence, as spaCy's tokenizer and senter have a line break
        assert token.is_space and token.pos_ == "SPACE" and token.tag_ == "_SP"
        assert not token.is_sent_start and token.head.i == token.i - 1
        assert token.i + 1 == len(token.doc) or token.doc[token.i + 1].is_sent_start
    for a, b in zip(plain, broken):
        assert without_breaks(a) == without_breaks(b)  # nothing else changes
        assert len(list(a.sents)) == len(list(b.sents))
    # no break before a doc's first sentence, nor after its last
    assert not any(doc[0].text == LINE_BREAK or doc[-1].text == LINE_BREAK for doc in broken)


@pytest.mark.parametrize("option", ["merge_subtokens", "append_morphology"])
def test_spacys_reading_options_pass_through(option):
    ours = conllu_documents(TEXT, n_sents=10, **{option: True})
    spacys = list(conllu_to_docs(TEXT, n_sents=10, no_print=True, **{option: True}))
    assert [without_breaks(d) for d in ours] == [without_breaks(d) for d in spacys]
    # and they change what is read: fewer tokens, or tags with the FEATS
    plain = conllu_documents(TEXT, n_sents=10)
    assert [without_breaks(d) for d in ours] != [without_breaks(d) for d in plain]


def test_a_sentence_that_cannot_take_a_line_break_is_named():
    # spaCy's whitespace augmentation leaves alone a doc with spans; the
    # converter says which sentence, rather than drop the break unsaid
    from spacy.lang.xx import MultiLanguage

    from spacy_crf.conllu_documents import _end_with_line_break

    nlp = MultiLanguage()
    doc = Doc(nlp.vocab, words=["Hello", "there"], sent_starts=[True, False])
    assert [t.text for t in _end_with_line_break(doc, nlp)] == ["Hello", "there", "\n"]
    doc.spans["greeting"] = [doc[0:1]]
    with pytest.raises(ValueError, match="CRF-E233.*Hello there"):
        _end_with_line_break(doc, nlp)


def test_bad_input_names_the_problem():
    assert conllu_documents("") == []
    with pytest.raises(ValueError, match=r"CRF-E232.*10 tab-separated columns"):
        conllu_documents("1\tWord\n")
    with pytest.raises(ValueError, match="CRF-E234"):
        conllu_documents(TEXT, n_sents=-1)


def test_cli_writes_documents_with_line_breaks(tmp_path):
    proc = run_main(main, ["conllu", SAMPLE, tmp_path / "out" / "test.spacy", "-n", "10",
                           "--line-breaks"])
    assert proc.returncode == 0, proc.stderr
    stdout = " ".join(proc.stdout.split())
    nlp = spacy.blank("en")
    docs = list(DocBin().from_disk(tmp_path / "out" / "test.spacy").get_docs(nlp.vocab))
    n_breaks = sum(t.text == LINE_BREAK for doc in docs for t in doc)
    assert f"Kept {n_breaks} line break(s)" in stdout and n_breaks > 0
    assert f"Wrote {len(docs)} docs" in stdout and len(docs) == -(-len(BLOCKS) // 10)
    assert all(isinstance(doc, Doc) and doc.has_annotation("SENT_START") for doc in docs)


def test_cli_warns_when_a_file_without_newdoc_becomes_one_doc(tmp_path):
    text = "\n".join(line for line in TEXT.split("\n") if not line.startswith("# newdoc"))
    (tmp_path / "flat.conllu").write_text(text, encoding="utf8")
    proc = run_main(main, ["conllu", tmp_path / "flat.conllu", tmp_path / "flat.spacy"])
    assert proc.returncode == 0, proc.stderr
    assert "no '# newdoc' mark" in " ".join(proc.stdout.split()) and "Wrote 1 docs" in proc.stdout
    proc = run_main(main, ["conllu", SAMPLE, tmp_path / "docs.spacy"])
    assert "newdoc' mark" not in proc.stdout


def test_cli_errors_exit_2_without_a_traceback(tmp_path):
    (tmp_path / "bad.conllu").write_text("not conllu at all\n", encoding="utf8")
    proc = run_main(main, ["conllu", tmp_path / "bad.conllu", tmp_path / "out.spacy"])
    assert proc.returncode == 2 and "CRF-E232" in proc.stderr and "bad.conllu" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "out.spacy").exists()
