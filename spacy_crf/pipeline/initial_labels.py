"""The label set ``initialize`` gives a crf_tagger, read from its examples.

spaCy's own pipes read their labels from the reference docs of the examples
``nlp.initialize`` hands them (or take ``labels`` from ``spacy init
labels``). Here the same, with the errors a config's corpus or a hand-written
``get_examples`` can meet: not a function (E160), an empty corpus (E020), no
label at all (E008); and spaCy's placeholder example for ``nlp.initialize()``
without data, where a span target may start with ``O`` alone (W016).
"""

from itertools import islice
from typing import Any, Callable, Iterable, Optional, Sequence, Set

from spacy.language import Language
from spacy.training import Example

from ..errors import Errors, Warnings, warn
from ..targets import Target, check_label

#: the words of the Example spaCy's nlp.initialize() passes when given no get_examples
_PLACEHOLDER = ["x", "y", "z"]


#: the first examples of a corpus a target's check_corpus reads
CORPUS_SAMPLE = 100


def initial_labels(name: str, target: Target, target_name: str,
                   get_examples: Callable[[], Iterable[Example]], nlp: Optional[Language],
                   labels: Optional[Sequence[str]], added: Sequence[str]) -> Set[str]:
    """The labels a component starts with: ``labels`` if given (a span
    target's types as all their tags), else those of the examples' reference
    docs with the labels ``added`` before initialize.

    Raises
    ------
    TypeError
        E160 unless ``get_examples`` is a function returning Examples.
    ValueError
        E020 for a configured corpus with no examples, E008 for no label at all.
    """
    # validate a sample only: spaCy's validate_get_examples reads the whole
    # corpus, and the label pass below reads it again (a third of the
    # training time on CoNLL-2000); that pass checks every example's type
    check_get_examples(name, get_examples, nlp, labels)
    warn_gold_cut_away(name, target, nlp)
    if labels is not None:
        for label in labels:  # (as add_label checks them)
            check_label(label)
        # a span target's types stand for their tags, as in add_label (spacy init
        # labels writes types); "O" and tags stand for themselves
        found = {tag for label in labels for tag in target.labels_for(label)}
    else:
        found = set(added)
        n_examples = 0
        for eg in get_examples():
            if not isinstance(eg, Example):
                raise TypeError(Errors.E160.format(
                    name=name, obj=f"a function whose examples include a {type(eg).__name__}"))
            found.update(target.label_strings(eg.reference))
            n_examples += 1
        if not n_examples and not found:
            raise ValueError(Errors.E020.format(name=name, where=_train_path(nlp)))
        target.check_corpus(name, (eg.reference for eg in islice(get_examples(), CORPUS_SAMPLE)))
    # a span target given no type (labels=[]: what spacy init labels writes for
    # one that has none) starts with O alone too
    given_none = labels is not None and target.is_span_target
    if not found and (given_none or labels is None and may_start_untrained(target, get_examples)):
        # as spaCy's ner after nlp.initialize(): no types, no entities predicted
        warn(Warnings.W016.format(name=name, target=target_name, what="span"))
        found = {"O"}
    if not found:
        raise ValueError(Errors.E008.format(target=target_name, name=name))
    return found


def warn_gold_cut_away(name: str, target: Target, nlp: Optional[Language]) -> None:
    """W054 where the target's gold lives outside the token arrays
    (``doc.user_data``, ``doc.spans``) and the config's training corpus cuts
    long docs (``max_length``) or re-tokenizes them (``gold_preproc``): spaCy's
    reader rebuilds those docs without it, so they train the component on nothing."""
    if nlp is None or target.gold_kept_in is None:
        return
    try:
        block = nlp.config.interpolate()
        for part in str(block["training"]["train_corpus"]).split("."):
            block = block[part]
        max_length, gold_preproc = int(block.get("max_length") or 0), block.get("gold_preproc")
    except Exception:  # (no corpus in the config, or one of a reader of its own)
        return
    if max_length > 0 or gold_preproc is True:
        warn(Warnings.W054.format(name=name, target=target.name,
                                  where=target.gold_kept_in, max_length=max_length,
                                  gold_preproc=str(bool(gold_preproc)).lower()))


def _train_path(nlp: Optional[Language]) -> str:
    """`` (paths.train = ...)`` where the pipeline's config names a corpus."""
    train = nlp.config.get("paths", {}).get("train") if nlp is not None else None
    return f" (paths.train = {train})" if train else ""


def check_get_examples(name: str, get_examples: Any, nlp: Optional[Language],
                       labels: Optional[Sequence[str]]) -> None:
    """E160 (a TypeError, as spaCy's E930 / E978) unless ``get_examples`` is a
    function returning Examples; E020 for a configured corpus with none.

    Only the first 10 examples are read here: the label pass reads the rest.
    """
    if not callable(get_examples):
        raise TypeError(Errors.E160.format(name=name, obj=f"a {type(get_examples).__name__}"))
    examples = get_examples()
    try:
        sample = list(islice(iter(examples), 10))
    except TypeError:  # e.g. lambda: example, a bare Example
        raise TypeError(Errors.E160.format(
            name=name, obj=f"a function returning a {type(examples).__name__}")) from None
    for eg in sample:
        if not isinstance(eg, Example):
            raise TypeError(Errors.E160.format(
                name=name, obj=f"a function whose examples include a {type(eg).__name__}"))
    if sample or labels is not None:
        return
    where = _train_path(nlp)
    if where:  # spacy train with an empty corpus: name the file
        raise ValueError(Errors.E020.format(name=name, where=where))
    raise TypeError(Errors.E160.format(name=name, obj="a function returning no examples"))


def may_start_untrained(target: Target, get_examples: Callable[[], Iterable[Example]]) -> bool:
    """Whether a span target may start with ``O`` alone: it was given no
    examples, i.e. ``nlp.initialize()`` without get_examples, for which spaCy
    passes one placeholder Example (the words "x y z", unannotated). Examples
    of one's own without spans still get E008 (a corpus lacking them)."""
    if not target.is_span_target:
        return False
    examples = list(islice(get_examples(), 2))
    return (len(examples) == 1 and [t.text for t in examples[0].reference] == _PLACEHOLDER
            and target.spans_of(examples[0].reference) is None)
