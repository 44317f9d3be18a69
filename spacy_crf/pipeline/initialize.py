"""``CRFTagger.initialize``: the labels, the structure's settings, the word
tables and fresh weights (or, with ``keep_weights``, the trained ones grown by
the new labels)."""

import zlib
from itertools import islice
from typing import Callable, Iterable, Optional, Sequence

from spacy.language import Language
from spacy.training import Example

from ..errors import Errors
from ..models.architectures import set_n_labels
from ..models.hashed_linear import seed_dropout
from ..models.label_parts import set_label_parts
from ..models.sparse_table import restart_boost
from ..util import training_seed
from .initial_labels import initial_labels
from .inputs import upstream_annotated, warn_no_lexeme_norm
from .learning import fit_from_counts, grow
from .lexicon_setup import set_up_lexicon


def initialize(pipe, get_examples: Callable[[], Iterable[Example]], *,
               nlp: Optional[Language], labels: Optional[Sequence[str]], clusters: Optional[str],
               gazetteer: Optional[str], gazetteer_case_sensitive: bool,
               gazetteer_ruler: Optional[str], keep_weights: bool,
               gazetteer_from_training: bool = False) -> None:
    """Initialize ``pipe`` (``CRFTagger.initialize`` documents the arguments)."""
    # the label set starts afresh (as in spaCy's own pipes): labels of an
    # earlier initialize or load are not merged in, and every label-sized
    # parameter is resized to the new set
    found = initial_labels(pipe.name, pipe.target, pipe.cfg["target"], get_examples, nlp,
                           labels, pipe._added_labels)
    if keep_weights and pipe._initialized():
        found = set(pipe.target.order_labels(found))  # a span target's O, given or not
        missing = [tag for tag in pipe.tags if tag not in found]
        if labels is not None and missing:
            raise ValueError(Errors.E167.format(name=pipe.name, missing=missing,
                                                labels=pipe.label_data))
        new = [tag for tag in pipe.target.order_labels(found) if tag not in pipe.tags]
        if new:
            grow(pipe, new)
        fit_from_counts(pipe, get_examples)
        return
    # new weights: the averages of the old ones go (with the iterate they followed)
    pipe._averages.show_iterate(pipe.model)
    pipe._averages.clear()
    pipe._set_labels(pipe.target.order_labels(found))
    pipe.cfg["unseen_labels"] = []
    pipe._added_labels = []
    set_n_labels(pipe.model, len(pipe.tags))
    set_label_parts(pipe.model, [pipe.target.label_parts(tag) for tag in pipe.tags])
    # settings the structure reads from the data (relation groups, kept label pairs)
    pipe.cfg.update(pipe.crf_structure.initialize_cfg(pipe.component_view, get_examples))
    # the word tables the templates read (clusters, vector clusters, gazetteer)
    set_up_lexicon(pipe.model, pipe.name, pipe.vocab, nlp, clusters=clusters,
                   gazetteer=gazetteer, gazetteer_case_sensitive=gazetteer_case_sensitive,
                   gazetteer_ruler=gazetteer_ruler,
                   gazetteer_spans=(_gold_spans(pipe, get_examples)
                                    if gazetteer_from_training else None))
    sample = [eg.predicted for eg in islice(get_examples(), 10) if len(eg.predicted)]
    needed = [attr for attr, _ in pipe.input_attrs()]
    pipe.model.initialize(X=upstream_annotated(pipe.name, needed, sample, nlp) or None)
    restart_boost(pipe.model)  # new weights: their first updates get the head start
    # feature dropout of its own: the same masks whatever else the pipeline draws
    seed_dropout(pipe.model, [training_seed(nlp), zlib.crc32(pipe.name.encode("utf8"))])
    warn_no_lexeme_norm(pipe.model, pipe.vocab, pipe.name)
    fit_from_counts(pipe, get_examples)


def _gold_spans(pipe, get_examples: Callable[[], Iterable[Example]]) -> list:
    """(reference doc, gold spans) of every training example, for a gazetteer
    drawn from them (E125 where the target has no spans: tags have none)."""
    spans_of = getattr(pipe.target, "spans_of", None)
    if spans_of is None:
        raise ValueError(Errors.E125.format(
            why=f"gazetteer_from_training makes phrase lists of gold spans, and "
                f"'{pipe.name}' predicts {pipe.cfg['target']!r}, which has none: use it with "
                f"target = \"ents\" or \"spans:KEY\""))
    return [(eg.reference, spans_of(eg.reference) or []) for eg in get_examples()]
