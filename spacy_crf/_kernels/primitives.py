"""What every CRF kernel shares: ``-inf``, the scaled passes' underflow guard,
the semiring modes, log-add-exp, and whether a label is allowed at a row
(or every row of a sequence has its label).

The modes and flags are numpy scalars on purpose. numba types a Python int or
bool constant passed to a jitted function as a literal (``Literal[int](0)``)
and compiles the callee once for each value it meets, so a forward pass called
with ``SCALED``, ``LOG`` and ``MAX`` as Python ints, and with an offset that
starts at a literal ``0``, compiled six times. A numpy scalar is typed as its
dtype: one compiled function serves every mode, which cut the first training
step of a fresh install by more than half (issue 32; ``benchmarks/cold_start.py``).
Start row offsets at :data:`ZERO` for the same reason.
"""

import numpy as np
from numba import njit

NEG_INF = -np.inf

#: the semiring of a pass: sums in probability space with a scale per position,
#: sums of logs (log-sum-exp), or maxima (Viterbi)
SCALED, LOG, MAX = np.int64(0), np.int64(1), np.int64(2)
#: flags and a start offset that numba types as bool / int64, not as literals
TRUE, FALSE = np.bool_(True), np.bool_(False)
ZERO = np.int64(0)

# Scaling is exact only while no factor underflows. With every finite shifted
# log-weight above UNDERFLOW_GUARD, a position's alpha entries stay above
# exp(2 * UNDERFLOW_GUARD) / L**2 relative to their sum, far from float64's
# limit; past it, the sequence goes to the log-space path instead.
UNDERFLOW_GUARD = -200.0


@njit(cache=True)
def allowed(fixed, t, j):
    """Whether row ``t`` may take label ``j`` (``fixed[t]`` is -1 or the only label)."""
    return fixed[t] < 0 or fixed[t] == j


@njit(cache=True)
def all_known(fixed, o, n):
    """Whether every row of ``o:o+n`` has its label (no -1): the likelihood's
    clamped term is then one labelling, scored along its path."""
    for t in range(o, o + n):
        if fixed[t] < 0:
            return False
    return True


@njit(cache=True)
def finite_max(values):
    """Max of the finite entries (0.0 if there are none), used as a shift."""
    best = NEG_INF
    for v in values.ravel():
        if v > best and v != np.inf:
            best = v
    if best == NEG_INF:
        return 0.0
    return best


@njit(cache=True)
def within_guard(values, shift):
    """Whether every finite entry of ``values - shift`` is above UNDERFLOW_GUARD."""
    for v in values.ravel():
        if v != NEG_INF and v - shift < UNDERFLOW_GUARD:
            return False
    return True


@njit(cache=True)
def logaddexp(a, b):
    """log(exp(a) + exp(b)), exact at ``-inf``."""
    if a == NEG_INF:
        return b
    if b == NEG_INF:
        return a
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))
