"""Issue 29: ``convert uner`` checks its input: tags that are not IOB2, lines with
too few columns and CoNLL-U trees that are not trees each get an error naming
the line or sentence, where they were mangled or converted silently. ``convert
chunks`` checks its lines the same way, and every subcommand its paths: each a
coded message and exit 2, with nothing written."""

import pytest
from spacy.vocab import Vocab

from spacy_crf.commands.convert import main as convert_main
from spacy_crf.converters import convert_chunks, convert_uner
from commands.test_convert import conllu_sentence, iob2_sentence
from conftest import run_main


def test_a_tag_that_is_not_iob2_is_named_with_its_line():
    """PERSON became entity type RSON."""
    text = (iob2_sentence("s1", ["Ana", "runs"], ["B-PER", "O"]) + "\n"
            + iob2_sentence("s2", ["Bob", "walks"], ["PERSON", "O"]))
    with pytest.raises(ValueError, match=r"\[CRF-E144\] Line 6 \(sentence s2\).*'PERSON'"):
        convert_uner(text, Vocab())


@pytest.mark.parametrize("tag", ["B-", "X-PER", "b-PER", "I"])
def test_other_malformed_tags_are_refused(tag):
    with pytest.raises(ValueError, match=r"\[CRF-E144\]"):
        convert_uner(iob2_sentence("s1", ["Ana"], [tag]), Vocab())


def test_a_line_with_too_few_columns_is_named():
    """A bare IndexError, with no line number."""
    text = "# sent_id = s1\n1\tAna\tB-PER\t-\t-\n2 runs O\n"
    with pytest.raises(ValueError, match=r"\[CRF-E145\] Line 3 .* 1 column"):
        convert_uner(text, Vocab())


def cyclic_tree(sid, words):
    """A CoNLL-U block where tokens 2 and 3 head each other."""
    heads = {1: 0, 2: 3, 3: 2}
    lines = [f"# sent_id = {sid}"]
    for i, word in enumerate(words, 1):
        lines.append(f"{i}\t{word}\t{word}\tX\tXX\t_\t{heads[i]}\tdep\t_\t_")
    return "\n".join(lines) + "\n"


def test_a_head_cycle_in_the_conllu_is_refused():
    """It converted silently and failed only in training, as E016."""
    words = ["Ana", "runs", "fast"]
    ner = iob2_sentence("s1", words, ["B-PER", "O", "O"])
    with pytest.raises(ValueError, match=r"\[CRF-E146\].*sent_id s1.*cycle"):
        convert_uner(ner, Vocab(), cyclic_tree("s1", words))


@pytest.mark.parametrize("head, why", [("7", "not 0..3"), ("_", "not 0..3"),
                                       ("2", "its own head")])
def test_heads_out_of_range_are_refused(head, why):
    words = ["Ana", "runs", "fast"]
    tree = conllu_sentence("s1", words).replace("2\truns\truns\tX\tXX\t_\t1",
                                                f"2\truns\truns\tX\tXX\t_\t{head}")
    with pytest.raises(ValueError, match=rf"\[CRF-E146\].*{why}"):
        convert_uner(iob2_sentence("s1", words, ["B-PER", "O", "O"]), Vocab(), tree)


def test_the_command_exits_2_with_the_line(tmp_path):
    (tmp_path / "x.iob2").write_text(iob2_sentence("s1", ["Ana"], ["PERSON"]), encoding="utf8")
    run = run_main(convert_main, ["uner", "x.iob2", "x.spacy"], tmp_path)  # python -m, in process
    assert run.returncode == 2
    assert "[CRF-E144] Line 2" in run.stderr and "Traceback" not in run.stderr
    assert "--conllu" not in run.stderr  # the join hint is for join errors only
    assert not (tmp_path / "x.spacy").exists()


# -- chunks: lines that are not WORD POS CHUNK -----------------------------------

@pytest.mark.parametrize("text, line, why", [
    # at the end of a sentence: exit 0, the POS column read as chunk tags (P, Z)
    ("He PRP B-NP\nreckons VBZ\n", 2, r"2 column\(s\), not 3: 'reckons VBZ'"),
    # mid-sentence: spaCy's E177, a traceback
    ("He PRP B-NP\nreckons VBZ\nthe DT B-NP\n", 2, r"2 column\(s\), not 3: 'reckons VBZ'"),
    # spaCy read any first letter as the IOB part: Q-NP was stored as B-NP
    ("He PRP Q-NP\nreckons VBZ B-VP\n", 1, r"invalid chunk tag, 'Q-NP'"),
    ("He PRP B-NP\n\nit PRP NP\n", 3, r"invalid chunk tag, 'NP'"),  # a traceback
    ("He PRP B-NP NP\n", 1, r"4 column\(s\), not 3"),  # the tag read from column 3
])
def test_a_bad_chunks_line_is_named_with_its_number(text, line, why):
    with pytest.raises(ValueError, match=rf"\[CRF-E235\] Line {line} .*{why}.*WORD POS CHUNK"):
        convert_chunks(text)


def test_good_chunks_lines_still_convert():
    text = "-DOCSTART- -X- O O\n\nHe PRP B-NP\nreckons VBZ B-VP\n\nthe DT B-NP\ncat NN I-NP\n"
    tags = [token._.chunk for doc in convert_chunks(text) for token in doc]
    assert tags == ["B-NP", "B-VP", "B-NP", "I-NP"]


@pytest.mark.parametrize("text", ["He PRP B-NP\nreckons VBZ\n",
                                  "He PRP B-NP\nreckons VBZ\nthe DT B-NP\n",
                                  "He PRP Q-NP\nreckons VBZ B-VP\n"])
def test_the_chunks_command_exits_2_and_writes_nothing(tmp_path, text):
    (tmp_path / "in.txt").write_text(text, encoding="utf8")
    run = run_main(convert_main, ["chunks", "in.txt", "out/c.spacy"], tmp_path)
    assert run.returncode == 2
    assert "[CRF-E235]" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "out").exists()


# -- every subcommand: inputs missing or folders, outputs of the wrong kind --------

GOOD_INPUTS = {
    "chunks": "He PRP B-NP\nreckons VBZ B-VP\n",
    "uner": iob2_sentence("s1", ["Ana"], ["B-PER"]),
    "conllu": conllu_sentence("s1", ["Ana", "runs"]),
    "conll": "EU NNP B-ORG\n\n",
}


@pytest.mark.parametrize("sub", sorted(GOOD_INPUTS))
@pytest.mark.parametrize("case", ["missing input", "input folder"])
def test_an_input_that_is_not_a_file_is_refused(tmp_path, sub, case):
    """conll: IsADirectoryError (a traceback) for a folder; the others: click's usage error,
    without a code."""
    if case == "input folder":
        (tmp_path / "in").mkdir()
    run = run_main(convert_main, [sub, "in", "out/o.spacy" if sub != "conll" else "out"],
                   tmp_path)
    assert run.returncode == 2, run.stderr
    assert "[CRF-E236] Cannot read INPUT 'in'" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "out").exists()


def test_a_missing_conllu_treebank_is_refused(tmp_path):
    (tmp_path / "in.iob2").write_text(GOOD_INPUTS["uner"], encoding="utf8")
    run = run_main(convert_main, ["uner", "in.iob2", "o.spacy", "--conllu", "no.conllu"],
                   tmp_path)
    assert run.returncode == 2 and "[CRF-E236] Cannot read --conllu 'no.conllu'" in run.stderr
    assert not (tmp_path / "o.spacy").exists()


@pytest.mark.parametrize("sub", sorted(GOOD_INPUTS))
@pytest.mark.parametrize("case", ["wrong kind", "under a file"])
def test_an_output_that_cannot_be_written_is_refused(tmp_path, sub, case):
    """conll's OUTPUT_DIR an existing file: FileExistsError (a traceback); the others'
    OUTPUT a folder: click's usage error; any OUTPUT under a file: a traceback."""
    (tmp_path / "in").write_text(GOOD_INPUTS[sub], encoding="utf8")
    (tmp_path / "a_file").write_text("keep", encoding="utf8")
    (tmp_path / "a_dir").mkdir()
    output = {"wrong kind": "a_file" if sub == "conll" else "a_dir",
              "under a file": "a_file/out"}[case]
    run = run_main(convert_main, [sub, "in", output], tmp_path)
    assert run.returncode == 2, run.stderr
    assert "[CRF-E237] Cannot write OUTPUT" in run.stderr and "Traceback" not in run.stderr
    assert (tmp_path / "a_file").read_text(encoding="utf8") == "keep"
    assert not any((tmp_path / "a_dir").iterdir())


def test_conll_writes_nothing_when_a_later_input_is_bad(tmp_path):
    """The first input's .spacy file (and the folder) were written before the second
    input's error."""
    (tmp_path / "a.conll").write_text(GOOD_INPUTS["conll"], encoding="utf8")
    (tmp_path / "b.conll").write_text("EU NNP X-ORG\n\n", encoding="utf8")
    run = run_main(convert_main, ["conll", "a.conll", "b.conll", "out"], tmp_path)
    assert run.returncode == 2 and "[CRF-E093]" in run.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("sub", sorted(GOOD_INPUTS))
def test_good_paths_still_convert(tmp_path, sub):
    (tmp_path / "in").write_text(GOOD_INPUTS[sub], encoding="utf8")
    output = "new/out" if sub == "conll" else "new/folder/o.spacy"
    run = run_main(convert_main, [sub, "in", output], tmp_path)
    assert run.returncode == 0, run.stderr
    assert list((tmp_path / "new").rglob("*.spacy"))
