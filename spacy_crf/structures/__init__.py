"""CRF structures, keyed by the component's ``structure`` setting (see ``base``).

``chain`` (a linear chain per sentence), ``tree`` (the dependency parse),
``chain_order2``, ``chain_input``, ``tree_input``, ``semi_markov`` and
``chain_tree`` (a chain and a tree CRF as two experts, each with its own
scores) are registered here; a new structure is a new module that subclasses :class:`CRFStructure`,
decorates it with :func:`register_structure`, and is imported below.
"""

from .base import (BatchLayout, CRFStructure, get_structure, register_structure,  # noqa: F401
                   structure_key, structure_names)
from .chain import ChainLayout, ChainStructure  # noqa: F401
from .tree import TreeLayout, TreeStructure  # noqa: F401
from .second_order import SecondOrderChain, SecondOrderLayout  # noqa: F401
from .input_chain import InputChainLayout, InputTransitionChain  # noqa: F401
from .input_tree import InputTransitionTree, InputTreeLayout  # noqa: F401
from .semi_markov import SemiMarkovLayout, SemiMarkovStructure  # noqa: F401
from .chain_tree import ChainTreeLayout, ChainTreeStructure  # noqa: F401
