"""The figures: label-interaction heatmaps, the confusion matrix, the learning curve.

matplotlib is an optional dependency (the ``plots`` extra): importing this
module without it raises an error that names the extra.
"""

from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import numpy as np

from ..errors import Errors

try:
    import matplotlib
except ImportError as err:  # the plots extra is not installed
    raise ImportError(Errors.E067) from err

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402

from ..models.pooled_experts import WEIGHTS, pool_weights_node, weighted_sum  # noqa: E402
from ..models.potentials import potentials_of  # noqa: E402
from ..pipeline.crf_tagger import CRFTagger  # noqa: E402


def potentials_params(component: CRFTagger) -> Dict[str, np.ndarray]:
    """The label-interaction parameters the component decodes with: those of its
    potentials layer, or for a pool of experts (NeuralCRF.v2) the weighted sum
    of its experts' (the pool's own)."""
    pool = pool_weights_node(component.model)
    if pool is None:
        return _layer_params(potentials_of(component.model))
    experts = [_layer_params(potentials_of(expert)) for expert in pool.layers]
    return {name: weighted_sum([params[name] for params in experts], pool.attrs[WEIGHTS])
            for name in experts[0]}


def _layer_params(node) -> Dict[str, np.ndarray]:
    return {name: np.asarray(node.get_param(name))
            for name in ("transitions", "start", "end", "pair", "root") if node.has_param(name)}


def _heatmap(ax, matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str],
             cmap: str, annotate: bool, fmt: str, skip_zero: bool = False, **kwargs):
    masked = np.ma.masked_invalid(matrix)
    image = ax.imshow(masked, cmap=cmap, aspect="auto", **kwargs)
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels(cols, rotation=90, fontsize=7)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize=7)
    if annotate:
        finite = matrix[np.isfinite(matrix)]
        mid = (finite.max() + finite.min()) / 2 if finite.size else 0
        for i in range(matrix.shape[0]):
            for j in range(matrix.shape[1]):
                if np.isfinite(matrix[i, j]) and not (skip_zero and matrix[i, j] == 0):
                    ax.text(j, i, format(matrix[i, j], fmt), ha="center", va="center",
                            fontsize=5, color="white" if matrix[i, j] < mid else "black")
    return image


def _figsize(n_rows: int, n_cols: int) -> Tuple[float, float]:
    return (max(5.0, 1.5 + 0.32 * n_cols), max(4.0, 1.2 + 0.3 * n_rows))


def relation_group_names(component: CRFTagger) -> List[str]:
    """The name of each pair matrix of a tree model: matrix 0 is shared by the
    relations without one of their own, matrix k belongs to ``cfg["relations"][k-1]``."""
    own = list(component.cfg.get("relations") or [])
    return ["other relations" if own else "all relations", *own]


def plot_transitions(component: CRFTagger, path: Path) -> str:
    """The label-interaction scores, drawn as the component's structure keeps them."""
    return INTERACTION_PLOTS[component.cfg["structure"]](component, path)


def plot_chain_transitions(component: CRFTagger, path: Path) -> str:
    """Chain models: transitions with the start scores as a row and the end scores
    as a column."""
    labels = list(component.labels)
    params = potentials_params(component)
    L = len(labels)
    matrix = np.full((L + 1, L + 1), np.nan)
    matrix[0, :L] = params["start"]
    matrix[1:, :L] = params["transitions"]
    matrix[1:, L] = params["end"]
    fig, ax = plt.subplots(figsize=_figsize(*matrix.shape))
    image = _heatmap(ax, matrix, ["START"] + labels, labels + ["END"], "RdBu_r",
                     annotate=max(matrix.shape) <= 25, fmt=".1f", **_symmetric(matrix))
    ax.set_xlabel("next label")
    ax.set_ylabel("previous label")
    ax.set_title("Transition scores (previous -> next), start row, end column", fontsize=9)
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"transition matrix (chain), {matrix.shape[0]}x{matrix.shape[1]}"


def _symmetric(matrix: np.ndarray) -> Dict[str, float]:
    """A colour range centred on 0, so that red / blue mean favoured / disfavoured."""
    finite = matrix[np.isfinite(matrix)]
    bound = float(np.abs(finite).max()) if finite.size else 1.0
    return {"vmin": -(bound or 1.0), "vmax": bound or 1.0}


def plot_pair_matrices(component: CRFTagger, path: Path) -> str:
    """Tree models: one panel per relation group (child label x head label), the
    root scores as the first panel's last column, one colour scale for all."""
    labels = list(component.labels)
    params = potentials_params(component)
    pair, L = params["pair"], len(labels)
    names = relation_group_names(component)
    panels = []
    for g in range(pair.shape[0]):
        matrix = np.full((L, L + 1), np.nan)
        matrix[:, :L] = pair[g]
        if g == 0:
            matrix[:, L] = params["root"]
        panels.append(matrix)
    scale = _symmetric(np.stack(panels))
    n_cols = min(2, len(panels))
    n_rows = -(-len(panels) // n_cols)
    width, height = _figsize(L, L + 1)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(width * n_cols, 0.8 * height * n_rows),
                             squeeze=False, layout="constrained")
    image = None
    for g, matrix in enumerate(panels):
        ax = axes[g // n_cols][g % n_cols]
        image = _heatmap(ax, matrix, labels, labels + ["ROOT"], "RdBu_r",
                         annotate=L <= 25, fmt=".1f", **scale)
        ax.set_title(f"{names[g] if g < len(names) else g}" + (" (+ root scores)" if g == 0 else ""),
                     fontsize=9)
        ax.set_xlabel("head label")
        ax.set_ylabel("child label")
    for g in range(len(panels), n_rows * n_cols):
        axes[g // n_cols][g % n_cols].axis("off")
    fig.suptitle("Child-head pair scores per relation group", fontsize=10)
    fig.colorbar(image, ax=axes, shrink=0.6)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return f"pair matrices (tree), {len(panels)} relation groups of {L}x{L} + root"


def confusion_matrix(gold: List[np.ndarray], pred: List[np.ndarray],
                     n_labels: int) -> Tuple[np.ndarray, int]:
    """Counts[gold, pred] over tokens with a known gold label, and the number skipped."""
    g = np.concatenate(gold) if gold else np.zeros(0, dtype=np.int64)
    p = np.concatenate(pred) if pred else np.zeros(0, dtype=np.int64)
    known = g >= 0
    # a predicted id of -1 cannot happen for the component's own labels; guard anyway
    ok = known & (p >= 0)
    counts = np.zeros((n_labels, n_labels), dtype=np.int64)
    np.add.at(counts, (g[ok], p[ok]), 1)
    return counts, int((~known).sum())


def plot_confusion(labels: Sequence[str], counts: np.ndarray, path: Path) -> str:
    totals = counts.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        normed = np.where(totals > 0, counts / np.maximum(totals, 1), np.nan)
    fig, ax = plt.subplots(figsize=_figsize(len(labels), len(labels)))
    image = _heatmap(ax, normed, list(labels), list(labels), "Blues",
                     annotate=len(labels) <= 25, fmt=".2f", skip_zero=True, vmin=0.0, vmax=1.0)
    n = int(counts.sum())
    acc = float(np.trace(counts)) / n if n else float("nan")
    ax.set_xlabel("predicted label")
    ax.set_ylabel("gold label")
    ax.set_title(f"Confusion (row-normalised), {n} tokens, accuracy {acc:.4f}", fontsize=9)
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"{len(labels)} labels, {n} tokens, accuracy {acc:.4f}"


def plot_learning_curve(columns: List[str], rows: List[List[float]], path: Path) -> str:
    data = np.asarray(rows, dtype=float)
    step = data[:, columns.index("#")]
    loss_cols = [i for i, c in enumerate(columns) if c.upper().startswith("LOSS")]
    score_cols = [i for i, c in enumerate(columns)
                  if i not in loss_cols and c not in ("E", "#", "SCORE")]
    fig, (ax, ax_loss) = plt.subplots(2, 1, figsize=(7, 6), sharex=True,
                                      gridspec_kw={"height_ratios": [2, 1]})
    if "SCORE" in columns:
        ax.plot(step, 100 * data[:, columns.index("SCORE")], "k-o", markersize=3,
                label="SCORE (x100)", linewidth=2)
    for i in score_cols:
        ax.plot(step, data[:, i], "-", marker=".", label=columns[i])
    ax.set_ylabel("dev score (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("Learning curve (spacy train console log)", fontsize=9)
    for i in loss_cols:
        ax_loss.plot(step, data[:, i], "-", marker=".", label=columns[i])
    ax_loss.set_xlabel("training step")
    ax_loss.set_ylabel("loss")
    ax_loss.grid(alpha=0.3)
    if loss_cols:
        ax_loss.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    last = data[-1]
    best = ""
    if "SCORE" in columns:
        s = data[:, columns.index("SCORE")]
        best = f", best SCORE {s.max():.2f} at step {int(step[s.argmax()])}"
    return f"{len(rows)} evaluations, steps {int(step[0])}..{int(last[columns.index('#')])}{best}"


#: structure name -> the drawing of its label-interaction scores
INTERACTION_PLOTS = {"chain": plot_chain_transitions, "tree": plot_pair_matrices}
