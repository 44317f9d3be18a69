"""``sent_starts``: sentence boundaries, ``Token.is_sent_start``, as spaCy's
senter predicts and scores them."""

from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

import numpy as np
from spacy.attrs import SENT_START
from spacy.pipeline.senter import senter_score
from spacy.tokens import Doc, Token
from spacy.training import Example
from spacy.vocab import Vocab

from ..errors import Errors, Warnings, warn
from ..feature_sources.usual_case import USUAL_CASE_TEMPLATES
from .registry import register_target
from .scores import MAIN_SCORE, prf_weights, token_accuracy
from .token_attrs import TokenAttrTarget


#: the shapes on both sides of a boundary, and the two words before it: a
#: capital after a full stop (". Xxxx"), after a smiley or a URL, a signature's
#: "Xxxxx Xxxxx" after a closing ("regards ,"). The generic templates see each
#: side alone. UD English EWT in docs of 10 sentences, plain loop: sents_f
#: 76.74 -> 78.35 on dev, 73.82 -> 76.45 on test (docs/usage.md, "Sentence
#: boundaries")
BOUNDARY_TEMPLATES = ("SHAPE[-1]|SHAPE[0]", "SHAPE[-1]|SHAPE[0]|SHAPE[1]", "NORM[-2]|NORM[-1]")
#: whether the token before, and the token itself, is whitespace. spaCy's
#: tokenizer keeps a line break of raw text as a token ("\n", "\n\n",
#: "\r\n", ...), each variant its own NORM and SHAPE. Before the features
#: folded whitespace (``features/whitespace.py``) these were what read the
#: variants alike: trained with "\n" breaks, test sents_f with "\n\n"
#: breaks 65.15 -> 77.76. Folded, every variant reads as "\n" anyway (90.00
#: with them, 89.90 without; with "\n" breaks the same; trained and tested
#: without breaks 76.37 against 76.45): they stay, for the models saved
#: before the fold. UD English EWT in docs of 10 sentences, plain loop
#: (``benchmarks/line_breaks.py``, docs/usage.md)
LINE_BREAK_TEMPLATES = ("IS_SPACE[-1]", "IS_SPACE")
#: whether whitespace follows the token before and the token itself, alone and
#: with whether each is punctuation (``feature_sources/space_after.py``): a
#: quote after a full stop closes the sentence when attached to it
#: (``city."``) and opens the next when attached to the word after (``"The``);
#: a full stop attached to the next word ends no sentence (``Us.Net``). Read
#: where the training docs have spacing. UD English EWT, plain loop, sents_f
#: dev / test: the corpus's documents with their line breaks 88.93 / 89.06 ->
#: 90.69 / 89.89; without them 80.35 / 77.74 -> 82.74 / 79.71; in docs of 10
#: sentences 78.48 / 76.37 -> 80.73 / 77.69 (docs/features.md)
SPACING_TEMPLATES = ("SPACE_AFTER[-1]|SPACE_AFTER[0]|IS_PUNCT[-1]|IS_PUNCT[0]",
                     "SPACE_AFTER[-1..0]")


@register_target
class SentStartsTarget(TokenAttrTarget):
    """Sentence boundaries: ``Token.is_sent_start``, one label per token, ``S``
    (the token starts a sentence) or ``I`` (it does not), as spaCy's senter
    predicts them; components after it see ``doc.sents``.

    Gold is read with ``Doc.to_array(SENT_START)`` (1 a start, -1 not a start,
    0 unannotated) and predictions written with ``Doc.from_array``. A doc
    whose boundaries are not annotated at all (``doc.has_annotation("SENT_START")``
    is False: a fresh Doc marks its first token and nothing else) has no gold.
    The first token of a doc is always a start, in gold and in what is written,
    as ``doc.sents`` reads it.

    Its CRF sequence is the whole doc (:attr:`whole_docs`): the boundaries are
    what it predicts, so those a doc already has must not cut its sequences
    or its feature windows.
    """

    name = "sent_starts"
    score_attr = "sents"
    assigns = ("token.is_sent_start",)
    token_attr = SENT_START
    whole_docs = True
    #: as spaCy's senter (overwrite = false): boundaries a parser or the
    #: sentencizer set before it stay, and it fills in the rest
    keeps_existing = True
    #: how the word is usually written (``feature_sources/usual_case.py``), and
    #: that with a capital after the word before: "The" after "home" starts a
    #: sentence, "Texas" need not. UD English EWT in docs of 10 sentences,
    #: plain loop: sents_f +0.82 on dev, +1.82 on test (docs/features.md);
    #: then the boundary's own templates (:data:`BOUNDARY_TEMPLATES`), the
    #: whitespace tokens around it (:data:`LINE_BREAK_TEMPLATES`) and the
    #: text's spacing (:data:`SPACING_TEMPLATES`), read whatever tables the
    #: pipeline has
    optional_templates = (USUAL_CASE_TEMPLATES + ("USUAL_CASE|IS_TITLE|NORM[-1]",)
                          + BOUNDARY_TEMPLATES + LINE_BREAK_TEMPLATES + SPACING_TEMPLATES)
    START, INSIDE = "S", "I"
    #: the values ``Doc.to_array(SENT_START)`` gives, as uint64 (-1 wraps around)
    KEYS = {START: 1, INSIDE: 2 ** 64 - 1}

    def key_of(self, label: str, vocab: Vocab) -> int:
        if label not in self.KEYS:
            raise ValueError(Errors.E213.format(label=label))
        return self.KEYS[label]

    def labels_for(self, label: str) -> List[str]:
        self.key_of(label, None)  # E213 for a label that is neither S nor I
        return [label]

    def order_labels(self, labels: Iterable[str]) -> List[str]:
        """Both labels, always (``I`` first: an untrained model's ties decode as
        no boundary), whatever the examples or ``labels`` showed."""
        return [self.INSIDE, self.START]

    def reference_keys(self, doc: Doc) -> np.ndarray:
        if not len(doc) or not doc.has_annotation("SENT_START"):
            return np.zeros(len(doc), dtype=np.uint64)
        keys = super().reference_keys(doc)
        keys[0] = self.KEYS[self.START]  # (a doc built with sent_starts=[None, ...] leaves it 0)
        return keys

    def label_strings(self, doc: Doc) -> List[str]:
        # both labels for any annotated doc: a one-sentence doc still tells
        # that its other tokens are no starts, and the first is one
        return [self.INSIDE, self.START] if doc.has_annotation("SENT_START") else []

    def check_corpus(self, name: str, references: Iterable[Doc]) -> None:
        """W056 where no annotated doc holds two sentences: a senter learns the
        boundaries inside docs, and single-sentence docs have none (``spacy
        convert -n 1``, ``crf-convert uner``); it would learn that no token but
        the first starts one, and score sents_f 100 on such a dev corpus."""
        annotated = [doc for doc in references if doc.has_annotation("SENT_START")]
        if annotated and all(sum(1 for _ in doc.sents) < 2 for doc in annotated):
            warn(Warnings.W056.format(name=name, n=len(annotated)))

    def string_of(self, doc: Doc, key: int) -> str:
        return {v: k for k, v in self.KEYS.items()}[int(key)]

    def write(self, doc: Doc, ids: np.ndarray) -> None:
        self.write_batch([doc], ids, np.asarray([len(doc)], dtype=np.int64), False)

    def forced_labels(self, docs: Sequence[Doc]) -> np.ndarray:
        """``S`` at each doc's first token (``doc.sents`` starts every doc with
        a sentence), so its confidence is 1 and every n-best labelling starts so."""
        lengths = np.fromiter((len(doc) for doc in docs), dtype=np.int64, count=len(docs))
        forced = np.full(int(lengths.sum()), -1, dtype=np.int64)
        # (its labels are always these two, in this order: set or not)
        forced[(np.cumsum(lengths) - lengths)[lengths > 0]] = self.order_labels(()).index(
            self.START)
        return forced

    def write_batch(self, docs: Sequence[Doc], label_ids: np.ndarray, doc_lengths: np.ndarray,
                    keep_existing: bool) -> None:
        keys = self._label_keys[label_ids]
        firsts = (np.cumsum(doc_lengths) - doc_lengths)[doc_lengths > 0]
        # decoded as S already (forced_labels); written so for ids given by hand too
        keys[firsts] = self.KEYS[self.START]
        attrs = [SENT_START]
        end = 0
        for doc, n in zip(docs, doc_lengths.tolist()):
            end += n
            if n:
                doc.from_array(attrs, keys[end - n:end])

    def getter(self) -> Callable[[Token, str], object]:
        # the label, not the bool: spaCy's scorer reads False (== 0) as missing
        return lambda token, _: {True: self.START, False: self.INSIDE}.get(token.is_sent_start)

    def _token_gold_ids(self, example: Example, same: bool) -> np.ndarray:
        """As a tag's, but a sentence starts at the first piece of a reference
        token the tokenizer split ("Don't": "Do" "n't"), as spaCy's
        ``Example.get_aligned_sent_starts`` reads it; a predicted token made of
        several reference tokens starts one where the first of them does (and
        is unannotated where a sentence starts inside it)."""
        gold = super()._token_gold_ids(example, same)
        if same:
            return gold
        start, inside = (self.order_labels(()).index(label) for label in (self.START, self.INSIDE))
        reference = self.ids_of_keys(self.reference_keys(example.reference))
        x2y = example.alignment.x2y
        lengths = np.asarray(x2y.lengths, dtype=np.int64)
        data = np.asarray(x2y.data, dtype=np.int64)
        first = np.cumsum(lengths) - lengths
        aligned = np.where(lengths > 0, data[np.minimum(first, len(data) - 1)], -1)
        # a later piece of one reference token: no start
        piece = (lengths == 1) & (np.r_[False, (aligned[1:] == aligned[:-1]) & (lengths[:-1] == 1)])
        gold[piece & (gold == start)] = inside
        for i in np.flatnonzero(lengths > 1).tolist():  # merged tokens
            ids = reference[data[first[i]:first[i] + lengths[i]]]
            gold[i] = (ids[0] if ids[0] >= 0 and (ids[1:] == inside).all()
                       else inside if (ids == inside).all() else -1)
        return gold

    def main_score_key(self) -> str:
        """``sents_f``, the sentence F1."""
        return f"{self.score_attr}_f"

    def score_weights(self) -> Dict[str, Optional[float]]:
        return prf_weights(self.score_attr)

    def score(self, examples: List[Example], **kwargs: Any) -> Dict[str, Any]:
        """spaCy's senter scores (``sents_p``, ``sents_r``, ``sents_f``: the
        sentences as spans, docs without boundary annotation left out), and
        ``crf_acc`` the accuracy of the S / I labels."""
        results = senter_score(examples, **kwargs)
        results["crf_acc"] = token_accuracy(examples, self, "sent_start",
                                            **kwargs)["sent_start_acc"]
        results[MAIN_SCORE] = results["sents_f"]
        return results
