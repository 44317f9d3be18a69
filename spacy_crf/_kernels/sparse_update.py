"""Row-sparse optimizer kernels for the hashed weight table (numba only).

A batch touches a few thousand of the table's rows; updating only those rows
makes a step cost O(touched rows) instead of O(table). Adam moments are
updated lazily (the "sparse Adam" of PyTorch and TensorFlow: untouched rows
keep their moments). Parameter averages follow thinc's exponential moving
average exactly: a row left alone from step s+1 to t-1 has constant weights
w, so its average catches up in one go,

    avg <- w + (avg - w) * prod_{i=s+1}^{t-1} d_i,   d_i = min((1+i)/(10+i), 0.9999)

with the product read off a table of cumulative log decays.

An L1 penalty is applied the same lazy way, as a proximal step (soft
thresholding: ``w <- sign(w) max(0, |w| - p)``). Step ``t`` owes every weight
that training has touched a shrink of

    l1 * lr * sqrt(1 - b2^t) / max(sqrt(v) + eps, l1)

the penalty's gradient ``l1 sign(w)`` preconditioned as Adam preconditions
that weight's gradient (by its bias-corrected second moment; SGD: ``l1 * lr``),
``lr`` the optimizer's rate times the layer's scale (not its head start).
The floor ``l1`` keeps the shrink within Adam's own pace, ``lr`` a step, where
the weight's gradient has all but vanished (a fitted feature, a fresh
optimizer's first steps): without it one step could wipe out a trained model.
``v`` stays constant while a row is left alone, so the shrink factors into a
per-row term and a per-step rate. Successive
soft thresholds of one weight add up to a single one of the summed amounts, so
a row left alone from step s+1 to t-1 takes them in one go when it is next
touched (before its own update), from a table of cumulative learning rates
(the cumulative penalty of Tsuruoka et al. 2009). :func:`settle_l1` takes
every row's arrears before the weights themselves predict: they are then
exactly those of the per-step, every-row penalty. An average (above) catches
up with a row's weights as they were after its last update, arrears not
taken, however often it is synced.
"""

import math

import numpy as np
from numba import njit

from .prefetch import prefetch_table_row


@njit(cache=True)
def gather_rows(d_out, picked, scale, slot, rows, grads, n_rows):
    """Add the gradient of ``emissions.gather_sum`` into compact rows.

    ``picked[t, k]`` is the table row feature ``k`` of token ``t`` read
    (``emissions.feature_rows``; -1 where dropped): that row receives
    ``scale * d_out[t]``. ``slot[r]`` is ``r``'s index in ``rows`` / ``grads``
    (-1 if not there yet); new rows are appended after the first ``n_rows``.
    Returns the new number of rows. The caller guarantees room for
    ``picked.size`` new rows.
    """
    n_labels = d_out.shape[1]
    for t in range(picked.shape[0]):
        for k in range(picked.shape[1]):
            r = picked[t, k]
            if r < 0:
                continue  # a dropped feature gets no gradient
            s = slot[r]
            if s < 0:
                s = n_rows
                slot[r] = s
                rows[s] = r
                for j in range(n_labels):
                    grads[s, j] = 0.0
                n_rows += 1
            for j in range(n_labels):
                grads[s, j] += scale * d_out[t, j]
    return n_rows


@njit(cache=True)
def scatter_rows(rows, grads, n_rows, dense):
    """dense[rows[i]] += grads[i] for the first ``n_rows`` rows."""
    for i in range(n_rows):
        for j in range(grads.shape[1]):
            dense[rows[i], j] += grads[i, j]


@njit(cache=True)
def clear_slots(slot, rows, n_rows):
    for i in range(n_rows):
        slot[rows[i]] = -1


@njit(cache=True)
def sq_norm(grads, n_rows):
    total = 0.0
    for i in range(n_rows):
        for j in range(grads.shape[1]):
            total += grads[i, j] * grads[i, j]
    return total


@njit(cache=True)
def catch_up_average(avg, weights, r, synced, cum_log_decay, upto):
    """Bring the average of row ``r`` to the end of step ``upto`` (weights constant since)."""
    s = synced[r]
    if s < upto:
        factor = np.exp(cum_log_decay[upto] - cum_log_decay[s])
        for j in range(weights.shape[1]):
            avg[r, j] = weights[r, j] + (avg[r, j] - weights[r, j]) * factor
        synced[r] = upto


@njit(cache=True)
def penalty_rate(learn_rate, b2, step, use_adam):
    """The per-step factor of the L1 shrink of update ``step`` (module docstring)."""
    if not use_adam:
        return learn_rate
    return learn_rate * np.sqrt(1.0 - b2 ** step)


@njit(cache=True, inline="always")
def soft_threshold(w, amount):
    """``w`` moved ``amount`` (>= 0) towards 0, stopping at 0 (branch-free)."""
    return math.copysign(max(abs(w) - amount, 0.0), w)


@njit(cache=True, inline="always")
def _l1_per_rate(root, l1):
    """A weight's L1 shrink per unit of :func:`penalty_rate` under Adam:
    ``l1`` over the floored ``root = sqrt(v) + eps`` (SGD's is ``l1``)."""
    return l1 / max(root, l1)


@njit(cache=True, inline="always")
def _arrears(w, rates, mom2, mr, j, l1, eps, use_adam):
    """Weight ``w`` (column ``j``) after the L1 shrink of steps whose penalty
    rates sum to ``rates``, its second moment (``mom2[mr, j]``) unchanged over them."""
    per_rate = _l1_per_rate(np.sqrt(mom2[mr, j]) + eps, l1) if use_adam else l1
    return soft_threshold(w, rates * per_rate)


@njit(cache=True)
def _take_arrears(weights, mom2, mr, r, rates, l1, eps, use_adam):
    """Row ``r``'s L1 shrink over steps whose penalty rates sum to ``rates``
    (its second moments, row ``mr`` of ``mom2``, unchanged over those steps)."""
    for j in range(weights.shape[1]):
        weights[r, j] = _arrears(weights[r, j], rates, mom2, mr, j, l1, eps, use_adam)


#: rows between the prefetch of a touched row's weights, moments and average
#: and their update: the rows are scattered over tables of tens of MB
ROWS_AHEAD = 8


@njit(cache=True, inline="always")
def _prefetch_tables(weights, mom1, mom2, moment_row, avg, r, use_adam, use_avg):
    prefetch_table_row(weights, r)
    if use_adam:
        prefetch_table_row(mom1, moment_row[r])
        prefetch_table_row(mom2, moment_row[r])
    if use_avg:
        prefetch_table_row(avg, r)


@njit(cache=True)
def update_rows(weights, mom1, mom2, moment_row, rows, grads, n_rows, step, learn_rate, b1, b2,
                eps, clip_scale, avg, synced, cum_log_decay, use_adam, use_avg,
                l1, cum_rate, l1_synced):
    """One optimizer step on the touched rows.

    Adam (``use_adam``), as thinc's: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
    w -= lr sqrt(1-b2^t)/(1-b1^t) m / (sqrt(v) + eps). Otherwise plain SGD,
    w -= lr g. ``clip_scale`` multiplies the gradient (norm clipping).
    The moments of table row ``r`` are row ``moment_row[r]`` of ``mom1`` /
    ``mom2``, which hold only the rows training has touched.
    With ``use_avg`` the average of every touched row is caught up to step
    ``step - 1``, then takes step ``step``'s decay towards the new weights.
    With ``l1 > 0`` a row first takes the L1 shrink it was owed since the
    step it was last shrunk (``l1_synced[r]``, -1 for a row this run has not
    touched: it owes nothing), then its update and this step's shrink;
    ``cum_rate[t]`` is the sum of :func:`penalty_rate` over steps 1..t.
    """
    fix1 = 1.0 - b1 ** step
    fix2 = 1.0 - b2 ** step
    lr = learn_rate * np.sqrt(fix2) / fix1 if use_adam else learn_rate
    shrink_rate = cum_rate[step] - cum_rate[step - 1]  # (this step's penalty rate)
    decay = min((1.0 + step) / (10.0 + step), 0.9999)
    for i in range(n_rows):
        if i + ROWS_AHEAD < n_rows:
            _prefetch_tables(weights, mom1, mom2, moment_row, avg, rows[i + ROWS_AHEAD], use_adam,
                             use_avg)
        r = rows[i]
        if use_avg:
            catch_up_average(avg, weights, r, synced, cum_log_decay, step - 1)
        mr = moment_row[r] if use_adam else 0
        # the penalty rates of the steps since the row was last shrunk
        owed = cum_rate[step - 1] - cum_rate[l1_synced[r]] if l1 > 0.0 and l1_synced[r] >= 0 else 0.0
        for j in range(weights.shape[1]):
            g = grads[i, j] * clip_scale
            w = weights[r, j]
            if owed > 0.0:  # (with the second moment of those steps: before this update)
                w = _arrears(w, owed, mom2, mr, j, l1, eps, use_adam)
            if use_adam:
                m = b1 * mom1[mr, j] + (1.0 - b1) * g
                v = b2 * mom2[mr, j] + (1.0 - b2) * g * g
                mom1[mr, j] = m
                mom2[mr, j] = v
                root = np.sqrt(v) + eps
                w -= lr * m / root
                if l1 > 0.0:
                    w = soft_threshold(w, shrink_rate * _l1_per_rate(root, l1))
            else:
                w -= lr * g
                w = soft_threshold(w, shrink_rate * l1)
            weights[r, j] = w
            if use_avg:
                avg[r, j] -= (1.0 - decay) * (avg[r, j] - weights[r, j])
        if use_avg:
            synced[r] = step
        if l1 > 0.0:
            l1_synced[r] = step


@njit(cache=True)
def settle_l1(weights, mom2, moment_row, l1_synced, cum_rate, upto, l1, eps, use_adam):
    """Give every row that training has touched the L1 shrink it owes up to
    step ``upto`` (exactly what a per-step penalty on every row would have
    taken: see the module docstring)."""
    for r in range(weights.shape[0]):
        s = l1_synced[r]
        if s < 0 or s >= upto:
            continue
        mr = moment_row[r] if use_adam else 0
        _take_arrears(weights, mom2, mr, r, cum_rate[upto] - cum_rate[s], l1, eps, use_adam)
        l1_synced[r] = upto


@njit(cache=True)
def catch_up_all(avg, weights, synced, cum_log_decay, upto):
    """Bring every row's average to the end of step ``upto``."""
    for r in range(weights.shape[0]):
        catch_up_average(avg, weights, r, synced, cum_log_decay, upto)
