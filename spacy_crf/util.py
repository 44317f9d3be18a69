"""Small helpers shared by the pipeline modules."""

import os
from pathlib import Path

import numpy as np
from spacy.attrs import IDX, LENGTH, ORTH, SPACY
from spacy.tokens import Doc


def is_number(value) -> bool:
    """An int or a float, not a bool (a config's ``true`` is not a number here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_count(value, least: int = 1) -> bool:
    """An int (not a bool) of at least ``least``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def same_tokens(a: Doc, b: Doc) -> bool:
    """Whether two docs have the same text split into the same tokens (vectorised).

    Equal words at equal offsets with equal trailing whitespace make equal
    texts; ``Doc.text`` itself would build a string token by token.
    """
    if len(a) != len(b):
        return False
    if not len(a):
        return True
    attrs = [ORTH, IDX, LENGTH, SPACY]
    return bool(np.array_equal(a.to_array(attrs), b.to_array(attrs)))


def tokens_only(doc: Doc, vocab=None, **annotations) -> Doc:
    """A new Doc of ``doc``'s words and spaces alone: the input a component
    sees for a gold doc (``Example(tokens_only(ref), ref)``), its gold tokens
    kept (spaCy's tokenizer may split the text otherwise, e.g. "***" or
    "wheel-chair" against UD's tokens).

    Parameters
    ----------
    doc : Doc
        The doc whose tokens are copied.
    vocab : Vocab, optional
        The new doc's vocab (``doc``'s where not given).
    **annotations
        Passed on to ``Doc``'s constructor (``pos=``, ``heads=``, ...).
    """
    return Doc(vocab if vocab is not None else doc.vocab, words=[t.text for t in doc],
               spaces=[bool(t.whitespace_) for t in doc], **annotations)


def training_seed(nlp) -> int:
    """The pipeline config's ``[training] seed`` (``${system.seed}`` resolved, as
    ``spacy train --system.seed N`` sets it); where there is none (no pipeline,
    a null seed, a config that does not interpolate), a draw from numpy's
    global generator, which ``thinc.api.fix_random_seed`` fixes."""
    seed = None
    if nlp is not None:
        try:
            seed = nlp.config.interpolate().get("training", {}).get("seed")
        except Exception:  # confection's errors for a broken reference: no seed to read
            seed = None
    if is_count(seed, 0):
        return seed
    return int(np.random.randint(0, 2 ** 31 - 1))


def make_writable_dir(path: Path) -> None:
    """Create the directory ``path`` (parents too) and write a file there,
    removed at once: ``OSError`` where either fails, so that a command finds a
    read-only or missing place before its work, not when saving the result."""
    path.mkdir(parents=True, exist_ok=True)
    probe = path / f".tmp-probe-{os.getpid()}"  # (a stale one is a temp file like any)
    probe.write_bytes(b"")
    probe.unlink()
