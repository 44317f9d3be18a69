"""Tagging schemes for spans: BIO (IOB2) and BILUO.

Spans become one tag per token (``B-X`` begins, ``I-X`` continues, ``L-X``
ends, ``U-X`` is a one-token span, ``O`` is outside), and back. The
transitions a scheme forbids (``I-X`` after ``O``, ``L-X`` without ``B-X``,
...) become ``-inf`` scores, so a constrained CRF can never decode an
ill-formed span, in training or at prediction.

Everything here works on arrays: a tag is a (prefix code, type index) pair.
"""

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .errors import Errors

OUT, BEGIN, INSIDE, LAST, UNIT = 0, 1, 2, 3, 4
PREFIXES = {"O": OUT, "B": BEGIN, "I": INSIDE, "L": LAST, "U": UNIT}
NAMES = {code: name for name, code in PREFIXES.items()}
SCHEMES = {"BIO": (BEGIN, INSIDE), "BILUO": (BEGIN, INSIDE, LAST, UNIT)}


def check_scheme(scheme: str) -> str:
    if scheme not in SCHEMES:
        raise ValueError(Errors.E060.format(scheme=scheme))
    return scheme


def tag_set(types: Sequence[str], scheme: str) -> List[str]:
    """All tags of a scheme over the span types: ``O`` first, then by type."""
    tags = ["O"]
    for kind in sorted(set(types)):
        tags.extend(f"{NAMES[p]}-{kind}" for p in SCHEMES[check_scheme(scheme)])
    return tags


def parse_tags(tags: Sequence[str]) -> Tuple[np.ndarray, np.ndarray, List[str]]:
    """Prefix codes and type indices of tags; ``types[i]`` names type ``i``."""
    types: Dict[str, int] = {}
    prefix = np.zeros(len(tags), dtype=np.int64)
    kind = np.full(len(tags), -1, dtype=np.int64)
    for i, tag in enumerate(tags):
        if tag == "O":
            continue
        head, sep, name = tag.partition("-")
        if not sep or head not in PREFIXES or head == "O" or not name:
            raise ValueError(Errors.E061.format(tag=tag))
        prefix[i] = PREFIXES[head]
        kind[i] = types.setdefault(name, len(types))
    return prefix, kind, list(types)


def allowed_moves(tags: Sequence[str], scheme: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which transitions, first tags and last tags the scheme allows.

    Returns
    -------
    transitions : numpy.ndarray
        (L, L) bool, ``[i, j]``: tag ``j`` may follow tag ``i``.
    start, end : numpy.ndarray
        (L,) bool: a sequence may begin / end with the tag.
    """
    prefix, kind, _ = parse_tags(tags)
    check_scheme(scheme)
    same = kind[:, None] == kind[None, :]
    prev, nxt = prefix[:, None], prefix[None, :]
    if scheme == "BIO":
        # I-X continues B-X or I-X; anything else may follow anything
        opens = (prev == BEGIN) | (prev == INSIDE)
        transitions = (nxt != INSIDE) | (opens & same)
        start = prefix != INSIDE
        end = np.ones(len(tags), dtype=bool)
    else:
        # inside a span (after B or I) only I-X or L-X of the same type;
        # outside one (after O, L, U) only O, B or U
        inside = (prev == BEGIN) | (prev == INSIDE)
        continues = ((nxt == INSIDE) | (nxt == LAST)) & same
        opens_new = (nxt == OUT) | (nxt == BEGIN) | (nxt == UNIT)
        transitions = np.where(inside, continues, opens_new)
        start = (prefix == OUT) | (prefix == BEGIN) | (prefix == UNIT)
        end = (prefix == OUT) | (prefix == LAST) | (prefix == UNIT)
    return transitions, start, end


def continuations(tags: Sequence[str], scheme: str) -> np.ndarray:
    """Which tags, right after a span, would continue it.

    Returns
    -------
    numpy.ndarray
        (L, L) bool, ``[i, j]``: tag ``j`` after a span whose last tag is
        ``i`` extends that span. In BIO that is ``I-X`` after ``B-X`` or
        ``I-X``, so "exactly this span" must forbid it at the next token; in
        BILUO a span's last tag (``L-X``, ``U-X``) closes it: nothing.
    """
    prefix, kind, _ = parse_tags(tags)
    if check_scheme(scheme) == "BILUO":
        return np.zeros((len(tags), len(tags)), dtype=bool)
    opens = (prefix == BEGIN) | (prefix == INSIDE)
    return opens[:, None] & (prefix[None, :] == INSIDE) & (kind[:, None] == kind[None, :])


def spans_to_codes(n_tokens: int, starts: np.ndarray, ends: np.ndarray,
                   scheme: str) -> np.ndarray:
    """Prefix code of every token given non-overlapping spans ``[start, end)``."""
    codes = np.full(n_tokens, OUT, dtype=np.int64)
    inside = np.zeros(n_tokens + 1, dtype=np.int64)
    np.add.at(inside, starts, 1)
    np.add.at(inside, ends, -1)
    codes[np.cumsum(inside)[:n_tokens] > 0] = INSIDE
    codes[starts] = BEGIN
    if scheme == "BILUO":
        codes[ends - 1] = np.where(ends - 1 == starts, UNIT, LAST)
    return codes


def codes_to_spans(prefix: np.ndarray, scheme: str,
                   sequence_ends: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Starts and ends ``[start, end)`` of the spans of well-formed tag sequences.

    ``sequence_ends`` (one past each sequence's last row) splits a batch's
    concatenated tags: a BIO ``I-`` at the start of a sequence does not
    continue a span of the one before.

    Raises
    ------
    ValueError
        Where the tags are not well-formed (a span opened and not closed, or
        an ``I-`` that opens one).
    """
    if scheme == "BILUO":
        starts = np.flatnonzero((prefix == BEGIN) | (prefix == UNIT))
        ends = np.flatnonzero((prefix == LAST) | (prefix == UNIT)) + 1
    else:
        starts = np.flatnonzero(prefix == BEGIN)
        in_span = (prefix == BEGIN) | (prefix == INSIDE)
        follows = np.append(prefix[1:] == INSIDE, False)
        if sequence_ends is not None and len(sequence_ends):
            follows[np.asarray(sequence_ends, dtype=np.int64) - 1] = False
        ends = np.flatnonzero(in_span & ~follows) + 1
    if starts.shape != ends.shape or np.any(starts >= ends) or np.any(starts[1:] < ends[:-1]):
        raise ValueError(Errors.E179.format(scheme=scheme, why="a span opened and not "
                                            "closed, or closed and not opened"))
    if sequence_ends is not None and len(starts):
        bounds = np.asarray(sequence_ends, dtype=np.int64)
        if np.any(np.searchsorted(bounds, starts, side="right")
                  != np.searchsorted(bounds, ends - 1, side="right")):
            raise ValueError(Errors.E179.format(scheme=scheme, why="a span across sequences"))
    return starts, ends
