"""``python -m spacy_crf.convert``: the UNER-to-CoNLL-U join and the CoNLL-2002/2003 converter."""

import pytest
import spacy
from spacy.tokens import DocBin
from spacy.vocab import Vocab

from spacy_crf.converters import JOINS, convert_conll, convert_uner, join_trees, read_conllu, repair_iob

from spacy_crf.commands.convert import main

from conftest import ROOT, run_main
EWT = ROOT / "assets" / "ewt_sample"


def run(args, cwd):
    """``python -m spacy_crf.convert ARGS`` in ``cwd``, its main in this process."""
    return run_main(main, args, cwd)


def conllu_sentence(sid, words, deps=None):
    """A CoNLL-U block: a flat tree, every word attached to the first."""
    lines = [f"# sent_id = {sid}"] if sid is not None else []
    for i, word in enumerate(words, 1):
        head = 0 if i == 1 else 1
        dep = (deps or {}).get(i, "root" if i == 1 else "dep")
        lines.append(f"{i}\t{word}\t{word.lower()}\tX\tXX\t_\t{head}\t{dep}\t_\t_")
    return "\n".join(lines) + "\n"


def iob2_sentence(sid, words, tags):
    lines = [f"# sent_id = {sid}"] if sid is not None else []
    lines += [f"{i}\t{w}\t{t}\t-\t-" for i, (w, t) in enumerate(zip(words, tags), 1)]
    return "\n".join(lines) + "\n"


SENTS = [
    (["Ana", "lives", "in", "Lisboa", "."], ["B-PER", "O", "O", "B-LOC", "O"]),
    (["Berlin", "is", "big"], ["B-LOC", "O", "O"]),
    (["Ana", "lives", "in", "Lisboa", "."], ["B-PER", "O", "O", "B-LOC", "O"]),  # a repeat
    (["He", "works", "at", "Banco", "do", "Brasil"], ["O", "O", "O", "B-ORG", "I-ORG", "I-ORG"]),
]


def files(ner_ids, tree_ids, tree_sents=None, tree_order=None):
    """NER and CoNLL-U texts of SENTS; tree k gets a relation 'mark{k}' on token 2."""
    ner = "\n".join(iob2_sentence(sid, w, t) for sid, (w, t) in zip(ner_ids, SENTS))
    tree_sents = tree_sents or [w for w, _ in SENTS]
    order = tree_order or list(range(len(tree_sents)))
    trees = "\n".join(conllu_sentence(tree_ids[k], tree_sents[k], {2: f"mark{k}"}) for k in order)
    return ner, trees


def marks(docs):
    return [doc[1].dep_ for doc in docs]


def test_join_on_sent_id_even_when_the_files_are_in_another_order():
    ner, trees = files(["a", "b", "c", "d"], ["a", "b", "c", "d"], tree_order=[3, 1, 0, 2])
    report = {}
    docs = convert_uner(ner, Vocab(), trees, report)
    assert report["join"] == "sent_id"
    assert marks(docs) == ["mark0", "mark1", "mark2", "mark3"]
    assert [d.user_data[("spacy_crf", "sent_id")] for d in docs] == ["a", "b", "c", "d"]


def test_join_on_the_token_sequence_when_ids_differ():
    # UNER Portuguese-Bosque / German-PUD style: other ids on each side, trees shuffled
    ner, trees = files(["ner-1", "ner-2", "ner-3", "ner-4"], ["CF1", "CF2", "CF3", "CF4"],
                       tree_order=[3, 2, 1, 0])
    report = {}
    docs = convert_uner(ner, Vocab(), trees, report)
    assert report["join"] == "token sequence"
    # a repeated sentence takes the trees with its tokens in file order: the tree file
    # lists tree 2 before tree 0, so NER sentence 0 gets tree 2
    assert marks(docs) == ["mark2", "mark1", "mark0", "mark3"]
    for doc, (words, tags) in zip(docs, SENTS):
        assert [t.text for t in doc] == words
        assert doc.has_annotation("DEP")
    assert [(e.text, e.label_) for e in docs[3].ents] == [("Banco do Brasil", "ORG")]


def test_join_by_position_when_tokens_differ_but_counts_match():
    # same sentences, tokens spelled differently (e.g. another normalisation), no ids
    other = [[w.upper() for w in words] for words, _ in SENTS]
    ner, trees = files([None] * 4, [None] * 4, tree_sents=other)
    report = {}
    docs = convert_uner(ner, Vocab(), trees, report)
    assert report["join"] == "position"
    assert marks(docs) == ["mark0", "mark1", "mark2", "mark3"]
    # the words are the NER file's, the trees the CoNLL-U file's
    assert [t.text for t in docs[1]] == ["Berlin", "is", "big"]


def test_no_join_names_the_first_failing_sentence_and_why():
    other = [words for words, _ in SENTS]
    other[1] = ["Berlin", "is", "very", "big"]   # a tokenisation difference
    ner, trees = files(["a", "b", "c", "d"], ["a", "b", "c", "d"], tree_sents=other)
    with pytest.raises(ValueError) as err:
        convert_uner(ner, Vocab(), trees)
    message = str(err.value)
    assert "E090" in message and "sentence 2 (sent_id b:" in message
    assert "other tokens (Berlin is very big" in message
    assert "has 4 tokens, not 3" in message


def test_join_error_when_an_id_is_missing_and_the_split_differs():
    ner, trees = files(["a", "b", "c", "d"], ["a", "b", "c", "d"])
    ner = ner + "\n" + iob2_sentence("zz", ["New", "words"], ["O", "O"])
    with pytest.raises(ValueError, match=r"sentence 5 .*no CoNLL-U sentence has sent_id zz.*"
                                         r"no CoNLL-U sentence has its tokens.*5 against 4"):
        convert_uner(ner, Vocab(), trees)


def test_read_conllu_skips_multiword_ranges_and_empty_nodes():
    text = ("# sent_id = x\n1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
            "1\tdo\tdo\tAUX\tVBP\t_\t0\troot\t_\t_\n2\tn't\tnot\tPART\tRB\t_\t1\tadvmod\t_\t_\n"
            "2.1\tx\t_\t_\t_\t_\t_\t_\t_\t_\n")
    [(sid, rows)] = read_conllu(text)
    assert sid == "x" and [r[1] for r in rows] == ["do", "n't"]


def test_sample_join_is_on_sent_id():
    report = {}
    text = (EWT / "en_ewt-dev.iob2").read_text(encoding="utf8")
    docs = convert_uner(text, Vocab(), (EWT / "en_ewt-dev.conllu").read_text(encoding="utf8"),
                        report)
    assert report["join"] == JOINS[0] and len(docs) > 100


def test_uner_cli_says_which_join_it_used(tmp_path):
    ner, trees = files(["n1", "n2", "n3", "n4"], ["t1", "t2", "t3", "t4"])
    (tmp_path / "x.iob2").write_text(ner, encoding="utf8")
    (tmp_path / "x.conllu").write_text(trees, encoding="utf8")
    proc = run(["uner", "x.iob2", "out/x.spacy", "--conllu", "x.conllu"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Joined x.iob2 to x.conllu on token sequence" in proc.stdout
    assert (tmp_path / "out" / "x.spacy").exists()


# ------------------------------------------------------------------ CoNLL-2002/2003

CONLL2003 = (ROOT / "tests" / "assets" / "conll2003_style.txt").read_text(encoding="utf8")

CONLL2002 = """-DOCSTART- O
Quito B-LOC
( O
Ecuador B-LOC
) O
, O
3 O
abr O
( O
NOTIMEX I-ORG
) O
. O

El O
Alto B-LOC
I-LOC
"""


def test_repair_iob_counts_the_tags_it_changes():
    tags, changed = repair_iob(["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-LOC", "I-ORG", "I-ORG"])
    assert tags == ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]
    assert changed == 3
    assert repair_iob(["B-PER", "I-PER", "O"]) == (["B-PER", "I-PER", "O"], 0)


def test_conll2003_columns_docstart_iob1_and_pos():
    docs, counts = convert_conll(CONLL2003, Vocab(), pos_as_tag=True)
    assert counts == {"documents": 2, "repaired": 4}
    # -DOCSTART- is neither a doc nor glued onto the next sentence
    assert [[t.text for t in d] for d in docs] == [
        ["UNESCO", "praises", "Danish", "plan", "."], ["Maria", "Lindqvist"], ["OSLO", "2003-05-14"]]
    assert [(e.text, e.label_) for e in docs[0].ents] == [("UNESCO", "ORG"), ("Danish", "MISC")]
    assert [(e.text, e.label_) for e in docs[1].ents] == [("Maria Lindqvist", "PER")]
    assert [t.tag_ for t in docs[0]] == ["NNP", "VBZ", "JJ", "NN", "."]
    plain, _ = convert_conll(CONLL2003, Vocab())
    assert not plain[0].has_annotation("TAG")


def test_conll2002_word_tag_columns_with_a_stray_inside_tag():
    # the Spanish file's style: WORD TAG; "NOTIMEX" opens an entity with I-ORG
    text = CONLL2002.replace("\nI-LOC\n", "\n")
    docs, counts = convert_conll(text, Vocab())
    assert counts == {"documents": 1, "repaired": 1}
    assert [(e.text, e.label_) for e in docs[0].ents] == [
        ("Quito", "LOC"), ("Ecuador", "LOC"), ("NOTIMEX", "ORG")]
    assert [(e.text, e.label_) for e in docs[1].ents] == [("Alto", "LOC")]


def test_conll_errors_name_the_line():
    with pytest.raises(ValueError, match=r"E091.*'I-LOC'"):
        convert_conll(CONLL2002, Vocab())
    with pytest.raises(ValueError, match=r"E092.*'Quito B-LOC'"):
        convert_conll(CONLL2002.replace("\nI-LOC\n", "\n"), Vocab(), pos_as_tag=True)
    with pytest.raises(ValueError, match=r"E093.*'Maria Lindqvist"):
        convert_conll("Maria NNP X-PER\nLindqvist NNP X-PER\n", Vocab())


def test_conll_cli_writes_one_file_per_split(tmp_path):
    for split in ("esp.train", "esp.testa", "esp.testb"):
        (tmp_path / split).write_text(CONLL2003, encoding="utf8")
    proc = run(["conll", "esp.train", "esp.testa", "esp.testb", "corpus/conll", "--pos-as-tag"],
               tmp_path)
    assert proc.returncode == 0, proc.stderr
    stdout = " ".join(proc.stdout.split())  # wasabi wraps its lines at 80 columns
    assert stdout.count("dropped 2 -DOCSTART- line(s); repaired 4") == 3
    nlp = spacy.blank("en")
    for split in ("esp.train", "esp.testa", "esp.testb"):
        docs = list(DocBin().from_disk(tmp_path / "corpus" / "conll" / f"{split}.spacy")
                    .get_docs(nlp.vocab))
        assert len(docs) == 3 and docs[1].ents[0].label_ == "PER" and docs[0][0].tag_ == "NNP"


def test_conll_cli_errors(tmp_path):
    (tmp_path / "a.txt").write_text(CONLL2003, encoding="utf8")
    proc = run(["conll", "a.txt", "out.spacy"], tmp_path)
    assert proc.returncode != 0 and "give a folder" in proc.stderr
    proc = run(["conll", "missing.txt", "out"], tmp_path)
    assert proc.returncode == 2 and "[CRF-E236] Cannot read INPUT 'missing.txt'" in proc.stderr
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text(CONLL2003, encoding="utf8")
    proc = run(["conll", "a.txt", "d/a.txt", "out"], tmp_path)
    assert proc.returncode != 0 and "same name" in proc.stderr
    (tmp_path / "bad.txt").write_text(CONLL2002, encoding="utf8")
    proc = run(["conll", "bad.txt", "out"], tmp_path)
    assert proc.returncode != 0 and "bad.txt" in proc.stderr and "E091" in proc.stderr
    assert "Traceback" not in proc.stderr
