"""Corpus helpers for ``spacy train``: copy gold input attributes onto predicted docs.

``spacy train`` builds each example's predicted doc by tokenizing the text
alone. A CRF that uses corpus-given inputs (the POS column of CoNLL-2000, gold
sentence boundaries, gold trees) needs them on the predicted doc, at training
and at evaluation. Gold inputs come with gold tokens: where the tokenizer split
the text otherwise, the predicted doc is rebuilt from the reference's tokens.

.. code-block:: ini

    [corpora.train]
    @readers = "spacy.Corpus.v1"
    path = ${paths.train}
    augmenter = {"@augmenters": "spacy-crf.copy_attrs.v1", "attrs": ["TAG"]}
"""

from typing import Callable, Iterator, List, Sequence, Set

from spacy.attrs import IDS, SENT_START
from spacy.language import Language
from spacy.training import Example
from spacy.util import registry

from .errors import Errors
from .util import same_tokens, tokens_only

COPYABLE = ("TAG", "POS", "MORPH", "LEMMA", "SENT_START", "HEAD", "DEP")
#: what spaCy's pipe meta calls what each copied attribute sets (a parse, HEAD,
#: sets the sentence starts too: Doc.from_array derives them from the heads)
ASSIGNED_AS = {"TAG": ("token.tag",), "POS": ("token.pos",), "MORPH": ("token.morph",),
               "LEMMA": ("token.lemma",), "SENT_START": ("token.is_sent_start",),
               "HEAD": ("token.head", "token.is_sent_start"), "DEP": ("token.dep",)}


@registry.augmenters("spacy-crf.copy_attrs.v1")
def create_copy_attrs(attrs: List[str]) -> Callable[[Language, Example], Iterator[Example]]:
    """Copy token attributes from each reference doc onto its predicted doc.

    Parameters
    ----------
    attrs : list of str
        Any of TAG, POS, MORPH, LEMMA, SENT_START, HEAD, DEP. HEAD and DEP (a
        gold parse, for ``structure = "tree"`` or tree features) go together.

    Raises
    ------
    ValueError
        E245 for an attribute it cannot copy, E246 for HEAD without DEP (or DEP
        without HEAD).
    """
    unknown = [a for a in attrs if a not in COPYABLE]
    if unknown:
        raise ValueError(Errors.E245.format(unknown=", ".join(map(str, unknown)),
                                            allowed=", ".join(COPYABLE)))
    if ("HEAD" in attrs) != ("DEP" in attrs):
        raise ValueError(Errors.E246.format(attrs=", ".join(attrs)))
    attr_ids = [IDS[a] for a in attrs]

    checked: Set[int] = set()

    def copy_attrs(nlp: Language, example: Example) -> Iterator[Example]:
        if id(nlp) not in checked:  # (once per pipeline, before the first copy)
            check_not_kept(nlp, attrs)
            checked.add(id(nlp))
        ref, pred = example.reference, example.predicted
        if not same_tokens(ref, pred):
            # gold inputs come with gold tokens: spaCy's tokenizer may split the
            # text otherwise (e.g. "***" or "wheel-chair" against UD's tokens)
            pred = tokens_only(ref)
            example = Example(pred, ref)
        if len(ref) and attr_ids:  # (attrs = []: the corpus's tokens alone)
            values = ref.to_array(attr_ids).reshape(len(ref), len(attr_ids))
            if SENT_START in attr_ids and not ref.has_annotation("SENT_START"):
                values = values.copy()
                values[:, attr_ids.index(SENT_START)] = 0
            pred.from_array(attr_ids, values)
        yield example

    return copy_attrs


def check_not_kept(nlp: Language, attrs: Sequence[str]) -> None:
    """E239 where a pipe of ``nlp`` predicts one of ``attrs`` and keeps the
    values already on a doc: a crf_tagger's ``keep_existing`` (by default for
    ``tag``, ``lemma`` and ``sent_starts``), spaCy's ``overwrite = false``
    (its ``tagger``, ``senter`` and lemmatizers by default). Copied from the
    gold, they would be what it keeps, and what it is scored on."""
    for name, pipe in nlp.pipeline:
        meta = nlp.get_pipe_meta(name)
        if not keeps_existing(pipe, meta.factory):
            continue  # (a pipe that overwrites: the copy is harmless)
        assigns = set(meta.assigns)
        for attr in attrs:
            if assigns.intersection(ASSIGNED_AS[attr]):
                raise ValueError(Errors.E239.format(attr=attr, name=name))


def keeps_existing(pipe: object, factory: str) -> bool:
    """Whether ``pipe`` keeps the values a doc already has where it predicts:
    a crf_tagger's ``keep_existing``, else spaCy's ``overwrite`` setting (in
    the pipe's ``cfg``, or an attribute of the lemmatizers) set false."""
    if factory == "crf_tagger":
        return bool(pipe.keep_existing)
    overwrite = getattr(pipe, "cfg", {}).get("overwrite", getattr(pipe, "overwrite", True))
    return overwrite is False
