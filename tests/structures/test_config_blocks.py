"""Structures as config blocks (``[components.NAME.structure]``, the
``structures`` registry), the shorthand names, and the pipelines and configs
written before the blocks existed."""

import json
import shutil
import subprocess
import sys

import pytest
import spacy
from spacy.util import registry

from spacy_crf.structures.tree import DEFAULT_TREE_TEMPLATES

from conftest import ROOT, TEST_ASSETS, chain, semi_markov

SAVED_BEFORE = TEST_ASSETS / "saved_before_structure_blocks"


def component(**config):
    return spacy.blank("en").add_pipe("crf_tagger", config=config)


TREE = {"n_relations": 1, "tree_templates": DEFAULT_TREE_TEMPLATES}


@pytest.mark.parametrize("block, name, settings, strategy", [
    (chain(1), "chain", {"order": 1}, "chain"),
    (chain(2), "chain", {"order": 2}, "chain_order2"),
    ({"@structures": "spacy-crf.Tree.v1"}, "tree", TREE, "tree"),
    ({"@structures": "spacy-crf.ChainTree.v1"}, "chain_tree", TREE, "chain_tree"),
    ({**chain(1), "transition_templates": ["SUFFIX2"]}, "chain",
     {"order": 1, "transition_templates": ["SUFFIX2"], "transition_buckets": 2**16}, "chain_input"),
    ({"@structures": "spacy-crf.Tree.v1", "n_relations": 3, "tree_templates": ["head:NORM"],
      "transition_templates": ["SUFFIX2"], "transition_buckets": 64}, "tree",
     {"n_relations": 3, "tree_templates": ["head:NORM"], "transition_templates": ["SUFFIX2"],
      "transition_buckets": 64}, "tree_input"),
])
def test_each_block_gives_its_structure_and_only_its_settings(block, name, settings, strategy):
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("crf_tagger", config={"structure": block})
    assert pipe.crf_structure.name == strategy
    assert pipe.structure_spec.settings == settings
    filled = nlp.config["components"]["crf_tagger"]["structure"]
    assert {key: filled[key] for key in block} == block
    # the cfg saved with the model: the name, and the structure's own settings beside it
    assert pipe.cfg["structure"] == name
    for key, value in settings.items():
        assert pipe.cfg[key] == value
    for other in {"order", "max_segment_length", "n_relations", "tree_templates",
                  "transition_templates"} - set(settings):
        assert other not in pipe.cfg


def test_the_semi_markov_block_has_its_segment_length():
    pipe = component(target="ents", structure=semi_markov(7))
    assert pipe.crf_structure.name == "semi_markov" and pipe.cfg["max_segment_length"] == 7
    assert "order" not in pipe.cfg


def test_a_name_is_short_for_the_block_with_its_defaults():
    assert component(structure="tree").structure_spec == component(
        structure={"@structures": "spacy-crf.Tree.v1"}).structure_spec
    assert component(target="ents", structure="semi_markov").cfg["max_segment_length"] == 0
    assert component().structure_spec.settings == {"order": 1}  # the factory default


def test_every_block_is_an_entry_point():
    from importlib.metadata import entry_points

    names = {ep.name for ep in entry_points(group="spacy_structures")}
    assert {"spacy-crf.Chain.v1", "spacy-crf.Tree.v1", "spacy-crf.ChainTree.v1",
            "spacy-crf.SemiMarkov.v1"} <= names
    for name in names:
        assert registry.has("structures", name)


@pytest.mark.parametrize("config, match", [
    ({"structure": chain(3)}, "E094"),
    ({"structure": semi_markov(-1), "target": "ents"}, "E109"),
    ({"structure": semi_markov(101), "target": "ents"}, "E166"),
    ({"structure": "bogus"}, "E012"),
    ({"structure": {"@structures": "spacy-crf.Tree.v1", "order": 2}}, "order"),
    ({"structure": {"@structures": "spacy-crf.Bogus.v1"}}, "spacy-crf.Bogus.v1"),
    # flat settings beside a block, or of another structure: E170 names the block
    ({"structure": chain(1), "order": 2}, "E170"),  # the block says otherwise
    ({"structure": "chain", "max_segment_length": 4}, "E170"),
    ({"structure": "tree", "order": 2}, "E170"),
])
def test_bad_structure_settings_are_named(config, match):
    with pytest.raises(Exception, match=match):
        component(**config)


def test_flat_settings_of_an_old_config_mean_their_block():
    pipe = component(structure="chain", order=2, max_segment_length=0)
    assert pipe.crf_structure.name == "chain_order2" and pipe.cfg["order"] == 2
    pipe = component(target="ents", structure="semi_markov", order=1, max_segment_length=5)
    assert pipe.crf_structure.name == "semi_markov" and pipe.cfg["max_segment_length"] == 5


def test_cli_overrides_reach_the_block(tmp_path):
    from spacy.util import load_config, load_model_from_config

    base = ROOT / "configs" / "ewt_upos.cfg"
    for overrides, strategy in (({"components.crf_tagger.structure.order": 2}, "chain_order2"),
                                ({"components.crf_tagger.structure": "tree"}, "tree")):
        config = load_config(base, overrides=overrides, interpolate=False)
        nlp = load_model_from_config(config, auto_fill=True, validate=True)
        assert nlp.get_pipe("crf_tagger").crf_structure.name == strategy


@pytest.mark.parametrize("name", ["order2", "semi_markov"])
def test_pipelines_saved_before_the_blocks_load_and_predict_as_they_did(name, tmp_path):
    """Saved by the component at 380b191 (flat ``order`` / ``max_segment_length`` in
    config.cfg and cfg; ``tests/assets/saved_before_structure_blocks``): they load and
    predict exactly what they predicted then."""
    path = tmp_path / name
    shutil.copytree(SAVED_BEFORE / name, path)
    expected = json.loads((path / "expected.json").read_text())
    nlp = spacy.load(path)
    pipe = nlp.get_pipe("crf_tagger")
    assert pipe.crf_structure.name == {"order2": "chain_order2", "semi_markov": "semi_markov"}[name]
    docs = list(nlp.pipe(expected["texts"]))
    assert [[[e.start, e.end, e.label_] for e in d.ents] for d in docs] == expected["ents"]
    assert [[e._.crf_confidence for e in d.ents] for d in docs] == expected["span_confidence"]
    assert [[t._.crf_confidence for t in d] for d in docs] == expected["token_confidence"]
    # saved again, it still loads (the flat settings stay where they were)
    nlp.to_disk(tmp_path / "again")
    again = spacy.load(tmp_path / "again")
    assert [[[e.start, e.end, e.label_] for e in d.ents] for d in again.pipe(expected["texts"])] \
        == expected["ents"]


def test_a_block_config_loads_in_a_fresh_process_without_an_import(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "ents", "structure": semi_markov(4),
                                       "model": {"@architectures": "spacy-crf.FeatureCRF.v2",
                                                 "n_buckets": 1024, "templates": ["NORM"],
                                                 "cluster_templates": None}})
    with pytest.warns(UserWarning, match="W016"):  # no examples: no entity types
        nlp.initialize()
    nlp.to_disk(tmp_path / "p")
    # no import of spacy_crf: spaCy finds the factory and the block by their entry points
    code = ("import spacy, sys; nlp = spacy.load(sys.argv[1]); "
            "print(nlp.get_pipe('crf_tagger').cfg['max_segment_length'])")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "p")], capture_output=True,
                         text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "4"


# ------------------------------------------------- saved before structures declared parameters
SAVED_BEFORE_DECLARED = TEST_ASSETS / "saved_before_declared_params"


@pytest.mark.parametrize("name", ["chain_pos", "chain_ents", "tree_pos", "chain_tree_pos",
                                  "transitions_pos", "tree_transitions_pos"])
def test_pipelines_saved_before_structures_declared_parameters_predict_as_they_did(name,
                                                                                   tmp_path):
    """Saved at f25486b (``make.py`` beside them), when every model held a
    chain's and a tree's parameters whatever its structure, and at 2511cc2
    (``tree_transitions_pos``: a tree's relation groups, its templates and
    input-dependent edge scores in spacy-crf.FeatureCRF.v1, before they moved
    into the tree's block): they load and predict bit-identically, saved
    again too."""
    # the texts and the doc builder of make.py (its head: no training, no saving)
    source = (SAVED_BEFORE_DECLARED / "make.py").read_text()
    namespace: dict = {}
    exec(source.split("OUT = ")[0] + source.split("for name, config in CASES.items():")[0]
         .split("OUT = Path(sys.argv[1])")[1], namespace)
    path = tmp_path / name
    shutil.copytree(SAVED_BEFORE_DECLARED / name, path)
    expected = json.loads((path / "expected.json").read_text())
    for where in (path, tmp_path / "again"):
        nlp = spacy.load(where)
        target = nlp.get_pipe("crf_tagger").cfg["target"]
        docs = [nlp(namespace["doc"](nlp.vocab, i)) for i in range(len(namespace["WORDS"]))]
        labels = [[t.ent_iob_ + "-" + t.ent_type_ if target == "ents" else t.pos_ for t in d]
                  for d in docs]
        assert labels == expected["labels"]
        assert [[t._.crf_confidence for t in d] for d in docs] == expected["token_confidence"]
        if where == path:
            nlp.to_disk(tmp_path / "again")


# -- settings that shape the model: the structure's block, or an earlier architecture --

V1 = {"@architectures": "spacy-crf.FeatureCRF.v1", "templates": ["NORM", "SUFFIX2"],
      "n_buckets": 1024}
V2 = {"@architectures": "spacy-crf.FeatureCRF.v2", "templates": ["NORM", "SUFFIX2"],
      "n_buckets": 1024, "boost_updates": 0, "cluster_templates": None}
TREE_SETTINGS = {"n_relations": 3, "tree_templates": ["head:NORM", "HEAD_DIST"],
                 "transition_templates": ["SUFFIX2"], "transition_buckets": 512}


def _layers(pipe):
    return [(node.name, {dim: node.maybe_get_dim(dim) for dim in node.dim_names},
             list(getattr(node.attrs.get("templates"), "source", [])),
             node.attrs.get("tree_templates"))
            for node in pipe.model.walk()]


def test_an_earlier_architectures_structure_settings_move_into_the_block():
    """A config of the earlier release (FeatureCRF.v1 with the tree's settings)
    gives the component the model and the settings of the same config written
    with the block: the same layers, dims and templates, the settings in its cfg."""
    old = component(target="pos", structure="tree", model={**V1, **TREE_SETTINGS})
    new = component(target="pos", model=V2,
                    structure={"@structures": "spacy-crf.Tree.v1", **TREE_SETTINGS})
    assert old.structure_spec.settings == new.structure_spec.settings == TREE_SETTINGS
    assert old.crf_structure.name == new.crf_structure.name == "tree_input"
    for key, value in TREE_SETTINGS.items():
        assert old.cfg[key] == value
    assert _layers(old) == _layers(new)
    assert old.n_relation_groups == 3


def test_an_earlier_chains_tree_templates_did_nothing_and_are_dropped():
    pipe = component(model={**V1, "tree_templates": ["head:NORM"], "n_relations": 1})
    assert pipe.structure_spec.settings == {"order": 1}
    assert "tree_templates" not in pipe.cfg


def test_a_setting_in_both_the_model_and_the_block_is_named():
    with pytest.raises(ValueError, match=r"E182.*n_relations"):
        component(target="pos", model={**V1, "n_relations": 3},
                  structure={"@structures": "spacy-crf.Tree.v1", "n_relations": 2})
    # left at the earlier default in the model, the block's value holds
    pipe = component(target="pos", model=V1,
                     structure={"@structures": "spacy-crf.Tree.v1", "n_relations": 2,
                                "tree_templates": ["HEAD_DIST"]})
    assert pipe.n_relation_groups == 2
    # (FeatureCRF.v1's tree_templates = null meant none: the block's list holds)
    assert pipe.structure_spec.settings["tree_templates"] == ["HEAD_DIST"]


@pytest.mark.parametrize("block, message", [
    ({"@structures": "spacy-crf.Tree.v1", "n_relations": 0}, "E005"),
    ({"@structures": "spacy-crf.Tree.v1", "tree_templates": ["head:NROM"]}, "NROM"),
    ({"@structures": "spacy-crf.Chain.v1", "transition_templates": ["SUFIX2"]}, "SUFIX2"),
    ({"@structures": "spacy-crf.Chain.v1", "transition_templates": ["NORM"],
      "transition_buckets": 0}, "E005"),
    ({"@structures": "spacy-crf.ChainTree.v1", "n_relations": -1}, "E005"),
])
def test_bad_settings_of_a_block_are_named_when_the_pipeline_is_built(block, message):
    with pytest.raises(ValueError, match=message):
        component(target="pos", model=V2, structure=block)


def test_the_tree_block_sets_relation_groups_before_the_weights_exist():
    """n_relations sizes the pair scores; a model that holds other ones is refused (E181)."""
    from spacy_crf.models.potentials import set_relation_groups

    pipe = component(target="pos", model=V2,
                     structure={"@structures": "spacy-crf.Tree.v1", "n_relations": 4})
    assert pipe.n_relation_groups == 4
    potentials = next(n for n in pipe.model.walk() if n.name == "crf_potentials")
    potentials.set_dim("nO", 3)
    potentials.set_param("pair", potentials.ops.alloc3f(4, 3, 3))
    set_relation_groups(pipe.model, 4)  # the same: nothing to do
    with pytest.raises(ValueError, match="E181"):
        set_relation_groups(pipe.model, 2)


def test_a_flat_setting_that_agrees_with_the_block_is_no_trap():
    """``order = 2`` at the top level (as a config filled before blocks might
    keep it) beside a block that also says 2 is the block (issue #50)."""
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("crf_tagger", config={"structure": chain(2), "order": 2})
    assert pipe.cfg["structure"] == "chain" and pipe.cfg["order"] == 2
    templated = {"@structures": "spacy-crf.Chain.v1", "order": 1,
                 "transition_templates": ["NORM[-1]|NORM[0]"]}
    other = nlp.add_pipe("crf_tagger", name="other", config={"structure": templated, "order": 1})
    assert other.cfg["transition_templates"] == ["NORM[-1]|NORM[0]"]  # the block kept whole


def test_fill_config_writes_no_structure_setting_at_the_top_level(tmp_path):
    """``spacy init fill-config`` from a config naming the factory alone: the
    structure's settings are in its block, none beside it (issue #50)."""
    base = tmp_path / "base.cfg"
    base.write_text('[nlp]\nlang = "en"\npipeline = ["crf_tagger"]\n\n'
                    '[components]\n\n[components.crf_tagger]\nfactory = "crf_tagger"\n'
                    'target = "pos"\n')
    filled = tmp_path / "filled.cfg"
    subprocess.run([sys.executable, "-m", "spacy", "init", "fill-config", str(base), str(filled)],
                   check=True, capture_output=True)
    config = spacy.util.load_config(filled, interpolate=False)
    component_config = config["components"]["crf_tagger"]
    assert "order" not in component_config and "max_segment_length" not in component_config
    assert component_config["structure"] == {"@structures": "spacy-crf.Chain.v1", "order": None,
                                             "transition_templates": None,
                                             "transition_buckets": 65536}
    # and the filled config builds the pipeline it describes
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    assert "order" not in nlp.config["components"]["crf_tagger"]


def test_a_flat_setting_is_kept_in_the_block_and_said_once_read(tmp_path):
    """A config of before the blocks: ``structure = "chain"``, ``order = 2``
    beside it. W043 names the setting; the pipeline keeps the block, so the
    pipeline saved again loads without the warning and predicts the same."""
    nlp = spacy.blank("en")
    with pytest.warns(UserWarning, match=r"W043.*order = 2"):
        nlp.add_pipe("crf_tagger", config={"structure": "chain", "order": 2,
                                           "max_segment_length": None})
    kept = nlp.config["components"]["crf_tagger"]
    assert "order" not in kept and "max_segment_length" not in kept
    assert kept["structure"] == {"@structures": "spacy-crf.Chain.v1", "order": 2}
    semi = nlp.add_pipe("crf_tagger", name="spans",
                        config={"target": "ents", "structure": "semi_markov", "order": 1,
                                "max_segment_length": 5})
    assert semi.crf_structure.name == "semi_markov"
    # order = 1 was the old default of every structure: the semi-Markov block has no order
    assert nlp.config["components"]["spans"]["structure"] == {
        "@structures": "spacy-crf.SemiMarkov.v1", "max_segment_length": 5}
    rebuilt = spacy.util.load_model_from_config(nlp.config, auto_fill=True, validate=True)
    assert rebuilt.get_pipe("crf_tagger").crf_structure.name == "chain_order2"
    assert rebuilt.get_pipe("spans").cfg["max_segment_length"] == 5


def test_a_pipeline_saved_with_flat_settings_is_saved_again_with_the_block(tmp_path):
    path = tmp_path / "order2"
    shutil.copytree(SAVED_BEFORE / "order2", path)
    with pytest.warns(UserWarning, match="W043"):
        nlp = spacy.load(path)
    nlp.to_disk(tmp_path / "again")
    config = spacy.util.load_config(tmp_path / "again" / "config.cfg", interpolate=False)
    assert "order" not in config["components"]["crf_tagger"]
    assert config["components"]["crf_tagger"]["structure"]["order"] == 2
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = spacy.load(tmp_path / "again")
    assert again.get_pipe("crf_tagger").crf_structure.name == "chain_order2"
