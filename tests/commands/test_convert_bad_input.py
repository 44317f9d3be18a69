"""Issue 29: ``convert uner`` checks its input: tags that are not IOB2, lines with
too few columns and CoNLL-U trees that are not trees each get an error naming
the line or sentence, where they were mangled or converted silently."""

import pytest
from spacy.vocab import Vocab

from spacy_crf.commands.convert import main as convert_main
from spacy_crf.converters import convert_uner
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
