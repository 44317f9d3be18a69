"""CoNLL-U as documents: the sentences joined as the corpus marks them, and,
where asked, the line break before each paragraph kept as a token.

spaCy's converter (``spacy convert -c conllu -n N``) joins every ``N``
consecutive sentences with a space and drops the comments, ``# newdoc`` and
``# newpar`` among them. A sentence-boundary model trained on its output has
never seen a line break, the mark of raw text that ends most sentences
without punctuation (a title, a signature, a header line). Here the sentences
are read by that same converter (one doc each: the words, tags, morphology,
lemmas, tree and entities it reads), and then:

* joined into the corpus's documents (``n_sents = 0``: a new doc at each
  ``# newdoc``) or into docs of ``n_sents`` consecutive sentences;
* with ``line_breaks``, each sentence that a paragraph follows inside its doc
  (the next one has ``# newpar`` or ``# newdoc``) ends in a ``"\\n"`` token, as
  spaCy's tokenizer makes of a line break in raw text. The token is added by
  spaCy's own whitespace augmentation (``make_whitespace_variant``): POS
  ``SPACE``, tag ``_SP``, attached to the word before it, not a sentence start.

On UD English EWT (docs of 10 sentences, the plain loop of factory
defaults), a senter trained and run on docs with the line breaks finds
sentences at 90.00 F on test, one trained and run without them at 76.37,
and one trained without them but run on text that has them at 55.18
(``benchmarks/line_breaks.py``, ``docs/usage.md``).
"""

from typing import List, Tuple

from spacy.lang.xx import MultiLanguage
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from spacy.training.augment import make_whitespace_variant
from spacy.training.converters import conllu_to_docs
from spacy.vocab import Vocab

from .errors import Errors

#: the token spaCy's tokenizer makes of a line break
LINE_BREAK = "\n"


def _blocks(text: str) -> List[str]:
    """The sentence blocks of a CoNLL-U text, split as spaCy's reader splits them."""
    return text.strip().split("\n\n")


#: the comments that open a document, and those that open a paragraph
NEWDOC = ("# newdoc",)
PARAGRAPH = ("# newdoc", "# newpar")


def _opens(block: str, marks: Tuple[str, ...]) -> bool:
    """Whether the comments of a sentence block hold one of ``marks``."""
    return any(line.startswith(marks) for line in block.split("\n") if line.startswith("#"))


def _sentence_docs(text: str, vocab: Vocab, merge_subtokens: bool,
                   append_morphology: bool) -> List[Doc]:
    """One doc a sentence, read by spaCy's CoNLL-U converter, in ``vocab``."""
    try:
        docs = list(conllu_to_docs(text, n_sents=1, no_print=True,
                                   merge_subtokens=merge_subtokens,
                                   append_morphology=append_morphology))
    except (ValueError, IndexError, KeyError) as err:
        raise ValueError(Errors.E232.format(err=f"{type(err).__name__}: {err}")) from err
    if len(docs) != len(_blocks(text)):
        raise ValueError(Errors.E232.format(
            err=f"{len(_blocks(text))} blocks between blank lines gave {len(docs)} sentences"))
    # the reader's vocab has no lexical attributes (a line break is not
    # is_space there, and Doc.from_docs would put a space after it)
    return list(DocBin(docs=docs, store_user_data=True).get_docs(vocab))


def _end_with_line_break(doc: Doc, nlp: MultiLanguage) -> Doc:
    """``doc`` with a ``"\\n"`` token after its last word (spaCy's whitespace augmentation)."""
    variant = make_whitespace_variant(nlp, Example(doc, doc), LINE_BREAK, len(doc)).reference
    if len(variant) != len(doc) + 1:
        # spaCy's augmentation leaves alone a doc with spans, links or a partial tree
        raise ValueError(Errors.E233.format(text=doc.text[:60]))
    return variant


def conllu_documents(text: str, n_sents: int = 0, line_breaks: bool = False,
                     merge_subtokens: bool = False, append_morphology: bool = False) -> List[Doc]:
    """The sentences of a CoNLL-U text joined into docs (see the module).

    Parameters
    ----------
    text : str
        A CoNLL-U file's text.
    n_sents : int
        Sentences a doc; 0 (the default): the corpus's documents, a new doc
        at each ``# newdoc`` (the sentences before the first mark are one).
    line_breaks : bool
        End each sentence that a paragraph follows inside its doc with a
        ``"\\n"`` token.
    merge_subtokens, append_morphology : bool
        As spaCy's converter takes them (``spacy convert -T``, ``-m``): a
        multiword token as one token; the FEATS appended to the tag.

    Returns
    -------
    list of Doc
        The docs, each with its sentences' annotation and sentence starts.

    Raises
    ------
    ValueError
        ``n_sents`` below 0 (E234), a text spaCy's reader cannot read (E232),
        or a sentence that cannot take a line break (E233).
    """
    if n_sents < 0:
        raise ValueError(Errors.E234.format(n_sents=n_sents))
    if not text.strip():
        return []
    blocks = _blocks(text)
    nlp = MultiLanguage()
    docs = _sentence_docs(text, nlp.vocab, merge_subtokens, append_morphology)
    groups: List[List[int]] = []
    for i, block in enumerate(blocks):
        new = (not groups or (len(groups[-1]) == n_sents if n_sents
                              else _opens(block, NEWDOC)))
        if new:
            groups.append([])
        groups[-1].append(i)
    out = []
    for group in groups:
        sentences = [docs[i] for i in group]
        if line_breaks:
            sentences = [_end_with_line_break(doc, nlp)
                         if k + 1 < len(group) and _opens(blocks[group[k + 1]], PARAGRAPH)
                         else doc for k, doc in enumerate(sentences)]
        out.append(Doc.from_docs(sentences))
    return out
