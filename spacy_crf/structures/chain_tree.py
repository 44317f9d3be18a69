"""The chain and the tree together: two CRFs, each with scores of its own.

A tree CRF over a *predicted* parse loses the order of the words wherever the
parse is wrong, and a chain never sees the parse. Joining both kinds of edge in
one graph makes it loopy (a word, its head and the words between them close a
cycle), where log Z and the marginals are no longer exact. This structure keeps
every computation exact by keeping the two CRFs apart, as two experts:

* **the chain** scores the words alone: a copy of the component's model
  without the templates that read the parse, with ``transitions``, ``start``,
  ``end``;
* **the tree** is the tree CRF over the parse (its model with the tree
  templates), with ``pair`` and ``root``;
* **training** sums the two CRFs' negative log-likelihoods of the gold labels,
  each exact; as no score is shared, each expert learns as it would alone;
* **decoding** takes each token's label from the product of the two CRFs'
  token marginals, renormalised, ``q_t(j) ∝ P_chain(y_t = j) P_tree(y_t = j)``
  (a product of experts read token by token); ``q_t`` of the chosen label is
  the token's confidence. Where the parse is right the tree's marginals are
  sharp and lead; where it is wrong the two disagree, and the chain, which a
  parse error cannot mislead, keeps the word order in the vote.

The model is the architecture ``spacy-crf.ChainTreeExperts.v1`` registered
here, so the config describes it: two copies of one ``spacy-crf.FeatureCRF``
(``crf``) whose emissions ``models/experts.py`` puts side by side, ``(N,
2L)``: the chain's first. A config that gives the structure a plain
FeatureCRF (``structure = "chain_tree"`` with the factory's default model,
and every config written before the architecture existed) is read as that
model inside the architecture, and the config the pipeline keeps says so. Fixed labels (partial gold, ``keep_existing``)
hold in both CRFs. Token targets only: the product of two marginals is not a
span labelling (E018).
"""

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from spacy.util import registry
from thinc.api import Model

from ..errors import Errors
from ..features.doc_arrays import doc_lengths
from ..models.experts import copy_model, is_two_experts, two_experts
from ..models.hooks import STRUCTURES
from ..models.featurize import drop_tree_templates
from ..models.potentials import CRFScores
from .base import BatchLayout, CRFStructure, ComponentView, as_f64, register_structure
from .chain import ChainLayout, ChainStructure
from .config import StructureSpec, register_spec
from .tree import TreeLayout, TreeStructure, apply_tree_settings, tree_settings


@register_spec("spacy-crf.ChainTree.v1", "chain_tree")
def chain_tree_structure(n_relations: int = 1, tree_templates: Optional[List[str]] = None
                         ) -> StructureSpec:
    """A chain and a tree CRF as two experts, each with scores of its own,
    decoded as their pool (the docs need a parse).

    Parameters
    ----------
    n_relations, tree_templates
        The tree expert's, as in ``spacy-crf.Tree.v1`` (the chain expert
        reads the words alone).
    """
    return StructureSpec("chain_tree", tree_settings(n_relations, tree_templates))

_CHAIN = ChainStructure()
_TREE = TreeStructure()

#: the architecture of the two experts, as a config names it
EXPERTS_ARCHITECTURE = "spacy-crf.ChainTreeExperts.v1"


@registry.architectures(EXPERTS_ARCHITECTURE)
def chain_tree_experts(crf: Model) -> Model:
    """The two experts of ``structure = "chain_tree"`` from one FeatureCRF.

    Parameters
    ----------
    crf : Model
        A ``spacy-crf.FeatureCRF`` model (its block nested in this one's,
        ``[components.NAME.model.crf]``). The chain expert is a copy of it
        that reads the words alone (the structure drops the templates reading
        the parse from it); the tree expert is the model itself, with the
        tree templates and relation groups of the structure's block.

    Returns
    -------
    Model
        Docs -> CRFScores with the chain's and the tree's emissions side by
        side (``(N, 2L)``), and each expert's label-interaction scores.
    """
    if crf.name != "feature_crf":
        raise ValueError(Errors.E115.format(model=crf.name))
    experts = two_experts(copy_model(crf), crf, _CHAIN.params)  # (Model.copy() drops refs)
    experts.attrs[STRUCTURES] = ("chain_tree",)  # E103 under any other structure
    return experts


@dataclass
class ChainTreeLayout(BatchLayout):
    """A batch seen as chains and as forests; its sequences are the docs.

    Attributes
    ----------
    chain : ChainLayout
        The chain's sequences (sentences or docs, by the ``sequence`` setting).
    tree : TreeLayout
        The docs' dependency forests.
    """

    chain: ChainLayout = None
    tree: TreeLayout = None
    structure_name = "chain_tree"

    def __post_init__(self) -> None:
        self.lengths = np.ascontiguousarray(self.lengths, dtype=np.int64)

    def chain_docs(self) -> np.ndarray:
        """(chain sequences,) the doc holding each of the chain's sequences; a
        trailing empty sequence starts at the batch's end, past the last doc
        (``n_sequences``)."""
        starts = np.cumsum(self.chain.lengths) - self.chain.lengths
        return np.searchsorted(np.cumsum(self.lengths), starts, side="right")

    def per_doc(self, per_chain: np.ndarray) -> np.ndarray:
        """Sum values of the chain's sequences (sentences) into their docs."""
        doc = self.chain_docs()
        keep = doc < self.n_sequences  # no doc holds a trailing empty sequence: nothing to add
        return np.bincount(doc[keep], weights=per_chain[keep], minlength=self.n_sequences)


@register_structure
class ChainTreeStructure(CRFStructure):
    """A chain CRF (the words) and a tree CRF (the words and the parse), trained
    by the sum of their likelihoods and decoded by the product of their marginals."""

    name = "chain_tree"
    params = _CHAIN.params + _TREE.params
    layout_class = ChainTreeLayout
    needs_parse = True
    exact_map = False
    batch_trainer_error = Errors.E116

    def prepare_model(self, model, target: Any, settings: Optional[Mapping[str, Any]] = None):
        """The experts with the block's settings: both get its relation groups
        and tree templates, the chain's then loses every template that reads
        the parse. A plain FeatureCRF (a config written before the
        architecture) is put in the architecture first."""
        if model is None:
            return model
        if not is_two_experts(model):
            model = chain_tree_experts(model)
        words_only, with_parse = model.layers
        for expert in model.layers:
            apply_tree_settings(expert, settings)
        drop_tree_templates(words_only)
        _CHAIN.prepare_model(words_only, target)
        _TREE.prepare_model(with_parse, target, settings)
        return model

    def kept_config(self, config: Dict[str, Any]) -> Dict[str, Any]:
        """The component's config with its model block inside the experts'
        architecture, where a config gave a plain FeatureCRF."""
        model = config.get("model")
        if not isinstance(model, Mapping) or model.get("@architectures") == EXPERTS_ARCHITECTURE:
            return config
        out = config.copy()
        out["model"] = {"@architectures": EXPERTS_ARCHITECTURE, "crf": model}
        return out

    def emission_width(self, n_labels: int) -> int:
        return 2 * n_labels

    def initialize_cfg(self, component: ComponentView, get_examples: Callable) -> Dict[str, Any]:
        return _TREE.initialize_cfg(component, get_examples)

    def layout(self, docs: Sequence, component: ComponentView) -> ChainTreeLayout:
        return ChainTreeLayout(doc_lengths(docs), _CHAIN.layout(docs, component),
                               _TREE.layout(docs, component))

    def check(self, scores: CRFScores, layout: ChainTreeLayout) -> np.ndarray:
        chain_scores, tree_scores = self.experts(scores)
        _CHAIN.check(chain_scores, layout.chain)
        _TREE.check(tree_scores, layout.tree)
        return as_f64(scores.emissions)

    @staticmethod
    def experts(scores: CRFScores) -> Tuple[CRFScores, CRFScores]:
        """The chain's scores and the tree's: each expert's half of the emissions."""
        L = scores.n_labels
        emissions = scores.emissions
        if emissions.ndim != 2 or emissions.shape[1] != 2 * L:
            raise ValueError(Errors.E117.format(n_labels=L, expected=2 * L,
                                                got=np.shape(emissions)))
        return (scores.replace(emissions=emissions[:, :L]),
                scores.replace(emissions=emissions[:, L:]))

    def marginals(self, scores, layout, fixed=None):
        """The renormalised product of the chain's and the tree's token
        marginals, and (S,) the sum of the two log partitions of each doc."""
        chain_scores, tree_scores = self.experts(scores)
        chain_marginals, chain_log_z = _CHAIN.marginals(chain_scores, layout.chain, fixed)
        tree_marginals, tree_log_z = _TREE.marginals(tree_scores, layout.tree, fixed)
        return (product_of_marginals(chain_marginals, tree_marginals),
                layout.per_doc(chain_log_z) + tree_log_z)

    def viterbi(self, scores, layout, fixed=None):
        """Each token's most probable label under :meth:`marginals`, and (S,)
        the summed log of those probabilities per doc."""
        q, _ = self.marginals(scores, layout, fixed)
        labels = q.argmax(axis=1).astype(np.int64)
        with np.errstate(divide="ignore"):
            log_q = np.log(q[np.arange(q.shape[0]), labels])
        doc = np.repeat(np.arange(layout.n_sequences), layout.lengths)
        return labels, np.bincount(doc, weights=log_q, minlength=layout.n_sequences)

    def nll_and_gradient(self, scores, layout, gold):
        """The sum of the two CRFs' nll per doc, and its gradient."""
        chain_scores, tree_scores = self.experts(scores)
        chain_nll, chain_grad = _CHAIN.nll_and_gradient(chain_scores, layout.chain, gold)
        tree_nll, tree_grad = _TREE.nll_and_gradient(tree_scores, layout.tree, gold)
        gradient = chain_grad.replace(emissions=np.hstack([chain_grad.emissions,
                                                           tree_grad.emissions]),
                                      pair=tree_grad.pair, root=tree_grad.root)
        return layout.per_doc(chain_nll) + tree_nll, gradient

    def labelling_counts(self, layout, labels, weights, out):
        """The counts of the summed chain and tree scores of ``labels``: the caller
        counts the chain's emissions (the first L columns), this the tree's."""
        chain_out, tree_out = self.experts(out)  # views: the counts land in ``out``
        token_weight = np.repeat(np.asarray(weights, dtype=np.float64), layout.lengths)
        np.add.at(tree_out.emissions, (np.arange(labels.shape[0]), labels), token_weight)
        # each chain sequence takes the weight of the doc holding it
        chain_weights = np.asarray(weights, dtype=np.float64)[
            np.minimum(layout.chain_docs(), layout.n_sequences - 1)]
        _CHAIN.labelling_counts(layout.chain, labels, chain_weights, chain_out)
        _TREE.labelling_counts(layout.tree, labels, weights, tree_out)


def product_of_marginals(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Row-normalised ``first * second``; a row where the two have no label in
    common (possible only by underflow) falls back to their average."""
    product = as_f64(first) * as_f64(second)
    total = product.sum(axis=1, keepdims=True)
    empty = total[:, 0] <= 0
    if empty.any():
        product[empty] = 0.5 * (first[empty] + second[empty])
        total[empty] = 1.0
    return product / total
