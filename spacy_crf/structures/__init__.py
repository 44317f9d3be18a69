"""CRF structures: the component's ``structure`` config block (``config``)
and the strategies that run them (see ``base``).

The blocks ``spacy-crf.Chain.v1`` (``order`` 1 or 2, ``transition_templates``),
``spacy-crf.Tree.v1`` (``n_relations``, ``tree_templates``,
``transition_templates``), ``spacy-crf.ChainTree.v1`` (a chain and a tree CRF
as two experts, each with its own scores) and ``spacy-crf.SemiMarkov.v1``
(``max_segment_length``) are registered here; their strategies are ``chain``, ``chain_order2``,
``chain_input``, ``tree``, ``tree_input``, ``chain_tree`` and
``semi_markov``. A new structure is a new module that subclasses
:class:`CRFStructure`, decorates it with :func:`register_structure`,
registers its block with :func:`config.register_spec`, and is listed under
the ``spacy_structures`` entry points, which import it when a config or a
saved cfg names it (``independent.py``, ``spacy-crf.Independent.v1``, is
such a module: nothing here imports it).
"""

from .base import (BatchLayout, ComponentView, CRFStructure, get_structure,  # noqa: F401
                   register_structure, strategy_of, structure_names)
from .config import (ResolvedStructure, StructureSpec, as_spec,  # noqa: F401
                     migrate_model_settings, settings_left_behind, spec_from_cfg)
from .chain import ChainLayout, ChainStructure  # noqa: F401
from .tree import TreeLayout, TreeStructure  # noqa: F401
from .second_order import SecondOrderChain, SecondOrderLayout  # noqa: F401
from .input_chain import InputChainLayout, InputTransitionChain  # noqa: F401
from .input_tree import InputTransitionTree, InputTreeLayout  # noqa: F401
from .semi_markov import SemiMarkovLayout, SemiMarkovStructure  # noqa: F401
from .chain_tree import ChainTreeLayout, ChainTreeStructure  # noqa: F401
