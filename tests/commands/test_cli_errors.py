"""Inputs a user gets wrong, given to crf-evaluate, crf-plots and crf-debug-data: each is
a ``✘`` line with its code and exit code 2 (1 for a failed debug-data check), never a
traceback.

Tiny pipelines trained in-process (a chain tagger, and a tree tagger whose saved
training config copied the gold trees, as the ``*_tree`` configs do); the commands run
as their ``main(argv)`` in this process (conftest.run_main).
"""

import re
from pathlib import Path
from typing import Dict

import pytest
import spacy
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from spacy.util import load_config

from conftest import SMALL_MODEL, make_nlp, run_main, train
from spacy_crf.commands.debug_data import main as debug_data_main
from spacy_crf.commands.evaluate import main as evaluate_main
from spacy_crf.errors import Errors

# word/UPOS/head/dep, heads absolute
TREES = [
    "the/DET/1/det cat/NOUN/2/nsubj sat/VERB/2/ROOT ./PUNCT/2/punct",
    "a/DET/1/det dog/NOUN/2/nsubj ran/VERB/2/ROOT home/ADV/2/advmod ./PUNCT/2/punct",
    "dogs/NOUN/1/nsubj chased/VERB/1/ROOT the/DET/3/det ball/NOUN/1/obj ./PUNCT/1/punct",
]
TREE_MODEL = {"@architectures": "spacy-crf.FeatureCRF.v2", "n_buckets": 1024,
              "templates": ["NORM[-1..1]", "head:NORM"], "cluster_templates": None}
COPY_TREES = {"@augmenters": "spacy-crf.copy_attrs.v1", "attrs": ["HEAD", "DEP"]}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def gold_tree(vocab, line: str) -> Doc:
    rows = [token.rsplit("/", 3) for token in line.split()]
    return Doc(vocab, words=[r[0] for r in rows], pos=[r[1] for r in rows],
               heads=[int(r[2]) for r in rows], deps=[r[3] for r in rows])


def said(result) -> str:
    """A command's stdout and stderr, colours stripped and whitespace collapsed
    (wasabi wraps its lines at 80 columns)."""
    return " ".join(_ANSI.sub("", result.stdout + result.stderr).split())


def assert_usage_error(result, code: str) -> str:
    text = said(result)
    assert result.returncode == 2, text
    assert f"✘ [{code}]" in text and "Traceback" not in text, text
    return text


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Dict[str, Path]:
    """A chain tagger (tag) and a tree tagger (pos, structure = "tree") whose saved
    config copies HEAD and DEP in [corpora], their corpus, and a corrupt .spacy."""
    folder = tmp_path_factory.mktemp("cli_errors")
    chain = make_nlp("tag", SMALL_MODEL)
    words = [["the", "cat", "sat"], ["a", "dog", "ran", "home"]]
    tags = [["DT", "NN", "VBD"], ["DT", "NN", "VBD", "RB"]]
    examples = [Example(Doc(chain.vocab, words=w), Doc(chain.vocab, words=w, tags=t))
                for w, t in zip(words, tags)]
    train(chain, examples, 5)
    chain.to_disk(folder / "chain")
    DocBin(docs=[eg.reference for eg in examples]).to_disk(folder / "tags.spacy")

    tree = spacy.blank("en")
    tree.add_pipe("crf_tagger", config={"target": "pos", "structure": "tree",
                                        "model": TREE_MODEL})
    gold = [gold_tree(tree.vocab, line) for line in TREES]
    train(tree, [Example(doc.copy(), doc) for doc in gold], 5)
    tree.to_disk(folder / "tree")
    # as trained from a config whose [corpora] copied the gold trees onto the inputs
    config = load_config(folder / "tree" / "config.cfg")
    for split in ("train", "dev"):
        config["corpora"][split] = {"@readers": "spacy.Corpus.v1", "path": "${paths.%s}" % split,
                                    "augmenter": dict(COPY_TREES)}
    config.to_disk(folder / "tree" / "config.cfg")
    DocBin(docs=gold).to_disk(folder / "trees.spacy")

    (folder / "corrupt.spacy").write_bytes(b"garbage")
    return {"chain": folder / "chain", "tags": folder / "tags.spacy", "tree": folder / "tree",
            "trees": folder / "trees.spacy", "corrupt": folder / "corrupt.spacy",
            "folder": folder}


@pytest.fixture(scope="module")
def plots_main():
    pytest.importorskip("matplotlib")
    from spacy_crf.commands.plots import main

    return main


# -- 1. a tree model evaluated with nothing copied: W004 says it cannot run, then E015


def test_evaluate_tree_model_copying_nothing_is_an_error_not_a_traceback(models):
    with pytest.warns(UserWarning, match=r"W004.*reads DEP") as caught:
        result = run_main(evaluate_main, [models["tree"], models["trees"], "--copy", ""])
    assert_usage_error(result, "CRF-E015")
    (w004,) = [str(w.message) for w in caught if "W004" in str(w.message)]
    assert "cannot predict without a parse" in w004 and "scores" not in w004


# -- 2. crf-plots copies by default what the training config copied, as crf-evaluate


def test_plots_copies_what_the_training_config_copied(models, plots_main):
    out = models["folder"] / "plots_default"
    result = run_main(plots_main, [models["tree"], models["trees"], out])
    assert result.returncode == 0, said(result)
    assert "Copying ['HEAD', 'DEP'] from the corpus" in said(result)
    assert (out / "confusion.png").is_file()
    evaluated = run_main(evaluate_main, [models["tree"], models["trees"]])
    assert evaluated.returncode == 0, said(evaluated)
    assert "Copying ['HEAD', 'DEP'] from the corpus" in said(evaluated)


def test_plots_tree_model_copying_nothing_is_an_error(models, plots_main):
    out = models["folder"] / "plots_nothing"
    with pytest.warns(UserWarning, match=r"W004"):
        result = run_main(plots_main, [models["tree"], models["trees"], out, "--copy", ""])
    assert_usage_error(result, "CRF-E015")
    assert not out.exists()


# -- 3. --copy: attributes it cannot copy, HEAD without DEP, lower case


@pytest.mark.parametrize("command", ["evaluate", "plots"])
@pytest.mark.parametrize("copy,code", [("FOO", "CRF-E245"), ("HEAD", "CRF-E246"),
                                       ("dep", "CRF-E246")])
def test_bad_copy_is_a_coded_usage_error(models, plots_main, command, copy, code):
    main = evaluate_main if command == "evaluate" else plots_main
    args = [models["tree"], models["trees"]]
    if command == "plots":
        args.append(models["folder"] / f"plots_{copy}")
    text = assert_usage_error(run_main(main, [*args, "--copy", copy]), code)
    # the message names what can be copied, and the fix
    assert "TAG, POS, MORPH, LEMMA, SENT_START, HEAD, DEP" in text or "list both" in text


def test_copy_names_in_lower_case_are_spacys_upper_case_names(models):
    result = run_main(evaluate_main, [models["tree"], models["trees"], "--copy", "head,dep"])
    assert result.returncode == 0, said(result)
    assert "pos_acc" in said(result)


# -- 4. crf-plots --component that the pipeline does not have


def test_plots_unknown_component_lists_the_crf_taggers(models, plots_main):
    out = models["folder"] / "plots_nope"
    result = run_main(plots_main, [models["chain"], models["tags"], out, "--component", "nope"])
    text = assert_usage_error(result, "CRF-E247")
    assert "'nope'" in text and "crf_tagger components: crf_tagger" in text


# -- 5. a corrupt .spacy file, a model path that holds no pipeline


@pytest.mark.parametrize("command", ["evaluate", "plots"])
def test_corrupt_corpus_is_a_usage_error(models, plots_main, command):
    main = evaluate_main if command == "evaluate" else plots_main
    args = [models["chain"], models["corrupt"]]
    if command == "plots":
        args.append(models["folder"] / "plots_corrupt")
    assert_usage_error(run_main(main, args), "E1014")


@pytest.mark.parametrize("command", ["evaluate", "plots"])
def test_an_empty_corpus_is_a_usage_error(models, plots_main, command):
    """No docs: nothing to score or draw (crf-evaluate printed an empty table, exit 0)."""
    empty = models["folder"] / "empty.spacy"
    DocBin().to_disk(empty)
    main = evaluate_main if command == "evaluate" else plots_main
    args = [models["chain"], empty]
    if command == "plots":
        args.append(models["folder"] / "plots_empty")
    text = assert_usage_error(run_main(main, args), "CRF-E249")
    assert "empty.spacy holds no docs" in text
    assert not (models["folder"] / "plots_empty").exists()


@pytest.mark.parametrize("command", ["evaluate", "plots"])
def test_missing_model_is_a_usage_error(models, plots_main, command):
    main = evaluate_main if command == "evaluate" else plots_main
    args = [models["folder"] / "no_model", models["tags"]]
    if command == "plots":
        args.append(models["folder"] / "plots_no_model")
    text = assert_usage_error(run_main(main, args), "CRF-E248")
    assert "[E050]" in text and "Give MODEL as the directory of a trained pipeline" in text


def test_debug_data_corrupt_corpus_is_a_usage_error(models):
    config = models["folder"] / "chain" / "config.cfg"
    result = run_main(debug_data_main, [config, "--paths.train", models["corrupt"],
                                        "--paths.dev", models["tags"]])
    assert_usage_error(result, "E1014")


# -- 6. message texts


def test_debug_data_config_without_crf_tagger_says_so_plainly(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.config.to_disk(tmp_path / "config.cfg")
    DocBin(docs=[nlp.make_doc("a cat sat")]).to_disk(tmp_path / "data.spacy")
    result = run_main(debug_data_main, [tmp_path / "config.cfg", "--paths.train",
                                        tmp_path / "data.spacy", "--paths.dev",
                                        tmp_path / "data.spacy"])
    text = said(result)
    assert result.returncode == 1, text
    assert "✘ The pipeline has no crf_tagger Its components: sentencizer." in text
    assert "crf_tagger any" not in text


def test_no_crf_tagger_in_plots_names_the_positional_model():
    from spacy_crf.commands.plots import find_component

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    with pytest.raises(ValueError, match=r"\[CRF-E069\]") as caught:
        find_component(nlp, None)
    assert "give as MODEL a pipeline trained with one" in str(caught.value)
    assert "--model" not in Errors.E069


def test_debug_data_warns_of_a_dev_corpus_without_the_annotation(models, tmp_path):
    nlp = spacy.blank("en")
    DocBin(docs=[nlp.make_doc("the cat sat")]).to_disk(tmp_path / "bare.spacy")
    result = run_main(debug_data_main, [models["chain"] / "config.cfg", "--paths.train",
                                        models["tags"], "--paths.dev", tmp_path / "bare.spacy"])
    assert "No label of target 'tag' in the dev corpus" in result.stdout


def test_debug_data_says_which_lemma_trees_initialize_keeps(tmp_path):
    """Trees seen fewer than MIN_TREE_FREQ times are no labels: debug-data
    counted them as labels, and a dev tree among them was not 'never predicted'."""
    nlp = make_nlp("lemma")
    nlp.config.to_disk(tmp_path / "config.cfg")
    frequent = [Doc(nlp.vocab, words=["dogs", "cats"], lemmas=["dog", "cat"]) for _ in range(3)]
    rare = Doc(nlp.vocab, words=["went"], lemmas=["go"])
    DocBin(docs=frequent + [rare]).to_disk(tmp_path / "train.spacy")
    DocBin(docs=[rare]).to_disk(tmp_path / "dev.spacy")
    result = run_main(debug_data_main, [tmp_path / "config.cfg", "--paths.train",
                                        tmp_path / "train.spacy", "--paths.dev",
                                        tmp_path / "dev.spacy"])
    text = " ".join(result.stdout.split())
    assert "1 of the 2 labels in train are labels after initialize" in text
    assert "1 label(s) in dev but not among the labels initialize keeps" in text
