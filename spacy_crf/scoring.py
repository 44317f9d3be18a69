"""Scores for the ``spacy train`` table and ``nlp.evaluate``: the registered
scorer ``spacy-crf.crf_scorer.v1``, which hands a component's examples to its
target (each target scores itself, :meth:`spacy_crf.targets.Target.score`).

Each component's main score is keyed by what it sets, as spaCy's own pipes
key theirs (the tagger's ``tag_acc``, ``ner``'s ``ents_f``), so two
``crf_tagger`` components with different targets never share one; it is the
factory's default score weight, so a config made by ``spacy init fill-config``
picks model-best by it (:func:`main_score_key`):

* ``tag``, ``pos``, ``dep``: token accuracy (``tag_acc``, ``pos_acc``, ``dep_acc``);
* ``morph``: ``morph_acc``, the accuracy of ``Token.morph`` (FEATS), with
  ``pos_acc`` and ``morph_per_feat`` beside it, as spaCy's morphologizer
  scores them;
* ``sent_starts``: sentence F1 (``sents_f``, with ``sents_p`` and
  ``sents_r``), as spaCy's senter scores it;
* ``lemma``: ``lemma_acc``, the accuracy of ``Token.lemma_`` (spaCy's lemmatizers');
* ``ents``: entity F1 (``ents_f``);
* ``spans:KEY``: span F1 (``spans_KEY_f``);
* ``_.NAME``: ``NAME_score``, the chunk F1 (``NAME_f``) where the gold labels are
  IOB tags (``B-X``, ``I-X``, ``O``; CoNLL-2000 chunkers are judged by it), else
  the token accuracy (``NAME_acc``).

``crf_score`` repeats the main score, and ``crf_acc`` is the token accuracy
of the target's labels (for ``ents``, of the IOB tags; ``None`` for
``spans:KEY``): names configs written before main scores were keyed by target
still weigh (they are the same for every target, so in a pipeline of two
components the later one's overwrite the earlier's). ``ents`` gets spaCy's NER
scores (``ents_p``, ``ents_r``, ``ents_f``, ``ents_per_type``) and
``spans:KEY`` its span scores (``spans_KEY_p/_r/_f``). For ``_.NAME`` targets
with IOB labels, chunk precision, recall and F1 follow, counted as conlleval
does (``NAME_p``, ``NAME_r``, ``NAME_f``, ``NAME_per_type``), over character
offsets so that they hold across tokenisations.
"""

from typing import Any, Callable, Dict, Iterable, Optional

from spacy.training import Example
from spacy.util import registry

from .targets import make_target
# (imported from here before targets scored themselves)
from .targets.scores import MAIN_SCORE, iob_chunks, token_accuracy  # noqa: F401

__all__ = ["MAIN_SCORE", "main_score_key", "default_score_weights", "make_crf_scorer",
           "score_crf", "token_accuracy", "iob_chunks"]


def main_score_key(target: str) -> str:
    """The key of a component's main score, named after its target as spaCy's
    own pipes name theirs: ``tag_acc``, ``pos_acc``, ``dep_acc``, ``ents_f``,
    ``spans_KEY_f``, or ``NAME_score`` for a ``_.NAME`` target (chunk F1 for
    IOB labels, else token accuracy: which, the labels tell only later)."""
    return make_target(target).main_score_key()


def default_score_weights(target: str) -> Dict[str, Optional[float]]:
    """The score weights of a component with this target: all on its main
    score (:func:`main_score_key`), with the scores worth seeing beside it in
    the ``spacy train`` table at 0, all keyed by the target (``morph``: also
    ``morph_per_feat`` at ``None``, reported but not in the table, as spaCy's
    morphologizer has it)."""
    return make_target(target).score_weights()


@registry.scorers("spacy-crf.crf_scorer.v1")
def make_crf_scorer() -> Callable[..., Dict[str, Any]]:
    """The default scorer of ``crf_tagger``."""
    return score_crf


def score_crf(examples: Iterable[Example], *, target: str, **kwargs: Any) -> Dict[str, Any]:
    """Score a ``crf_tagger``'s predictions.

    Parameters
    ----------
    examples : iterable of Example
        Predicted and reference docs.
    target : str
        The component's target (``tag``, ``pos``, ``dep``, ``morph``,
        ``ents``, ``spans:KEY``, ``_.NAME``, or any registered one).

    Returns
    -------
    dict
        The main score under its target's key (:func:`main_score_key`: F1
        for spans, entities and IOB chunks, else token accuracy) and as
        ``crf_score``, ``crf_acc`` and the target's own keys (see the module
        docstring). A score is ``None`` where the examples have nothing
        to score (e.g. no gold or predicted entity at all).
    """
    return make_target(target).score(list(examples), **kwargs)
