"""``python -m spacy_crf.debug_data``: the report on a crf_tagger's training data.

Tiny .spacy corpora and configs in ``tmp_path``; ``main`` runs in-process and
its stdout is read from capsys (colours stripped, whitespace collapsed, since
wasabi wraps long lines).
"""

import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import pytest
import spacy
from spacy.tokens import Doc, DocBin, Span

from spacy_crf import set_doc_labels
from spacy_crf.commands._util import not_overrides
from spacy_crf.commands.debug_data import main

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def write_corpus(path: Path, docs: Sequence[Doc]) -> Path:
    DocBin(docs=list(docs), store_user_data=True).to_disk(path)
    return path


def write_config(tmp_path: Path, target: str, **settings) -> Path:
    """A blank English pipeline with one crf_tagger, its config written to disk
    (spaCy's default [corpora] read ${paths.train} and ${paths.dev})."""
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": target, **settings})
    path = tmp_path / "config.cfg"
    nlp.config.to_disk(path)
    return path


def run(capsys, config: Path, train: Optional[Path], dev: Optional[Path],
        *extra: str) -> "tuple[int, str, List[str]]":
    """(exit code, stdout with whitespace collapsed, stdout lines) of ``main``."""
    argv = [str(config)]
    if train is not None:
        argv += ["--paths.train", str(train)]
    if dev is not None:
        argv += ["--paths.dev", str(dev)]
    code = main(argv + list(extra))
    out = _ANSI.sub("", capsys.readouterr().out)
    return code, " ".join(out.split()), out.splitlines()


def table_counts(lines: List[str]) -> Dict[str, tuple]:
    """label -> (train, dev) of the report's label table."""
    counts = {}
    for line in lines:
        m = re.match(r"^(\S+)\s+(\d+)\s+(\d+)\s*$", line)
        if m:
            counts[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return counts


def pos_docs(vocab, rows) -> List[Doc]:
    return [Doc(vocab, words=words, pos=pos) for words, pos in rows]


@pytest.fixture
def pos_corpora(tmp_path):
    vocab = spacy.blank("en").vocab
    train = pos_docs(vocab, [
        (["the", "cat", "sat"], ["DET", "NOUN", "VERB"]),
        (["a", "dog", "ran", "home"], ["DET", "NOUN", "VERB", "ADV"]),
        (["dogs", "ran"], ["NOUN", "VERB"]),
    ]) + [Doc(vocab, words=["no", "tags", "here"]), Doc(vocab, words=["none"])]
    dev = pos_docs(vocab, [(["the", "bird", "flew", "."], ["DET", "NOUN", "VERB", "PUNCT"])])
    return (write_corpus(tmp_path / "train.spacy", train),
            write_corpus(tmp_path / "dev.spacy", dev))


def test_token_label_counts_dev_only_and_unannotated(tmp_path, capsys, pos_corpora):
    train, dev = pos_corpora
    code, out, lines = run(capsys, write_config(tmp_path, "pos"), train, dev)
    assert code == 0
    assert "target 'pos', structure 'chain'" in out
    assert "train: 5 docs, 13 tokens; dev: 1 docs, 4 tokens" in out
    # hand counts: DET 2, NOUN 3, VERB 3, ADV 1 in train; one each (and PUNCT) in dev
    assert table_counts(lines) == {"NOUN": (3, 1), "VERB": (3, 1), "DET": (2, 1),
                                   "ADV": (1, 0), "PUNCT": (0, 1)}
    assert "1 label(s) in dev but not in train (never predicted): PUNCT" in out
    assert "2 of 5 train docs have no 'pos' annotation" in out
    assert "fewer than 10 tokens in train" in out
    assert re.search(r"\d+ checks passed, \d+ warnings, 0 errors", out)


def test_min_count_and_component_option(tmp_path, capsys, pos_corpora):
    train, dev = pos_corpora
    code, out, _ = run(capsys, write_config(tmp_path, "pos"), train, dev,
                       "--min-count", "2", "--component", "crf_tagger")
    assert code == 0
    assert "1 label(s) with fewer than 2 tokens in train: 'ADV' (1)" in out


def test_extension_target_counts(tmp_path, capsys):
    vocab = spacy.blank("en").vocab
    doc = Doc(vocab, words=["the", "cat", "sat", "down"])
    set_doc_labels(doc, "chunk", ["B-NP", "I-NP", "B-VP", "O"])
    other = Doc(vocab, words=["dogs", "bark"])
    set_doc_labels(other, "chunk", ["B-NP", "B-VP"])
    train = write_corpus(tmp_path / "train.spacy", [doc, other])
    code, out, lines = run(capsys, write_config(tmp_path, "_.chunk"), train, train)
    assert code == 0
    assert table_counts(lines) == {"B-NP": (2, 2), "B-VP": (2, 2), "I-NP": (1, 1), "O": (1, 1)}
    assert "Every label of dev is in train" in out
    assert "Every train doc has '_.chunk' annotation" in out


def test_sentence_docs_leave_the_senter_nothing_to_learn(tmp_path, capsys):
    """Docs of one sentence each: the only S of each is its first token, which
    decoding fixes, so the senter learns no boundary; docs of two sentences pass."""
    vocab = spacy.blank("en").vocab
    single = [Doc(vocab, words=w.split(), sent_starts=[True] + [False] * (len(w.split()) - 1))
              for w in ("the cat sat .", "a dog ran home .")]
    train = write_corpus(tmp_path / "single.spacy", single)
    code, out, lines = run(capsys, write_config(tmp_path, "sent_starts"), train, train)
    assert code == 0
    assert table_counts(lines) == {"I": (7, 7), "S": (2, 2)}
    assert "1 label(s) occur in train only where decoding fixes the label" in out
    assert "S" in out.split("nothing of them to learn:")[1].split()[0]
    assert "crf-convert conllu -n 10" in " ".join(out.split())
    words = "the cat sat . a dog ran home .".split()
    joined = [Doc(vocab, words=words, sent_starts=[i in (0, 4) for i in range(len(words))])]
    train = write_corpus(tmp_path / "joined.spacy", joined)
    code, out, _ = run(capsys, write_config(tmp_path, "sent_starts"), train, train)
    assert code == 0 and "decoding fixes" not in out


def test_span_group_counts_overlap_and_longest(tmp_path, capsys):
    vocab = spacy.blank("en").vocab
    doc = Doc(vocab, words="John Smith lives in New York City".split())
    # FIRST overlaps the longer PER: the CRF keeps PER (filter_spans) and drops it
    doc.spans["sc"] = [Span(doc, 0, 2, "PER"), Span(doc, 0, 1, "FIRST"), Span(doc, 4, 7, "LOC")]
    bare = Doc(vocab, words=["nothing", "here"])
    train = write_corpus(tmp_path / "train.spacy", [doc, bare])
    code, out, lines = run(capsys, write_config(tmp_path, "spans:sc", scheme="BIO"), train, train)
    assert code == 0
    assert "scheme BIO" in out
    assert table_counts(lines) == {"PER": (1, 1), "LOC": (1, 1)}
    assert "1 train spans of doc.spans['sc'] overlap a longer one" in out
    assert "1 of 2 train docs have no 'spans:sc' annotation" in out
    assert "Longest train span: 3 tokens" in out


def test_semi_markov_segment_length_and_misaligned_ents(tmp_path, capsys):
    vocab = spacy.blank("en").vocab
    long_ent = Doc(vocab, words="a b c d e f".split(), ents=["B-ORG", "I-ORG", "I-ORG", "I-ORG",
                                                             "O", "O"])
    # "ab" + "c" reads "abc", one token of the pipeline's tokenizer: the entity
    # "ab" ends inside it
    split = Doc(vocab, words=["ab", "c", "x"], spaces=[False, True, False],
                ents=["B-LOC", "O", "O"])
    train = write_corpus(tmp_path / "train.spacy", [long_ent, split])
    config = write_config(tmp_path, "ents",
                          structure={"@structures": "spacy-crf.SemiMarkov.v1",
                                     "max_segment_length": 3})
    code, out, lines = run(capsys, config, train, train)
    assert code == 0
    assert table_counts(lines) == {"ORG": (1, 1), "LOC": (1, 1)}
    assert "1 train spans do not start or end on a token boundary" in out
    assert "Longest train span: 4 tokens" in out
    assert "1 train spans are longer than 3 tokens" in out


def test_tree_structure_without_parse_is_reported(tmp_path, capsys, pos_corpora):
    train, dev = pos_corpora
    code, out, _ = run(capsys, write_config(tmp_path, "pos", structure="tree"), train, dev)
    # the tree structure stops at a doc without a parse (E015): an error
    assert code == 1
    assert "4 of 5 train docs lack DEP (read by its structure = \"tree\")" in out
    assert "E015" in out
    assert re.search(r"\d+ checks passed, \d+ warnings, 1 errors", out)


def test_tree_structure_gold_parse_needs_copying(tmp_path, capsys):
    """spaCy's corpus reader hands the component docs of the text alone: a gold
    parse reaches it only through the copy_attrs augmenter."""
    vocab = spacy.blank("en").vocab
    doc = Doc(vocab, words=["the", "cat", "sat"], pos=["DET", "NOUN", "VERB"],
              heads=[1, 2, 2], deps=["det", "nsubj", "ROOT"])
    train = write_corpus(tmp_path / "train.spacy", [doc])
    config = write_config(tmp_path, "pos", structure="tree")
    code, out, _ = run(capsys, config, train, train)
    assert code == 1
    assert "The reference docs have it (1 of 1)" in out
    assert "spacy-crf.copy_attrs.v1" in out
    cfg = spacy.util.load_config(config)
    augmenter = {"@augmenters": "spacy-crf.copy_attrs.v1", "attrs": ["HEAD", "DEP"]}
    cfg["corpora"]["train"]["augmenter"] = cfg["corpora"]["dev"]["augmenter"] = augmenter
    cfg.to_disk(config)
    code, out, _ = run(capsys, config, train, train)
    assert code == 0
    assert "DEP (read by its structure = \"tree\") is on every train doc" in out


def test_no_label_in_train_is_an_error(tmp_path, capsys):
    vocab = spacy.blank("en").vocab
    train = write_corpus(tmp_path / "train.spacy", [Doc(vocab, words=["no", "tags"])])
    code, out, _ = run(capsys, write_config(tmp_path, "tag"), train, train)
    assert code == 1
    assert "No label of target 'tag' in the train corpus" in out


@pytest.mark.parametrize("args", [
    ["missing.cfg"],                                     # no config file
    ["CONFIG"],                                          # corpus paths null
    ["CONFIG", "--paths.train", "nowhere.spacy", "--paths.dev", "nowhere.spacy"],
    ["CONFIG", "stray"],                                 # not an override
    ["CONFIG", "--min-count", "0"],
    ["CONFIG", "--nosuch.section", "1"],                 # an override of nothing
])
def test_usage_errors_exit_2(tmp_path, capsys, args):
    config = str(write_config(tmp_path, "pos"))
    argv = [config if a == "CONFIG" else str(tmp_path / a) if a.endswith(".cfg") else a
            for a in args]
    assert main(argv) == 2  # click's usage error, as spaCy's commands give
    err = capsys.readouterr().err
    assert "Error:" in err
    if "nowhere.spacy" in args:  # the batch trainer's corpus check, with its fix
        assert "[CRF-E037]" in err and "--paths.train" in err


def test_not_overrides():  # the check fit and debug-data share
    assert not_overrides(["--paths.train", "x", "--a.b=1", "--c.d", "--e.f", "2"]) == []
    assert not_overrides(["--paths", "x"]) == ["--paths"]
    assert not_overrides(["--a.b=1", "x"]) == ["x"]


def test_help_in_a_subprocess():
    proc = subprocess.run([sys.executable, "-m", "spacy_crf.debug_data", "--help"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "crf_tagger" in proc.stdout and "--component" in proc.stdout
