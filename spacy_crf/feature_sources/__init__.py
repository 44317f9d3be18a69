"""Feature sources: what a component knows about words beyond their spelling.

* ``clusters``: Brown clusters, ``CLUSTER`` and ``CLUSTERk``;
* ``vector_clusters``: k-means clusters of the static vectors, ``VECTOR_CLUSTERk``;
* ``gazetteer``: phrase lists, ``GAZETTEER``;
* ``lemma_lookups``: spaCy's lemma tables, ``LOOKUP_LEMMA`` and ``RULE_LEMMA_POS``;
* ``usual_case``: how a word is usually written (spaCy's word probabilities), ``USUAL_CASE``;
* ``space_after``: whether whitespace follows the token in the text, ``SPACE_AFTER``.

Each lives in a module of its own here and registers itself
(:mod:`.registry`: ``spacy.util.registry.crf_feature_sources``, whose entry
points are the group ``spacy_crf_feature_sources``). A source owns its
template attributes, its ``[initialize.components.NAME]`` settings and build,
the columns it fills and its saved form (:class:`FeatureSource`); the
templates, the word tables and the component ask the registry, and name none.
A new source is one more module: a :class:`FeatureSource` subclass decorated
with :func:`register_feature_source`; a module here is imported with the
package, one elsewhere through its entry point.
"""

from .base import BuildContext, FeatureSource
from .registry import (attrs_hints, register_feature_source, registered_feature_sources,
                       source_of, split_settings)

# the package's own sources, registered in the order they are saved
from .brown_clusters import BrownClusters  # noqa: I100
from .vector_clusters import VectorClusters
from .gazetteer import GazetteerSource
from .lemma_lookups import LemmaLookups
from .usual_case import UsualCase
from .space_after import SpaceAfter
from ..registries import import_modules

import_modules(__name__, __path__)

__all__ = ["BuildContext", "FeatureSource", "attrs_hints", "register_feature_source",
           "registered_feature_sources", "source_of", "split_settings", "BrownClusters",
           "VectorClusters", "GazetteerSource", "LemmaLookups", "UsualCase", "SpaceAfter"]
