"""A component's structure is resolved once (issue #50): at construction, at
``initialize`` and at a load, into an immutable object; a batch reads it and
never re-reads the cfg's block (which re-checks the settings and re-parses
the transition templates)."""

import dataclasses
import pickle

import pytest

import spacy_crf.structures.config as structure_config
from spacy_crf.pipeline import crf_tagger, settings, state
from spacy_crf.structures import ResolvedStructure

from spacy.tokens import Doc
from spacy.training import Example

from conftest import TOY_NER, chain, make_nlp, toy_examples, train


def _iob(words, spans):
    tags = ["O"] * len(words)
    for start, end, label in spans:
        tags[start:end] = [f"B-{label}"] + [f"I-{label}"] * (end - start - 1)
    return tags


def _count_resolutions(monkeypatch) -> list:
    calls = []
    real = structure_config.spec_from_cfg

    def counting(cfg):
        calls.append(cfg.get("structure"))
        return real(cfg)

    monkeypatch.setattr(structure_config, "spec_from_cfg", counting)
    # and wherever a module of the component took the name at import
    for module in (crf_tagger, state, settings):
        monkeypatch.setattr(module, "spec_from_cfg", counting, raising=False)
    return calls


def test_batches_never_resolve_the_structure_again(monkeypatch):
    nlp = make_nlp("tag", structure=dict(chain(2), transition_templates=["LOWER[-1]|LOWER[0]"]))
    examples = toy_examples(nlp, "tag")
    train(nlp, examples, n_iter=2)
    calls = _count_resolutions(monkeypatch)
    docs = [eg.predicted for eg in examples]
    for _ in range(3):
        list(nlp.pipe(docs, batch_size=2))
        nlp.update(examples)
    pipe = nlp.get_pipe("crf_tagger")
    assert pipe.crf_structure.name == "chain_order2"
    assert calls == []


def test_the_resolved_structure_cannot_be_changed():
    pipe = make_nlp("tag").get_pipe("crf_tagger")
    resolved = pipe._state.resolved
    assert isinstance(resolved, ResolvedStructure)
    with pytest.raises(dataclasses.FrozenInstanceError):
        resolved.strategy = None
    assert pipe.structure_spec is resolved.spec


def test_initialize_and_load_resolve_the_structure_the_cfg_then_holds():
    # order null on a span target: the label triples choose the order at
    # initialize, and a load takes the saved choice
    nlp = make_nlp("ents", structure=chain(None))
    examples = [Example(Doc(nlp.vocab, words=text.split()),
                        Doc(nlp.vocab, words=text.split(), ents=_iob(text.split(), spans)))
                for text, spans in TOY_NER]
    train(nlp, examples, n_iter=2)
    pipe = nlp.get_pipe("crf_tagger")
    chosen = pipe.crf_structure
    assert chosen.name == {1: "chain", 2: "chain_order2"}[pipe.cfg["order"]]
    assert chosen is pipe._state.resolved.strategy

    loaded = make_nlp("ents", structure=chain(1))
    loaded.get_pipe("crf_tagger").from_bytes(pipe.to_bytes())
    assert loaded.get_pipe("crf_tagger").crf_structure is chosen
    copy = pickle.loads(pickle.dumps(pipe))
    assert copy.crf_structure is chosen


def test_a_load_whose_config_names_another_structure_says_which_runs(tmp_path):
    """An override of the structure block at spacy.load (or a config.cfg
    edited after training) is not used: W051 names the saved structure,
    which runs, and the config's; a plain load says nothing."""
    import warnings

    import spacy

    nlp = make_nlp("tag", structure=chain(1))
    train(nlp, toy_examples(nlp, "tag"), n_iter=2)
    nlp.to_disk(tmp_path / "p")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spacy.load(tmp_path / "p")
    pruned = {"@structures": "spacy-crf.PrunedChain.v1", "candidates": 500}
    with pytest.warns(UserWarning, match=r"W051.*saved with, 'chain' \(order = 1\).*"
                                         r"'pruned_chain' \(candidates = 500\)"):
        again = spacy.load(tmp_path / "p",
                           config={"components": {"crf_tagger": {"structure": pruned}}})
    assert again.get_pipe("crf_tagger").crf_structure.name == "chain"


def test_a_load_naming_the_segment_length_initialize_found_runs_alike(tmp_path):
    """A semi-Markov model trained with ``max_segment_length = 0`` runs with
    the longest gold span initialize found: a load naming that length runs
    the same structure and says nothing; another length gets W051, naming
    the length that runs."""
    import warnings

    import spacy

    nlp = make_nlp("ents", structure={"@structures": "spacy-crf.SemiMarkov.v1"})
    examples = [Example(Doc(nlp.vocab, words=text.split()),
                        Doc(nlp.vocab, words=text.split(), ents=_iob(text.split(), spans)))
                for text, spans in TOY_NER]
    train(nlp, examples, n_iter=2)
    found = nlp.get_pipe("crf_tagger").cfg["segment_length"]
    assert found > 1
    nlp.to_disk(tmp_path / "p")

    def block(length):
        return {"components": {"crf_tagger": {"structure": {
            "@structures": "spacy-crf.SemiMarkov.v1", "max_segment_length": length}}}}

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same = spacy.load(tmp_path / "p", config=block(found))
    assert same.get_pipe("crf_tagger").cfg["segment_length"] == found
    with pytest.warns(UserWarning, match=rf"W051.*saved with, 'semi_markov' "
                                         rf"\(max_segment_length = {found}\).*"
                                         rf"\(max_segment_length = {found + 1}\)"):
        spacy.load(tmp_path / "p", config=block(found + 1))
