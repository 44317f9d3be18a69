"""Vector kernels of L-BFGS and OWL-QN (numba only, no spaCy).

The batch trainer's parameter vectors hold millions of weights, so an
iteration's cost is the bytes it moves, not its flops: each kernel here does
its work in one pass (numpy would make a temporary array per operation,
several per line). ``S`` and ``Y`` are ``(m, n)`` ring buffers of the
correction pairs ``s = x' - x`` and ``y = g' - g``, and the direction ``d``
is float32 too: the two-loop recursion reads them ``m`` times each, and a
search direction needs no more precision (points, gradients, ``rho[i] = 1 /
(y_i . s_i)`` and every dot product are float64). ``slots`` lists the pairs
oldest first.

Sums use ``fastmath={"reassoc"}`` so that the reductions vectorise instead
of waiting on one accumulator; nothing here is in log space or meets an
infinity. Every loop over the vectors is a ``prange``: a pass is bound by
memory bandwidth, and on CoNLL-2000 (6.4 million weights) two cores took
the two-loop recursion from 63 to 33 ms per iteration. Only the batch
trainer's main thread calls these (its objective threads do not).

Where ``c1 > 0`` (OWL-QN) the *orthant* of coordinate ``i`` at point ``x``
with pseudo-gradient ``pg`` is ``sign(x_i)``, or ``sign(-pg_i)`` where ``x_i
= 0``; with ``c1 = 0`` nothing is projected (plain L-BFGS).
"""

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True, parallel=True, fastmath={"reassoc"})
def pseudo_gradient(x, g, c1, pg):
    """Fill ``pg`` with the least-norm subgradient of ``f + c1 ||x||_1`` (``g = f'(x)``).

    pg_i = g_i + c1 sign(x_i)                           where x_i != 0
         = g_i + c1 if < 0;  g_i - c1 if > 0;  else 0   where x_i == 0

    Returns ``(||pg||^2, ||x||^2, ||x||_1, number of nonzero x_i)``.
    """
    pg_sq = 0.0
    x_sq = 0.0
    x_abs = 0.0
    active = 0
    for i in prange(x.shape[0]):
        xi = x[i]
        gi = g[i]
        if xi > 0.0:
            v = gi + c1
        elif xi < 0.0:
            v = gi - c1
        elif gi + c1 < 0.0:
            v = gi + c1
        elif gi - c1 > 0.0:
            v = gi - c1
        else:
            v = 0.0
        pg[i] = v
        pg_sq += v * v
        x_sq += xi * xi
        x_abs += abs(xi)
        if xi != 0.0:
            active += 1
    return pg_sq, x_sq, x_abs, active


@njit(cache=True, nogil=True, parallel=True, fastmath={"reassoc"})
def direction(pg, S, Y, rho, slots, gamma, c1, d):
    """Fill ``d`` with the L-BFGS direction ``-H pg`` and return ``pg . d``.

    Two-loop recursion over the pairs ``slots`` (oldest first), with the
    initial inverse Hessian ``gamma I``::

        q = -pg;  newest to oldest:  a_i = rho_i s_i.q,  q -= a_i y_i
        q *= gamma;  oldest to newest:  b_i = rho_i y_i.q,  q += (a_i - b_i) s_i

    Each pass also takes the dot product the next step needs. With ``c1 >
    0``, coordinates that do not descend along ``-pg`` are then set to zero
    (``d_i pg_i >= 0``), which keeps OWL-QN in the orthant.
    """
    n = pg.shape[0]
    m = slots.shape[0]
    alphas = np.zeros(m)
    # q = -pg, and the dot with the newest s
    dot = 0.0
    if m:
        s = S[slots[m - 1]]
        for i in prange(n):
            d[i] = -pg[i]
            dot += s[i] * d[i]
    else:
        for i in prange(n):
            d[i] = -pg[i]
    # newest to oldest: q -= a_k y_k, then the dot with the next (older) s; the last
    # pass scales by gamma and takes the dot with the oldest y instead
    for k in range(m - 1, -1, -1):
        a = rho[slots[k]] * dot
        alphas[k] = a
        y = Y[slots[k]]
        dot = 0.0
        if k > 0:
            s = S[slots[k - 1]]
            for i in prange(n):
                d[i] -= a * y[i]
                dot += s[i] * d[i]
        else:
            y0 = Y[slots[0]]
            for i in prange(n):
                d[i] = gamma * (d[i] - a * y[i])
                dot += y0[i] * d[i]
    # oldest to newest: q += (a_k - b_k) s_k, then the dot with the next (newer) y
    for k in range(m):
        coef = alphas[k] - rho[slots[k]] * dot
        s = S[slots[k]]
        dot = 0.0
        if k + 1 < m:
            y = Y[slots[k + 1]]
            for i in prange(n):
                d[i] += coef * s[i]
                dot += y[i] * d[i]
        else:
            for i in prange(n):
                d[i] += coef * s[i]
    # constrain to descent along -pg (OWL-QN), and return pg . d
    descent = 0.0
    for i in prange(n):
        if c1 > 0.0 and d[i] * pg[i] >= 0.0:
            d[i] = 0.0
        descent += pg[i] * d[i]
    return descent


@njit(cache=True, nogil=True, parallel=True, fastmath={"reassoc"})
def trial_point(x, d, step, pg, c1, out):
    """out = x + step d, projected onto x's orthant if ``c1 > 0``.

    Returns ``(pg . (out - x), ||out||_1)``: the line search's expected
    decrease and the L1 term at ``out``.
    """
    dg = 0.0
    l1 = 0.0
    for i in prange(x.shape[0]):
        v = x[i] + step * d[i]
        if c1 > 0.0:
            xi = x[i]
            side = 1.0 if xi > 0.0 else (-1.0 if xi < 0.0 else
                                         (-1.0 if pg[i] > 0.0 else (1.0 if pg[i] < 0.0 else 0.0)))
            if v * side <= 0.0:
                v = 0.0
        out[i] = v
        dg += pg[i] * (v - x[i])
        l1 += abs(v)
    return dg, l1


@njit(cache=True, nogil=True, parallel=True, fastmath={"reassoc"})
def new_pair(x_new, x, g_new, g, s, y):
    """s = x_new - x, y = g_new - g; returns ``(y . s, y . y)``."""
    ys = 0.0
    yy = 0.0
    for i in prange(x.shape[0]):
        si = x_new[i] - x[i]
        yi = g_new[i] - g[i]
        s[i] = si
        y[i] = yi
        ys += yi * si
        yy += yi * yi
    return ys, yy


@njit(cache=True, nogil=True, parallel=True, fastmath={"reassoc"})
def add_l2(theta, c2, gradient):
    """gradient += 2 c2 theta; returns ``c2 ||theta||^2`` (CRFsuite's L2 term)."""
    total = 0.0
    for i in prange(theta.shape[0]):
        total += theta[i] * theta[i]
        gradient[i] += 2.0 * c2 * theta[i]
    return c2 * total


@njit(cache=True, nogil=True, parallel=True, fastmath={"reassoc"})
def add_into(total, part):
    """total += part."""
    for i in prange(total.shape[0]):
        total[i] += part[i]
