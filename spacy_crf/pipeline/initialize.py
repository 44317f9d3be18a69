"""``CRFTagger.initialize``: the labels, the structure's settings, the word
tables and fresh weights (or, with ``keep_weights``, the trained ones grown by
the new labels), set on the component's :class:`~.state.ComponentState`."""

import zlib
from itertools import islice
from typing import Any, Callable, Dict, Iterable, Optional, Sequence

from spacy.language import Language
from spacy.training import Example

from ..errors import Errors
from ..feature_sources import split_settings
from ..models.architectures import set_n_labels
from ..models.hashed_linear import seed_dropout
from ..models.label_parts import set_label_parts
from ..models.sparse_table import restart_boost
from ..targets import make_target
from ..util import training_seed
from .initial_labels import initial_labels
from .inputs import input_attrs, upstream_annotated, warn_no_lexeme_norm
from .learning import fit_from_counts
from .lexicon_setup import set_up_lexicon
from .settings import check_structure_runs
from .state import ComponentState


def check_chosen_structure(state: ComponentState, labels: Sequence[str]) -> None:
    """The component's settings that the structure its config leaves to the
    label count (``order = null``) cannot run once ``labels`` choose it
    (add_pipe could not know which): E019, E096, as for a structure given."""
    if state.structure_by_labels is None:
        return
    target = make_target(state.cfg["target"], state.cfg["scheme"])
    target.set_labels(labels, state.vocab)
    check_structure_runs(state.model, state.name, target,
                         {**state.cfg, **state.structure_by_labels(target).cfg()})


def initialize(state: ComponentState, get_examples: Callable[[], Iterable[Example]], *,
               nlp: Optional[Language], labels: Optional[Sequence[str]], keep_weights: bool,
               sources: Dict[str, Any]) -> None:
    """Initialize ``state`` (``CRFTagger.initialize`` documents the arguments;
    ``sources`` are the feature sources' settings)."""
    # the label set starts afresh (as in spaCy's own pipes): labels of an
    # earlier initialize or load are not merged in, and every label-sized
    # parameter is resized to the new set
    found = initial_labels(state.name, state.target, state.cfg["target"], get_examples, nlp,
                           labels, state.added_labels)
    if keep_weights and state.initialized():
        # the word tables stay those it was trained with, but a setting no
        # source takes is still a typo to name (E242)
        split_settings(state.name, sources)
        found = set(state.target.order_labels(found))  # a span target's O, given or not
        missing = [tag for tag in state.tags if tag not in found]
        if labels is not None and missing:
            raise ValueError(Errors.E167.format(name=state.name, missing=missing,
                                                labels=state.target.label_data(state.tags)))
        new = [tag for tag in state.target.order_labels(found) if tag not in state.tags]
        if new:
            state.grow(new)
        fit_from_counts(state, get_examples)
        return
    ordered = state.target.order_labels(found)
    check_chosen_structure(state, ordered)  # before anything changes
    state.restart(ordered)
    state.choose_structure()  # where the config leaves it to the label count
    set_n_labels(state.model, len(state.tags))
    set_label_parts(state.model, [state.target.label_parts(tag) for tag in state.tags])
    # settings the structure reads from the data (relation groups, kept label pairs)
    state.update_structure(state.structure.initialize_cfg(state.view, get_examples))
    # the language its word tables and its training docs are of (W055 where
    # it later runs on docs of another)
    state.cfg["lang"] = nlp.lang if nlp is not None else state.vocab.lang
    # the word tables the templates read (each feature source builds its own)
    set_up_lexicon(state.model, state.name, state.vocab, nlp, get_examples=get_examples,
                   target=state.target, target_name=state.cfg["target"], settings=sources)
    sample = [eg.predicted for eg in islice(get_examples(), 10) if len(eg.predicted)]
    needed = [attr for attr, _ in input_attrs(state.model, state.structure.needs_parse,
                                              state.cfg["structure"], state.cfg["sequence"])]
    state.model.initialize(X=upstream_annotated(state.name, needed, sample, nlp) or None)
    restart_boost(state.model)  # new weights: their first updates get the head start
    # feature dropout of its own: the same masks whatever else the pipeline draws
    seed_dropout(state.model, [training_seed(nlp), zlib.crc32(state.name.encode("utf8"))])
    warn_no_lexeme_norm(state.model, state.vocab, state.name)
    fit_from_counts(state, get_examples)

