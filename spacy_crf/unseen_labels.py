"""Labels a grown model has not learned yet: never predicted until seen in gold.

``add_label`` on a trained component gives the model zero weights for the new
label (``models/grow.py``). A zero score would beat the learned negative
scores of the old labels at some tokens, so until an update has the label in
its gold, every score of it (emissions, moves into and out of it, segments)
is ``-inf``: the kernels then decode, and compute marginals, exactly as the
model did before it grew. An extra label that no path can take adds nothing
to any max or sum, and the scaled passes' shifts (the largest finite
transition) stay those of the old labels.
"""

from typing import Sequence

import numpy as np

from .models.potentials import CRFScores, label_axes


def mask_labels(scores: CRFScores, label_ids: Sequence[int], n_labels: int) -> CRFScores:
    """``scores`` with ``-inf`` emissions for ``label_ids`` (a copy; as it is if none).

    Every block of ``n_labels`` emission columns is masked (the chain_tree
    structure's two experts each have one), and so is every expert of a pool.
    """
    if not len(label_ids):
        return scores
    ids = np.asarray(label_ids, dtype=np.int64)
    emissions = np.array(scores.emissions, copy=True)
    blocks = emissions.shape[1] // n_labels
    emissions[:, (ids[None, :] + n_labels * np.arange(blocks)[:, None]).ravel()] = -np.inf
    masked = {"emissions": emissions}
    # every other score along its label axes, as the owner of its name
    # registered them (relation groups, segment lengths, rows are left alone)
    for name, value in scores.named().items():
        value = np.array(value, copy=True)
        for axis in label_axes(name):
            index = [slice(None)] * value.ndim
            index[axis] = ids
            value[tuple(index)] = -np.inf
        masked[name] = value
    experts = (None if scores.experts is None
               else tuple(mask_labels(expert, label_ids, n_labels) for expert in scores.experts))
    return scores.replace(experts=experts, **masked)


def seen_in(gold: np.ndarray, waiting: Sequence[str], labels: Sequence[str]) -> list:
    """The labels of ``waiting`` that ``gold`` (label ids, -1 unknown) has."""
    if not len(waiting):
        return []
    present = set(np.unique(gold[gold >= 0]).tolist())
    return [label for label in waiting if labels.index(label) in present]
