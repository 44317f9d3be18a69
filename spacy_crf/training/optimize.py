"""Minimise CRFsuite's objective with CRFsuite's stopping rule.

CRFsuite's objective is ``-log-likelihood + c1 * ||w||_1 + c2 * ||w||^2``;
the L2 term is part of the objective function, the L1 term is OWL-QN's.
:func:`minimize` runs :func:`~spacy_crf.training.owlqn.owlqn` (plain L-BFGS
when ``c1 = 0``) or, on request and for L2 only, scipy's L-BFGS-B, stops as
liblbfgs does for CRFsuite (:class:`StoppingRule`) or at ``max_iterations``,
and reports every iteration.

Why not scipy's L-BFGS-B by default: its per-iteration work outside the
objective was measured at about 2 s for 6.4 million weights (CoNLL-2000:
289k feature rows x 22 labels; 0.25 s at 0.7 million), ten times the
objective itself, where our kernels make one pass over memory per vector
step. Both find the same optimum (``tests/commands/test_fit.py``: ``test_owlqn_finds_the_soft_thresholded_solution``).
"""

from dataclasses import dataclass, field
from typing import Callable, List, Literal, Optional, Tuple, get_args

import numpy as np

from .owlqn import Function, Iteration, owlqn

# called after every iteration with what it reports and the current point
Report = Callable[[Iteration, np.ndarray], None]

#: CRFsuite's L-BFGS memory (``num_memories``) and line search trials (``max_linesearch``)
MEMORY = 6
MAX_LINESEARCH = 20
#: the optimizers (a Literal, so that the crf-fit command offers them as choices)
Optimizer = Literal["lbfgs", "scipy"]
OPTIMIZERS = get_args(Optimizer)


@dataclass
class StoppingRule:
    """CRFsuite's convergence tests (liblbfgs's ``past``/``delta`` and ``epsilon``).

    After iteration ``k`` with objective ``f_k``, stop if

    * ``k >= period`` and ``(f_{k-period} - f_k) / f_k < delta`` (the relative
      improvement over the last ``period`` iterations; ``f_0`` is the start), or
    * ``||g|| / max(1, ||x||) <= epsilon`` (``g`` the pseudo-gradient under L1).

    Attributes
    ----------
    period : int
        CRFsuite's ``period`` (10); 0 turns the first test off.
    delta : float
        CRFsuite's ``delta`` (1e-5).
    epsilon : float
        CRFsuite's ``epsilon`` (1e-5); 0 turns the second test off.
    """

    period: int = 10
    delta: float = 1e-5
    epsilon: float = 1e-5
    history: List[float] = field(default_factory=list)

    def start(self, f0: float) -> None:
        """Record the objective at the starting point."""
        self.history = [f0]

    def check(self, info: Iteration) -> Optional[str]:
        """Why to stop after the iteration ``info`` reports, or None to go on."""
        f = info.loss
        self.history.append(f)
        if self.epsilon and info.gnorm / max(1.0, info.xnorm) <= self.epsilon:
            return f"converged: |g| / max(1, |x|) <= epsilon ({self.epsilon:g})"
        if self.period and info.k >= self.period and len(self.history) > self.period:
            past = self.history[-1 - self.period]
            if f == 0 or (past - f) / f < self.delta:
                return (f"converged: improvement over the last {self.period} iterations "
                        f"below delta ({self.delta:g})")
        return None


def minimize(fun: Function, x0: np.ndarray, *, c1: float = 0.0, max_iterations: int = 100,
             rule: Optional[StoppingRule] = None, report: Optional[Report] = None,
             optimizer: str = "lbfgs") -> Tuple[np.ndarray, int, str]:
    """Minimise ``f(x) + c1 * ||x||_1``.

    Parameters
    ----------
    fun : callable
        ``(x, out) -> (f(x), gradient)`` (the L2 term included), the gradient
        written into ``out`` when it is not None.
    x0 : numpy.ndarray
        Starting point.
    c1 : float
        L1 coefficient (CRFsuite's ``c1``).
    max_iterations : int
        Iterations at most.
    rule : StoppingRule, optional
        Convergence tests (default: CRFsuite's).
    report : callable, optional
        Called after every iteration with an
        :class:`~spacy_crf.training.owlqn.Iteration` and the current point.
    optimizer : str
        ``lbfgs`` (ours: L-BFGS, OWL-QN if ``c1 > 0``) or ``scipy``
        (L-BFGS-B; ``c1 = 0`` only).

    Returns
    -------
    x : numpy.ndarray
        The last iterate.
    n_iterations : int
    message : str
        Why it stopped.
    """
    if optimizer not in OPTIMIZERS or (optimizer == "scipy" and c1 > 0):
        raise ValueError(f"optimizer must be one of {OPTIMIZERS} ('scipy' with c1 = 0 only), "
                         f"got {optimizer!r} with c1 = {c1}")
    rule = rule or StoppingRule()
    rule.history = []
    stopped: List[str] = []

    def monitor(info: Iteration, x: np.ndarray) -> bool:
        if report is not None:
            report(info, x)
        reason = rule.check(info)
        if reason:
            stopped.append(reason)
        return bool(reason)

    if optimizer == "scipy":
        x, n_iterations, message = _lbfgsb(fun, x0, max_iterations, rule, monitor)
        return x, n_iterations, (stopped or [message])[0]

    def recorded(x: np.ndarray, out: np.ndarray) -> Tuple[float, np.ndarray]:
        f, g = fun(x, out)
        if not rule.history:
            rule.start(f + c1 * float(np.abs(x).sum()))
        return f, g

    result = owlqn(recorded, x0, c1, memory=MEMORY, max_iterations=max_iterations,
                   max_linesearch=MAX_LINESEARCH, monitor=monitor)
    return result.x, result.n_iterations, (stopped or [result.message])[0]


def _lbfgsb(fun: Function, x0: np.ndarray, max_iterations: int, rule: StoppingRule,
            monitor: Callable[[Iteration, np.ndarray], bool]) -> Tuple[np.ndarray, int, str]:
    """scipy's L-BFGS-B with its own tests off (ours decide, in the callback)."""
    try:  # optional: our own L-BFGS is the default and needs no scipy
        from scipy.optimize import minimize as scipy_minimize
    except ImportError as err:
        raise ImportError("optimizer='scipy' needs scipy: pip install scipy "
                          "(or use the default optimizer='lbfgs')") from err
    last = {"f": None, "g": None}
    n_iterations = 0

    def evaluate(x: np.ndarray) -> Tuple[float, np.ndarray]:
        f, g = fun(x, None)
        if not rule.history:
            rule.start(f)
        last["f"], last["g"] = f, g
        return f, g

    def callback(intermediate_result) -> None:
        nonlocal n_iterations
        n_iterations += 1
        x, f = intermediate_result.x, float(intermediate_result.fun)
        # the accepted point is the last one evaluated; its gradient is at hand
        g = last["g"] if last["f"] == f else fun(x, None)[1]
        info = Iteration(n_iterations, f, float(np.linalg.norm(g)), float(np.linalg.norm(x)),
                         int(np.count_nonzero(x)))
        if monitor(info, x):
            raise StopIteration

    result = scipy_minimize(
        evaluate, np.asarray(x0, dtype=np.float64), jac=True, method="L-BFGS-B",
        callback=callback,
        options={"maxiter": max_iterations, "maxcor": MEMORY, "maxls": MAX_LINESEARCH,
                 "ftol": 0.0, "gtol": 0.0,
                 "maxfun": max(1, max_iterations) * (MAX_LINESEARCH + 1)})
    return result.x, n_iterations, str(result.message)
