"""OWL-QN: limited-memory quasi-Newton for an objective with an L1 term.

Minimises ``F(x) = f(x) + c1 * ||x||_1`` for a smooth convex ``f`` given with
its gradient (Andrew & Gao, "Scalable training of L1-regularized log-linear
models", ICML 2007), as liblbfgs (CRFsuite's optimizer) does:

* the *pseudo-gradient* ``pg`` (the subgradient of least norm) replaces the
  gradient wherever one is needed;
* the L-BFGS two-loop recursion, over pairs ``s = x' - x``, ``y = f'(x') -
  f'(x)`` of the smooth part, turns ``-pg`` into a direction, whose
  coordinates that do not descend along ``-pg`` are set to zero;
* every trial point of the line search is projected onto the orthant of the
  current point (``sign(x_i)``, or ``sign(-pg_i)`` where ``x_i = 0``):
  coordinates that would cross zero stop at exactly zero, which is what makes
  the solution sparse;
* a backtracking line search halves the step (the first is ``1 / ||d||``,
  later ones 1) until ``F(x') <= F(x) + ftol * pg . (x' - x)``.

With ``c1 = 0`` nothing is projected and ``pg`` is the gradient: this is
plain L-BFGS with a backtracking line search, the batch trainer's optimizer
for L2 as well. The vector work is in ``spacy_crf._kernels.lbfgs`` (one pass
over memory per step: the vectors hold millions of weights).
"""

from dataclasses import dataclass
from typing import Callable, NamedTuple, Optional, Tuple

import numpy as np

from .._kernels import lbfgs as kernels

# fun(x, out) -> (f(x), gradient): fills ``out`` with f'(x) (or returns another array)
Function = Callable[[np.ndarray, np.ndarray], Tuple[float, np.ndarray]]


class Iteration(NamedTuple):
    """What an iteration reports: its number (from 1), ``F(x)``, ``||pg||``,
    ``||x||`` and the number of nonzero weights."""

    k: int
    loss: float
    gnorm: float
    xnorm: float
    active: int


# (iteration, x) -> True to stop
Monitor = Callable[[Iteration, np.ndarray], bool]


@dataclass
class OWLQNResult:
    """Where OWL-QN stopped.

    Attributes
    ----------
    x : numpy.ndarray
        The last accepted point.
    fun : float
        ``F(x)``, L1 term included.
    n_iterations : int
    n_evaluations : int
        Calls of ``fun``.
    message : str
        Why it stopped.
    """

    x: np.ndarray
    fun: float
    n_iterations: int
    n_evaluations: int
    message: str


def owlqn(fun: Function, x0: np.ndarray, c1: float = 0.0, *, memory: int = 6,
          max_iterations: int = 100, max_linesearch: int = 20, ftol: float = 1e-4,
          monitor: Optional[Monitor] = None) -> OWLQNResult:
    """Minimise ``f(x) + c1 * ||x||_1``.

    Parameters
    ----------
    fun : callable
        ``(x, out) -> (f(x), gradient)``: the smooth part and its gradient,
        written into ``out`` (float64, same shape as ``x``) or returned.
    x0 : numpy.ndarray
        Starting point (not modified).
    c1 : float
        L1 coefficient, at least 0.
    memory : int
        Correction pairs kept (CRFsuite's ``num_memories``, 6).
    max_iterations : int
        Iterations at most.
    max_linesearch : int
        Trial steps per line search at most.
    ftol : float
        Sufficient-decrease constant of the line search.
    monitor : callable, optional
        Called after every iteration with an :class:`Iteration` and ``x``;
        returning True stops.

    Returns
    -------
    OWLQNResult
    """
    if not c1 >= 0:
        raise ValueError(f"c1 must be at least 0, got {c1}")
    n = int(np.size(x0))
    x = np.array(x0, dtype=np.float64, copy=True).reshape(n)
    x_new = np.empty(n)
    g = np.empty(n)
    g_new = np.empty(n)
    pg = np.empty(n) if c1 > 0 else g
    # the pairs and the direction in float32 (see _kernels/lbfgs.py)
    d = np.empty(n, dtype=np.float32)
    S = np.empty((memory, n), dtype=np.float32)
    Y = np.empty((memory, n), dtype=np.float32)
    rho = np.zeros(memory)
    n_pairs, newest, gamma = 0, -1, 1.0

    def evaluate(point: np.ndarray, out: np.ndarray) -> float:
        f, grad = fun(point, out)
        if grad is not out:
            out[...] = grad
        return float(f)

    f = evaluate(x, g)
    n_evaluations = 1
    _, _, l1, _ = kernels.pseudo_gradient(x, g, c1, pg)
    F = f + c1 * l1
    k = 0
    message = "reached max_iterations"
    while k < max_iterations:
        slots = (np.arange(newest - n_pairs + 1, newest + 1) % memory).astype(np.int64)
        descent = kernels.direction(pg, S, Y, rho, slots, gamma, c1, d)
        if not descent < 0:
            message = "converged: no descent direction"
            break
        # without curvature pairs d is -pg, unscaled: start at a unit-length step
        step = 1.0 / float(np.linalg.norm(d)) if n_pairs == 0 else 1.0
        for _ in range(max_linesearch):
            # x' = x + step d (projected onto x's orthant under L1)
            expected, l1_new = kernels.trial_point(x, d, step, pg, c1, x_new)
            f_new = evaluate(x_new, g_new)
            n_evaluations += 1
            F_new = f_new + c1 * l1_new
            if F_new <= F + ftol * expected:
                break
            step *= 0.5
        else:
            message = "line search failed: stopped at the last accepted point"
            break
        k += 1
        newest = (newest + 1) % memory
        ys, yy = kernels.new_pair(x_new, x, g_new, g, S[newest], Y[newest])
        if ys > 0:
            rho[newest] = 1.0 / ys
            gamma = ys / yy
            n_pairs = min(n_pairs + 1, memory)
        else:
            # y.s <= 0 would break positive-definiteness: drop the pair
            newest = (newest - 1) % memory
        x, x_new = x_new, x
        g, g_new = g_new, g
        if c1 == 0:
            pg = g
        F = F_new
        pg_sq, x_sq, _, active = kernels.pseudo_gradient(x, g, c1, pg)
        info = Iteration(k, F, float(np.sqrt(pg_sq)), float(np.sqrt(x_sq)), int(active))
        if monitor is not None and monitor(info, x):
            message = "stopped by the monitor"
            break
    return OWLQNResult(x, F, k, n_evaluations, message)
