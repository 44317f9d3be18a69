"""The tree-structured CRF over each doc's dependency parse.

Each token's label interacts with its head's label: ``pair[r, c, h]`` scores
child label ``c`` under head label ``h`` on an edge of relation group ``r``
(the most frequent relations of the training data get a group of their own,
``cfg["relations"]``; the rest share group 0), and ``root[j]`` scores label
``j`` at a root. Kernels: ``_kernels/tree.py`` (sum-product and max-product
belief propagation, leaves to root and back) and ``_kernels/shard_nll.py``.
"""

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np
from spacy.attrs import DEP, HEAD

from .._kernels import shard_nll as shard_kernels
from .._kernels import tree
from ..errors import Errors
from ..features.doc_arrays import batch_heads, doc_lengths
from ..features.templates import FeatureTemplates
from ..models.featurize import set_tree_templates, use_tree_templates
from ..models.potentials import CRFScores, register_scores, set_relation_groups
from ..util import is_count
from .base import (NO_EDGES, BatchLayout, CRFStructure, ComponentView, as_f64, gradient_in_dtype,
                   register_structure)
from .config import TRANSITION_BUCKETS, StructureSpec, register_spec, transition_settings

# a tree's: child label c under head label h on an edge of relation group r
# (pair[r, c, h]), and a root's label
register_scores(pair=(None, "out", "out"), root=("out",))


#: the templates a tree adds to its model's by default: the head's word and
#: suffix, the relation and the head's, the distance to the head, the children
DEFAULT_TREE_TEMPLATES = ["head:NORM", "head:SUFFIX", "DEP", "head:DEP", "DEP|head:DEP",
                          "HEAD_DIST", "N_CHILDREN", "LCHILD_DEP", "RCHILD_DEP"]


@register_spec("spacy-crf.Tree.v1", "tree")
def tree_structure(n_relations: int = 1, tree_templates: Optional[List[str]] = None,
                   transition_templates: Optional[List[str]] = None,
                   transition_buckets: int = TRANSITION_BUCKETS) -> StructureSpec:
    """A CRF over each doc's dependency parse: every token's label interacts
    with its head's (the docs need a parse).

    Parameters
    ----------
    n_relations : int
        Relation groups with a pair matrix of their own: the most frequent
        ``n_relations - 1`` relations of the training data get one each, the
        rest share the first.
    tree_templates : list of str, optional
        Templates added to the model's own, which read the parse (e.g.
        ``"head:NORM"``, ``"HEAD_DIST"``); those reading DEP are left out for
        a ``dep`` target. ``null``: :data:`DEFAULT_TREE_TEMPLATES`; ``[]``: none.
    transition_templates, transition_buckets
        Input-dependent edge scores (``structures/input_tree.py``), as the
        chain's input-dependent transitions (``spacy-crf.Chain.v1``).
    """
    return StructureSpec("tree", {**tree_settings(n_relations, tree_templates),
                                  **transition_settings(transition_templates, transition_buckets)})


def tree_settings(n_relations: int, tree_templates: Optional[List[str]]) -> Dict[str, Any]:
    """The settings of a tree's block that shape its model, checked."""
    if not is_count(n_relations):
        raise ValueError(Errors.E005.format(name="n_relations", value=n_relations))
    templates = list(DEFAULT_TREE_TEMPLATES if tree_templates is None else tree_templates)
    if templates:
        FeatureTemplates(templates)  # a typo fails with the config
    return {"n_relations": n_relations, "tree_templates": templates}


def apply_tree_settings(model, settings: Optional[Mapping[str, Any]]) -> None:
    """Give ``model`` the relation groups and the tree templates its block
    sets (none given: the model's as they are)."""
    settings = settings or {}
    if "n_relations" in settings:
        set_relation_groups(model, settings["n_relations"])
    if "tree_templates" in settings:
        set_tree_templates(model, settings["tree_templates"])


@dataclass
class TreeLayout(BatchLayout):
    """The forests of a batch: one segment per doc.

    Attributes
    ----------
    heads : numpy.ndarray
        (N,) int64 absolute head row, -1 at roots.
    order : numpy.ndarray
        (N,) int64 children-before-heads order.
    relations : numpy.ndarray, optional
        (N,) int64 relation group of each token's edge to its head (0 if not given).
    """

    heads: np.ndarray = None
    order: np.ndarray = None
    relations: Optional[np.ndarray] = None
    structure_name = "tree"

    def __post_init__(self) -> None:
        self.lengths = np.ascontiguousarray(self.lengths, dtype=np.int64)
        self.heads = np.ascontiguousarray(self.heads, dtype=np.int64)
        self.order = np.ascontiguousarray(self.order, dtype=np.int64)
        if self.relations is None:
            self.relations = np.zeros(self.heads.shape[0], dtype=np.int64)
        self.relations = np.ascontiguousarray(self.relations, dtype=np.int64)


@register_structure
class TreeStructure(CRFStructure):
    """Belief propagation over dependency forests (sum-product and max-product)."""

    name = "tree"
    params = ("pair", "root")
    layout_class = TreeLayout
    needs_parse = True

    def prepare_model(self, model, target: Any, settings: Optional[Mapping[str, Any]] = None):
        model = super().prepare_model(model, target, settings)
        if model is not None:
            apply_tree_settings(model, settings)
            # the docs have a parse: add the tree templates (not those
            # reading DEP when DEP is what the component predicts)
            use_tree_templates(model, allow_dep="token.dep" not in target.assigns)
        return model

    def initialize_cfg(self, component: ComponentView, get_examples: Callable) -> Dict[str, Any]:
        """``relations``: the most frequent ``n_relations - 1`` relations of the
        training data (each gets a pair matrix of its own; the rest share matrix 0)."""
        return {"relations": self._frequent_relations(component, get_examples)}

    def _frequent_relations(self, component: ComponentView, get_examples: Callable) -> List[str]:
        n_groups = component.n_relation_groups
        if n_groups <= 1:
            return []
        counts: Dict[str, int] = {}
        for eg in get_examples():
            if not len(eg.reference):
                continue
            values = eg.reference.to_array([HEAD, DEP]).reshape(-1, 2)
            # a root has no edge to a head, so its relation never selects a matrix
            for dep in values[(values[:, 0] != 0) & (values[:, 1] != 0), 1]:
                name = component.vocab.strings[int(dep)]
                counts[name] = counts.get(name, 0) + 1
        ranked = sorted(counts, key=lambda name: (-counts[name], name))
        return ranked[: n_groups - 1]

    def layout(self, docs: Sequence, component: ComponentView) -> TreeLayout:
        try:
            heads, order = batch_heads(docs)
        except ValueError as err:
            if str(err) == "no parse":
                # (chain_tree reads its tree here too: name the structure the config names)
                structure = component.cfg.get("structure") or self.name
                raise ValueError(Errors.E015.format(name=component.name,
                                                    why=f"structure = \"{structure}\"")) from err
            raise ValueError(Errors.E016.format(why=err)) from err
        relations = None
        names = component.cfg.get("relations") or []
        if names:
            table = {component.vocab.strings.add(name): i + 1 for i, name in enumerate(names)}
            deps = np.concatenate([doc.to_array(DEP).reshape(-1) for doc in docs if len(doc)] or
                                  [np.zeros(0, dtype=np.uint64)])
            kinds, inverse = np.unique(deps, return_inverse=True)
            groups = np.asarray([table.get(int(d), 0) for d in kinds], dtype=np.int64)
            relations = groups[inverse.reshape(-1)]
        return TreeLayout(doc_lengths(docs), heads, order, relations)

    def check(self, scores: CRFScores, layout: TreeLayout) -> np.ndarray:
        emissions = super().check(scores, layout)
        rel = layout.relations
        if rel.size and (rel.max() >= scores.pair.shape[0] or rel.min() < 0):
            raise ValueError(Errors.E064.format(n_groups=scores.pair.shape[0], low=int(rel.min()),
                                                high=int(rel.max())))
        return emissions

    def _forest(self, layout: TreeLayout, scores: CRFScores):
        return (layout.lengths, layout.heads, layout.order, as_f64(scores.pair), layout.relations,
                as_f64(scores.root))

    def _max_pass(self, emissions, scores, layout, fixed, labels, best):
        tree.max_product(emissions, *self._forest(layout, scores), fixed, labels, best)

    def _sum_pass(self, emissions, scores, layout, fixed, log_z, marginals):
        tree.sum_product(emissions, *self._forest(layout, scores), fixed, log_z, marginals,
                         NO_EDGES, np.zeros(np.shape(scores.pair)), np.zeros(emissions.shape[1]),
                         False, False)

    def nll_and_gradient(self, scores, layout, gold):
        emissions = self.check(scores, layout)
        L = emissions.shape[1]
        nll = np.zeros(layout.n_sequences)
        grad = {"emissions": np.zeros_like(emissions), "pair": np.zeros(np.shape(scores.pair)),
                "root": np.zeros(L)}
        tree.nll_gradient(emissions, *self._forest(layout, scores),
                          np.ascontiguousarray(gold, dtype=np.int64), nll, grad["emissions"],
                          grad["pair"], grad["root"], False)
        return nll, gradient_in_dtype(scores, grad)

    def labelling_counts(self, layout, labels, weights, out):
        L = out.emissions.shape[1]
        token_weight = np.repeat(weights, layout.lengths)
        roots = layout.heads < 0
        # d root(y_t) = w at every root t
        out.root += np.bincount(labels[roots], weights=token_weight[roots], minlength=L)
        child = np.flatnonzero(~roots)
        # d pair[rel[t], y_t, y_head(t)] = w on every edge t -> head(t)
        cell = (layout.relations[child] * L + labels[child]) * L + labels[layout.heads[child]]
        out.pair += np.bincount(cell, weights=token_weight[child],
                                minlength=out.pair.size).reshape(out.pair.shape)

    def shard_nll(self, rows, layout, gold, params, grads, workspace):
        emissions, d_emissions, nll = workspace
        return shard_kernels.tree_nll(rows, layout.lengths, layout.heads, layout.order,
                                      layout.relations, gold, params["W"], params["b"],
                                      params["pair"], params["root"], emissions, d_emissions, nll,
                                      grads["W"], grads["b"], grads["pair"], grads["root"])
