"""Issue 29 item 10: the same thing the same way, wherever it comes from.

``doc._.crf_nbest`` of an empty doc, n-best entries in process and from
``nlp.pipe(n_process=2)``, the structures E018 / E019 name, W003's fix and the
``spacy-crf.NeuralCRF.v3`` entry point."""

import subprocess
import sys
import tomllib

import pytest
import spacy
from spacy.training import Example

import spacy_crf  # noqa: F401  (registrations)
from spacy_crf.errors import Warnings

from conftest import FROM_INITIALIZE, ROOT, train
TAGGED = [("the cat sat", ["DT", "NN", "VBD"]), ("a dog ran fast", ["DT", "NN", "VBD", "RB"])]


@pytest.fixture(scope="module")
def nlp():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "tag", "n_best": 2})
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in TAGGED]
    train(nlp, examples, 5, optimizer=FROM_INITIALIZE)
    return nlp


def test_an_empty_doc_has_an_empty_n_best_list_alone_and_in_a_batch(nlp):
    """None alone (predict skipped decoding), [] in a batch with a non-empty doc."""
    assert nlp("")._.crf_nbest == []
    empty, full = nlp.pipe(["", "the cat sat"])
    assert empty._.crf_nbest == [] and len(full._.crf_nbest) == 1


def test_n_best_entries_are_the_same_in_process_and_from_n_process_2(nlp):
    """Tuples in process; msgpack made them lists in docs from other processes."""
    texts = ["the cat sat", "a dog ran fast"]
    here = [doc._.crf_nbest for doc in nlp.pipe(texts)]
    there = [doc._.crf_nbest for doc in nlp.pipe(texts, n_process=2)]
    assert here == there
    assert isinstance(here[0][0][0], list)


@pytest.mark.parametrize("name, function", [("spacy-crf.NeuralCRF.v3", "NeuralCRF"),
                                            ("spacy-crf.NeuralCRF.v2", "NeuralCRF_v2"),
                                            ("spacy-crf.FeatureCRF.v1", "FeatureCRF_v1")])
def test_neural_crf_v2_resolves_in_a_fresh_process(tmp_path, name, function):
    """No entry point: registry.architectures.get failed unless spacy_crf was imported
    (the earlier versions, kept for saved pipelines, have theirs too)."""
    script = ("from spacy.util import registry\n"
              f"print(registry.architectures.get('{name}').__name__)\n")
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == function


def test_every_registered_architecture_has_an_entry_point():
    from spacy.util import registry

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    ours = {name for name in registry.architectures.get_all() if name.startswith("spacy-crf.")}
    assert ours <= set(declared["spacy_architectures"])


def test_span_and_n_best_errors_name_every_structure_that_has_them():
    """They said both need structure = "chain", though order 2 and semi-Markov have them."""
    with pytest.raises(ValueError, match=r"\[CRF-E018\].*order = 1 or 2.*semi_markov"):
        spacy.blank("en").add_pipe("crf_tagger", config={"target": "ents", "structure": "tree"})
    with pytest.raises(ValueError, match=r"\[CRF-E019\].*order = 1 or 2.*semi_markov"):
        spacy.blank("en").add_pipe("crf_tagger", config={"target": "tag", "structure": "tree",
                                                         "n_best": 2})


def test_w003_says_how_to_fix_it():
    text = Warnings.W003.format(n=2, name="ner", scheme="BILUO")
    assert "To train on them, fix the tags in the corpus" in text


def test_e015_from_the_feature_templates_names_the_component():
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", name="my_tagger", config={"model": {
        "@architectures": "spacy-crf.FeatureCRF.v2", "templates": ["NORM", "head:NORM"],
        "cluster_templates": None}})
    examples = [Example.from_dict(nlp.make_doc("the cat sat"), {"tags": ["D", "N", "V"]})]
    with pytest.raises(ValueError, match=r"\[CRF-E015\] 'my_tagger' needs a dependency parse"):
        nlp.initialize(lambda: examples)


def test_w003_is_said_without_a_line_of_our_code():
    script = (
        "import spacy, warnings\n"
        "from spacy.tokens import Doc\n"
        "from spacy.training import Example\n"
        "nlp = spacy.blank('en')\n"
        "nlp.add_pipe('crf_tagger', config={'target': 'ents', 'sequence': 'sentence',\n"
        "    'model': {'@architectures': 'spacy-crf.FeatureCRF.v2', 'templates': ['NORM'],\n"
        "              'cluster_templates': None}})\n"
        "# an entity across a sentence boundary breaks the scheme in each sentence\n"
        "words, starts = ['a', 'b', 'c', 'd'], [True, False, True, False]\n"
        "ref = Doc(nlp.vocab, words=words, sent_starts=starts, ents=['O', 'B-X', 'I-X', 'O'])\n"
        "eg = Example(Doc(nlp.vocab, words=words, sent_starts=starts), ref)\n"
        "opt = nlp.initialize(lambda: [eg])\n"
        "nlp.update([eg], sgd=opt)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "[CRF-W003]" in out.stderr
    assert "warn(" not in out.stderr and "Warnings.W003" not in out.stderr
