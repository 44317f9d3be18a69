"""Brown cluster tables as read at ``initialize``: what a paths file or a JSON
table may not hold gets E123 naming the file and the line (or the word), and
the all-zero path of a paths file keeps a cluster of its own."""

import gzip

import pytest
import spacy
from spacy.training import Example

from spacy_crf.features import brown_clusters
from spacy_crf.features.brown_clusters import path_value, read_cluster_file
from spacy_crf.features.word_table import word_keys


def value_of(table, word):
    return int(table.lookup(word_keys([word]))[0, 0])


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf8")
    return path


def test_an_all_zero_path_keeps_a_cluster_of_its_own(tmp_path):
    # every Brown tree has one (its leftmost leaf); in spaCy's encoding it reads 0, no cluster
    assert path_value("000") == path_value("0001") == 8 and path_value("0") == 2
    assert path_value("0010") == 4 and path_value("1") == 1  # other paths: spaCy's encoding
    paths = write(tmp_path, "paths", "000\tthe\t10\n001\ta\t9\n01\tcat\t5\n1\tsat\t5\n")
    table = read_cluster_file(paths)
    values = [value_of(table, w) for w in ("the", "a", "cat", "sat", "unknown")]
    assert values == [8, 4, 2, 1, 0] and len(set(values)) == 5


def test_a_json_table_is_read_as_it_is(tmp_path):
    table = read_cluster_file(write(tmp_path, "c.json", '{"the": 0, "cat": 3}'))
    assert value_of(table, "the") == 0 and value_of(table, "cat") == 3


@pytest.mark.parametrize("name,text,why", [
    ("bits64.paths", "0\tcat\t3\n" + "1" * 64 + "\tthe\t10\n", r"line 2: the path .* has 64 bits"),
    ("bits70.paths", "1" * 70 + "\tthe\t10\n", r"line 1: the path .* has 70 bits"),
    ("big.json", '{"the": %d}' % 2 ** 63, r"'the' has 9223372036854775808"),
    ("big64.json", '{"the": %d}' % (2 ** 64 - 1), r"'the' has 18446744073709551615"),
])
def test_a_path_of_more_than_63_bits_is_refused_with_its_line(tmp_path, name, text, why):
    with pytest.raises(ValueError, match=rf"^\[CRF-E123\] .*{name}: .*{why}"):
        read_cluster_file(write(tmp_path, name, text))


def test_a_lookups_table_of_too_large_values_is_refused():
    nlp = spacy.blank("en")
    table = nlp.vocab.lookups.add_table("lexeme_cluster", {"the": 2 ** 63})
    with pytest.raises(ValueError, match=r"^\[CRF-E123\].*2\*\*63 or more"):
        brown_clusters.table_from_lookups(table)


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_paths_line_that_is_not_utf8_is_named(tmp_path, gzipped):
    data = "0\tthe\t10\n10\tcafé\t5\n".encode("latin-1")
    path = tmp_path / ("latin1.paths.gz" if gzipped else "latin1.paths")
    path.write_bytes(gzip.compress(data) if gzipped else data)
    with pytest.raises(ValueError, match=r"^\[CRF-E123\].*latin1.paths(.gz)?: line 2 is not "
                                         r"UTF-8"):
        read_cluster_file(path)


def test_a_plain_file_named_gz_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match=r"^\[CRF-E123\].*plain.paths.gz: it cannot be read"):
        read_cluster_file(write(tmp_path, "plain.paths.gz", "0\tthe\t10\n"))


@pytest.mark.parametrize("name,text,why", [
    ("empty.paths", "", "it holds no words"),
    ("blank.paths", "\n\n", "it holds no words"),
    ("empty.json", "{}", "it holds no words"),
    ("zeros.json", '{"the": 0, "cat": 0}', "none of its 2 words has a cluster"),
    ("dup.paths", "0\tthe\t10\n11\tcat\t3\n10\tthe\t5\n",
     "line 3 gives 'the' a cluster, as line 1 did"),
    ("noword.paths", "0\tthe\t10\n10\t\t5\n", "line 2 has no word"),
])
def test_an_empty_table_or_a_word_given_twice_is_refused(tmp_path, name, text, why):
    with pytest.raises(ValueError, match=rf"^\[CRF-E123\] .*{name}: {why}"):
        read_cluster_file(write(tmp_path, name, text))


def test_initialize_refuses_a_table_of_no_words(tmp_path):
    nlp = spacy.blank("fr")
    nlp.add_pipe("crf_tagger", config={"target": "pos"})
    path = write(tmp_path, "empty.json", "{}")
    nlp.config["initialize"]["components"]["crf_tagger"] = {"clusters": str(path)}
    doc = nlp.make_doc("the cat")
    with pytest.raises(ValueError, match=r"^\[CRF-E123\].*empty.json: it holds no words"):
        nlp.initialize(lambda: [Example.from_dict(doc, {"pos": ["DET", "NOUN"]})])
