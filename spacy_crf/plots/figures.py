"""The figures: label-interaction heatmaps, the confusion matrix, the learning
curve, and for span targets the entity-level confusion and span confidence.

matplotlib is an optional dependency (the ``plots`` extra): importing this
module without it raises an error that names the extra.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ..errors import Errors

try:
    import matplotlib
except ImportError as err:  # the plots extra is not installed
    raise ImportError(Errors.E067) from err

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402

from ..models.part_transitions import composed_transitions, factors_transitions  # noqa: E402
from ..models.pooled_experts import WEIGHTS, pool_weights_node, weighted_sum  # noqa: E402
from ..models.potentials import CRFScores, potentials_of  # noqa: E402
from ..pipeline.crf_tagger import CRFTagger  # noqa: E402
from .entities import (MISSED, SPURIOUS, expected_calibration_error,  # noqa: E402
                       reliability_bins, span_scores)


def potentials_params(component: CRFTagger) -> Dict[str, np.ndarray]:
    """The label-interaction parameters the component decodes with: those of its
    potentials layer, or for a pool of experts (NeuralCRF.v3) the weighted sum
    of its experts' (the pool's own)."""
    pool = pool_weights_node(component.model)
    if pool is None:
        return _layer_params(potentials_of(component.model))
    experts = [_layer_params(potentials_of(expert)) for expert in pool.layers]
    return {name: weighted_sum([params[name] for params in experts], pool.attrs[WEIGHTS])
            for name in experts[0]}


def _layer_params(node) -> Dict[str, np.ndarray]:
    params = {name: np.asarray(node.get_param(name))
              for name in ("transitions", "start", "end", "triples", "pair", "root")
              if node.has_param(name)}
    if "transitions" in params and factors_transitions(node):  # the label pairs' as decoded
        params["transitions"] = composed_transitions(node, params["transitions"])
    return params


def decoded_moves(component: CRFTagger) -> Dict[str, np.ndarray]:
    """:func:`potentials_params` of a chain as the decoder reads them: a move it
    never takes is NaN (drawn blank, not as a score of 0): one the target's
    scheme forbids (I-X after O), and for order 2 a label pair that initialize
    did not keep (``cfg["label_pairs"]``), in ``transitions``, ``start`` and
    ``triples`` (``[a, b, c]``, ``a = L`` the start: blank where ``(a, b)`` or
    ``(b, c)`` is not kept)."""
    params = potentials_params(component)
    L = len(component.tags)
    empty = CRFScores(np.zeros((0, L), dtype=np.float32),
                      {name: params[name] for name in ("transitions", "start", "end")})
    params.update(component.constrain_target(empty).params)
    pairs = component.cfg.get("label_pairs")
    if pairs is not None:  # order 2: (previous, label) pairs, previous -1 for the start
        kept = np.zeros((L + 1, L), dtype=bool)
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        kept[pairs[:, 0], pairs[:, 1]] = True  # (-1: row L, the start)
        params["transitions"] = np.where(kept[:L], params["transitions"], -np.inf)
        params["start"] = np.where(kept[L], params["start"], -np.inf)
        if "triples" in params:
            params["triples"] = np.where(kept[:, :, None] & kept[None, :L, :],
                                         params["triples"], -np.inf)
    return {name: np.where(np.isneginf(value), np.nan, value) for name, value in params.items()}


def label_names(component: CRFTagger) -> List[str]:
    """The component's labels as figures name them (a lemma tree as its rule,
    ``Target.label_names``)."""
    return component.target.label_names(component.tags)


def drawn_weight(matrix: np.ndarray, axis: int) -> np.ndarray:
    """The largest absolute score of each row (``axis=1``) or column (``axis=0``),
    blank cells left out (0 where all are blank)."""
    return np.abs(np.nan_to_num(matrix, nan=0.0)).max(axis=axis)


#: cell numbers smaller than this (points) are unreadable: colour alone then
MIN_CELL_FONT = 6.5
MAX_CELL_FONT = 10.0
#: the width of a digit in DejaVu Sans (matplotlib's default font), in ems
DIGIT_EM = 0.64
TICK_FONT = 8
#: a slim colourbar: matplotlib's default (15% of the axes) is inches wide on a big matrix
COLOURBAR_FRACTION = 0.05


def _heatmap(ax, matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str],
             cmap: str, **kwargs):
    """The matrix as coloured cells (NaN cells blank), every row and column
    labelled; the cell numbers come later, from :func:`annotate_cells`, once
    the layout fixes the cell size."""
    masked = np.ma.masked_invalid(matrix)
    image = ax.imshow(masked, cmap=cmap, aspect="auto", **kwargs)
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels(cols, rotation=90, fontsize=TICK_FONT)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize=TICK_FONT)
    return image


#: up to this many columns a heatmap's cells are made wide enough for a number
NUMBERED_COLUMNS = 30


#: at most this many labels are drawn in a matrix: a figure grows with the
#: square of its labels (321 morphology labels were a 138-megapixel PNG and
#: 6.2 GB while drawn), and cells past this size carry colour alone
MAX_DRAWN_LABELS = 60


def most_weighty(weight: np.ndarray, k: int = MAX_DRAWN_LABELS) -> np.ndarray:
    """The positions of the ``k`` largest of ``weight``, in their own order
    (all of them where there are no more than ``k``)."""
    if len(weight) <= k:
        return np.arange(len(weight))
    return np.sort(np.argsort(-np.nan_to_num(weight, nan=0.0), kind="stable")[:k])


def _figsize(n_rows: int, n_cols: int) -> Tuple[float, float]:
    # 0.45 in (32 pt) holds a 4-character number at 8-9 pt; wider matrices get
    # colour alone, in narrower cells that still hold a tick label each
    per_col = 0.45 if n_cols <= NUMBERED_COLUMNS else 0.3
    return (max(5.0, 1.5 + per_col * n_cols), max(4.0, 1.2 + 0.3 * n_rows))


def short_number(x: float) -> str:
    """At most 3 significant digits: ``-14``, ``3.2``, ``0.4``. A cell shows
    the size of a score at a glance; the colourbar and the model hold the rest."""
    text = f"{x:.0f}" if abs(x) >= 9.95 else f"{x:.1f}"
    return "0.0" if text == "-0.0" else text  # a sign on nothing reads as a score


def _format(x: float, fmt: Union[str, Callable[[float], str]]) -> str:
    return fmt(x) if callable(fmt) else format(x, fmt)


def relative_luminance(rgba: Sequence[float]) -> float:
    """WCAG relative luminance of an sRGB colour (0 black .. 1 white)."""
    rgb = np.asarray(rgba[:3], dtype=float)
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return float(linear @ np.array([0.2126, 0.7152, 0.0722]))


def text_colour(rgba: Sequence[float]) -> str:
    """Black or white, whichever contrasts more with the cell colour: above a
    luminance of 0.179 black has the higher WCAG contrast ratio."""
    return "black" if relative_luminance(rgba) > 0.179 else "white"


def cell_font_size(fig, ax, shape: Tuple[int, int], n_chars: int) -> Optional[float]:
    """The font size (points) at which ``n_chars`` digits fit in a cell of the
    drawn axes, or None where that would be below :data:`MIN_CELL_FONT`."""
    fig.canvas.draw()  # runs the layout: the axes' final size
    box = ax.get_window_extent()
    to_points = 72.0 / fig.dpi
    cell_w = box.width * to_points / max(shape[1], 1)
    cell_h = box.height * to_points / max(shape[0], 1)
    # a margin of 15% each side across, a line height of ~1.2 em down
    size = min(MAX_CELL_FONT, 0.7 * cell_w / (DIGIT_EM * max(n_chars, 1)), cell_h / 1.6)
    return size if size >= MIN_CELL_FONT else None


def cell_texts(matrix: np.ndarray, fmt: Union[str, Callable[[float], str]], skip_zero: bool = False,
               values: Optional[np.ndarray] = None) -> List[Tuple[int, int, str]]:
    """``(row, column, text)`` of every cell that gets a number: the finite
    cells of ``matrix``, less the zeros with ``skip_zero``; the text formats
    ``values`` (default: ``matrix``)."""
    values = matrix if values is None else values
    return [(i, j, _format(values[i, j], fmt))
            for i in range(matrix.shape[0]) for j in range(matrix.shape[1])
            if np.isfinite(matrix[i, j]) and not (skip_zero and values[i, j] == 0)]


def write_cells(ax, image, matrix: np.ndarray, cells: List[Tuple[int, int, str]],
                size: float) -> None:
    """The cell numbers, dark on pale cells and white on dark ones."""
    for i, j, text in cells:
        colour = text_colour(image.cmap(image.norm(matrix[i, j])))
        ax.text(j, i, text, ha="center", va="center", fontsize=size, color=colour)


def annotate_cells(fig, ax, image, matrix: np.ndarray, fmt: Union[str, Callable[[float], str]],
                   skip_zero: bool = False,
                   values: Optional[np.ndarray] = None) -> Optional[float]:
    """Write each cell's number where it fits (the colour and the colourbar
    carry the value elsewhere), dark on pale cells and white on dark ones.

    Call it once the figure's layout is set (the cell size decides the font).

    Parameters
    ----------
    matrix : np.ndarray
        The values the cells are coloured by (NaN: blank, no number).
    fmt : str or callable
        ``format`` spec of the numbers, or a function of the number.
    skip_zero : bool
        Leave cells whose number is 0 blank (a sparse confusion matrix).
    values : np.ndarray, optional
        The numbers to write, if not ``matrix`` (e.g. counts on cells coloured
        by share).

    Returns
    -------
    float or None
        The font size used; None where the numbers would not fit (none written).
    """
    cells = cell_texts(matrix, fmt, skip_zero, values)
    if not cells:
        return None
    size = cell_font_size(fig, ax, matrix.shape, max(len(text) for _, _, text in cells))
    if size is not None:
        write_cells(ax, image, matrix, cells, size)
    return size


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
    fig, matrix = chain_transitions_figure(component)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"transition matrix (chain), {matrix.shape[0]}x{matrix.shape[1]}"


def chain_transitions_figure(component: CRFTagger):
    """The figure of :func:`plot_chain_transitions` and the matrix it draws
    (the moves the decoder never takes blank: :func:`decoded_moves`)."""
    params = decoded_moves(component)
    transitions = params["transitions"]
    # past MAX_DRAWN_LABELS, the labels whose moves score most
    keep = most_weighty(drawn_weight(transitions, 0) + drawn_weight(transitions, 1))
    names = label_names(component)
    labels = [names[i] for i in keep]
    L = len(labels)
    matrix = np.full((L + 1, L + 1), np.nan)
    matrix[0, :L] = params["start"][keep]
    matrix[1:, :L] = transitions[np.ix_(keep, keep)]
    matrix[1:, L] = params["end"][keep]
    some = (f" of the {L} labels whose moves score most, of {len(component.tags)}"
            if L < len(component.tags) else "")
    never = " (blank: never taken)" if np.isnan(matrix[:, :L][1:]).any() else ""
    title = f"Transition scores (previous -> next), start row, end column{some}{never}"
    fig = score_figure(matrix, ["START"] + labels, labels + ["END"], "previous label", title)
    return fig, matrix


def score_figure(matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str],
                 row_title: str, title: str):
    """A heatmap of label-interaction scores (a column per next label), red
    favoured and blue disfavoured, each cell's number where it fits."""
    fig, ax = plt.subplots(figsize=_figsize(*matrix.shape))
    image = _heatmap(ax, matrix, rows, cols, "RdBu_r", **_symmetric(matrix))
    ax.set_xlabel("next label")
    ax.set_ylabel(row_title)
    ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, fraction=COLOURBAR_FRACTION)
    fig.tight_layout()
    annotate_cells(fig, ax, image, matrix, short_number)
    return fig


def has_second_order(component: CRFTagger) -> bool:
    """Whether the component's chain scores label triples (order 2)."""
    return "triples" in potentials_params(component)


def plot_second_order(component: CRFTagger, path: Path) -> str:
    """Order-2 chains: the triple scores, a row per kept label pair."""
    fig, matrix = second_order_figure(component)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"second-order scores (order-2 chain), {matrix.shape[0]} label pairs x {matrix.shape[1]}"


def second_order_figure(component: CRFTagger):
    """The figure of :func:`plot_second_order` and the matrix it draws: a row
    per label pair ``(a, b)`` the chain keeps (``a`` START for a first label), a
    column per next label ``c``, the cell ``triples[a, b, c]``, which the
    decoder adds to the transition ``b -> c``; blank where it never takes
    ``b -> c`` after ``a``. Past :data:`MAX_DRAWN_LABELS` rows or columns, the
    weightiest."""
    triples = decoded_moves(component)["triples"]
    tags = ["START", *label_names(component)]  # row a = L is the start
    L = len(component.tags)
    prev, label = np.nonzero(~np.isnan(triples).all(axis=2))
    in_order = np.lexsort((label, (prev + 1) % (L + 1)))  # the START rows first
    prev, label = prev[in_order], label[in_order]
    rows = triples[prev, label]
    keep_rows = most_weighty(drawn_weight(rows, 1))
    keep_cols = most_weighty(drawn_weight(rows[keep_rows], 0))
    matrix = rows[np.ix_(keep_rows, keep_cols)]
    names = [f"{tags[(a + 1) % (L + 1)]} {tags[b + 1]}"
             for a, b in zip(prev[keep_rows], label[keep_rows])]
    cols = [tags[c + 1] for c in keep_cols]
    some = (f" ({len(keep_rows)} of {len(rows)} pairs, {len(cols)} of {L} labels: the weightiest)"
            if len(keep_rows) < len(rows) or len(cols) < L else "")
    title = f"Second-order scores, added to the transition into the next label{some}"
    return score_figure(matrix, names, cols, "the two labels before it", title), matrix


def _symmetric(matrix: np.ndarray) -> Dict[str, float]:
    """A colour range centred on 0, so that red / blue mean favoured / disfavoured."""
    finite = matrix[np.isfinite(matrix)]
    bound = float(np.abs(finite).max()) if finite.size else 1.0
    return {"vmin": -(bound or 1.0), "vmax": bound or 1.0}


def plot_pair_matrices(component: CRFTagger, path: Path) -> str:
    """Tree models: one panel per relation group (child label x head label), the
    root scores as the first panel's last column, one colour scale for all."""
    fig, panels = pair_matrices_figure(component)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    L = panels[0].shape[0]
    return f"pair matrices (tree), {len(panels)} relation groups of {L}x{L} + root"


def pair_matrices_figure(component: CRFTagger):
    """The figure of :func:`plot_pair_matrices` and the panel matrices it draws."""
    params = potentials_params(component)
    # past MAX_DRAWN_LABELS, the labels whose pair scores are largest
    keep = most_weighty(np.abs(params["pair"]).max(axis=(0, 1))
                        + np.abs(params["pair"]).max(axis=(0, 2)))
    labels = [label_names(component)[i] for i in keep]
    pair, L = params["pair"][:, keep][:, :, keep], len(labels)
    params = {**params, "root": params["root"][keep]}
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
    drawn = []
    for g, matrix in enumerate(panels):
        ax = axes[g // n_cols][g % n_cols]
        image = _heatmap(ax, matrix, labels, labels + ["ROOT"], "RdBu_r", **scale)
        ax.set_title(f"{names[g] if g < len(names) else g}" + (" (+ root scores)" if g == 0 else ""),
                     fontsize=9)
        ax.set_xlabel("head label")
        ax.set_ylabel("child label")
        drawn.append((ax, image, matrix, cell_texts(matrix, short_number)))
    for g in range(len(panels), n_rows * n_cols):
        axes[g // n_cols][g % n_cols].axis("off")
    fig.suptitle("Child-head pair scores per relation group", fontsize=10)
    fig.colorbar(drawn[-1][1], ax=axes, shrink=0.6)
    # one font size for every panel (same cell size), from the longest number of any
    n_chars = max(len(text) for *_, cells in drawn for _, _, text in cells)
    size = cell_font_size(fig, drawn[0][0], panels[0].shape, n_chars)
    if size is not None:
        for ax, image, matrix, cells in drawn:
            write_cells(ax, image, matrix, cells, size)
    return fig, panels


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


def with_counts(names: Sequence[str], counts: np.ndarray) -> List[str]:
    """``NAME (n=COUNT)`` tick labels: a share of a rare label is read with its support."""
    return [f"{name} (n={int(n)})" for name, n in zip(names, counts)]


def _row_shares(counts: np.ndarray) -> np.ndarray:
    """Each row divided by its sum; NaN rows where the sum is 0."""
    totals = counts.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals > 0, counts / np.maximum(totals, 1), np.nan)


def plot_confusion(labels: Sequence[str], counts: np.ndarray, path: Path) -> str:
    """Gold against predicted label per token, each row normalised to sum to 1
    (past :data:`MAX_DRAWN_LABELS`, the most frequent labels, gold and predicted)."""
    fig = confusion_figure(labels, counts)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    n = int(counts.sum())
    acc = float(np.trace(counts)) / n if n else float("nan")
    return f"{len(labels)} labels, {n} tokens, accuracy {acc:.4f}"


def confusion_figure(labels: Sequence[str], counts: np.ndarray):
    """The figure of :func:`plot_confusion`: row shares, each gold row's
    support (its token count) in its tick label."""
    n = int(counts.sum())
    acc = float(np.trace(counts)) / n if n else float("nan")
    keep = most_weighty((counts.sum(axis=0) + counts.sum(axis=1)).astype(float))
    some = (f"; the {len(keep)} most frequent of {len(labels)} labels"
            if len(keep) < len(labels) else "")
    # (a row's shares are of all its tokens, the labels left out included)
    normed = _row_shares(counts)[np.ix_(keep, keep)]
    labels, support = [labels[i] for i in keep], counts.sum(axis=1)[keep]
    fig, ax = plt.subplots(figsize=_figsize(len(labels), len(labels) + 4))
    image = _heatmap(ax, normed, with_counts(labels, support), list(labels), "Blues",
                     vmin=0.0, vmax=1.0)
    ax.set_xlabel("predicted label")
    ax.set_ylabel("gold label (n = gold tokens)")
    ax.set_title(f"Confusion (row-normalised), {n} tokens, accuracy {acc:.4f}{some}",
                 fontsize=9)
    fig.colorbar(image, ax=ax, label="share of the gold row", fraction=COLOURBAR_FRACTION)
    fig.tight_layout()
    annotate_cells(fig, ax, image, normed, ".2f", skip_zero=True)
    return fig


def plot_span_confusion(types: Sequence[str], counts: np.ndarray, path: Path) -> str:
    """Span targets: gold span type against predicted span type by exact span
    matching, with the missed gold spans and the spurious predicted ones."""
    fig = span_confusion_figure(types, counts)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    p, r, f = span_scores(counts)
    T = len(types)
    return (f"{T} span types, {int(counts[:T].sum())} gold spans, {int(counts[:, :T].sum())} "
            f"predicted, exact match P {p:.4f} R {r:.4f} F {f:.4f}")


def span_confusion_figure(types: Sequence[str], counts: np.ndarray):
    """The figure of :func:`plot_span_confusion`: cells coloured by the share of
    their row, numbered with their span counts."""
    T = len(types)
    shares = _row_shares(counts)
    shares[T, T] = np.nan  # no such cell: a span is neither gold nor predicted
    rows = with_counts([*types, SPURIOUS], counts.sum(axis=1))
    cols = with_counts([*types, MISSED], counts.sum(axis=0))
    fig, ax = plt.subplots(figsize=_figsize(T + 3, T + 6))
    image = _heatmap(ax, shares, rows, cols, "Blues", vmin=0.0, vmax=1.0)
    p, r, f = span_scores(counts)
    ax.set_xlabel(f"predicted span type (n = predicted spans)\n"
                  f"{MISSED} = no predicted span at the gold span's boundaries", fontsize=8)
    ax.set_ylabel(f"gold span type (n = gold spans)\n{SPURIOUS} = no gold span there", fontsize=8)
    ax.set_title(f"Entity-level confusion (exact span boundaries), span counts\n"
                 f"P {p:.3f}  R {r:.3f}  F {f:.3f}", fontsize=9)
    fig.colorbar(image, ax=ax, label="share of the row", fraction=COLOURBAR_FRACTION)
    fig.tight_layout()
    annotate_cells(fig, ax, image, shares, "d", skip_zero=True, values=counts)
    return fig


def plot_span_confidence(conf: np.ndarray, correct: np.ndarray, path: Path,
                         n_bins: int = 10) -> str:
    """Span targets with stored confidences: a reliability diagram of
    ``span._.crf_confidence`` and its histogram for correct and wrong spans."""
    fig = span_confidence_figure(conf, correct, n_bins)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    ece = expected_calibration_error(conf, correct, n_bins)
    return f"{len(conf)} predicted spans, {int(correct.sum())} correct, ECE {ece:.4f}"


def span_confidence_figure(conf: np.ndarray, correct: np.ndarray, n_bins: int = 10):
    """The figure of :func:`plot_span_confidence`."""
    mean_conf, acc, n = reliability_bins(conf, correct, n_bins)
    ece = expected_calibration_error(conf, correct, n_bins)
    fig, (ax, ax_hist) = plt.subplots(1, 2, figsize=(10, 4.2))
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    used = n > 0
    ax.bar(edges[:-1][used], acc[used], width=1.0 / n_bins, align="edge", color="#4c72b0",
           edgecolor="white", label="share correct")
    ax.plot([0, 1], [0, 1], "k--", linewidth=1, label="perfect calibration")
    ax.plot(mean_conf[used], acc[used], "o", color="#c44e52", markersize=4,
            label="bin's mean confidence")
    for x, y, k in zip(edges[:-1][used], acc[used], n[used]):  # the spans behind each bar
        ax.text(x + 0.5 / n_bins, y + 0.02, f"n={k}", ha="center", va="bottom", fontsize=7)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.3)  # room above the bars for the legend
    ax.set_xlabel("span confidence (span._.crf_confidence)")
    ax.set_ylabel("share of predicted spans that are correct")
    ax.set_title(f"Reliability of span confidence, ECE {ece:.3f}", fontsize=9)
    ax.set_yticks(np.linspace(0.0, 1.0, 6))
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    ax_hist.hist([conf[correct], conf[~correct]], bins=edges, stacked=True,
                 color=["#55a868", "#c44e52"],
                 label=[f"correct ({int(correct.sum())})", f"wrong ({int((~correct).sum())})"])
    ax_hist.set_xlim(0, 1)
    ax_hist.set_xlabel("span confidence")
    ax_hist.set_ylabel("predicted spans")
    ax_hist.set_title("Confidence of correct and wrong predicted spans (exact match)", fontsize=9)
    ax_hist.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig


@dataclass
class LearningCurve:
    """The series a learning curve draws.

    Attributes
    ----------
    steps : np.ndarray
        The training step of each log row.
    losses : dict
        Loss column -> the loss per step: the logged loss (summed by spaCy over
        the steps since the previous row) divided by that number of steps.
    main : tuple or None
        ``(label, values)`` of the main score (``SCORE``, in percent), drawn
        with the values of the component score it repeats where it repeats one.
    scores : list
        ``(label, values)`` of each other distinct score column; a label joins
        the names of identical columns (``CRF_ACC = TAG_ACC``).
    """
    steps: np.ndarray
    losses: Dict[str, np.ndarray]
    main: Optional[Tuple[str, np.ndarray]]
    scores: List[Tuple[str, np.ndarray]]


def steps_per_row(steps: np.ndarray) -> np.ndarray:
    """How many training steps each log row's loss sums over.

    spaCy adds every step's loss into one total and resets it after each
    evaluation, and the first evaluation is at step 0: a row at step ``s``
    sums the steps after the previous row up to ``s``. A step that goes back
    (a new table: a resumed run) starts counting from step 0 again.
    """
    previous = np.concatenate([[-1.0], steps[:-1]])
    previous[steps <= previous] = -1.0
    return steps - previous


def learning_curve_series(columns: List[str], rows: List[List[float]]) -> LearningCurve:
    """The losses per step and the distinct scores of a ``spacy train`` table."""
    data = np.asarray(rows, dtype=float)
    steps = data[:, columns.index("#")]
    n_steps = steps_per_row(steps)
    loss_cols = [i for i, c in enumerate(columns) if c.upper().startswith("LOSS")]
    losses = {columns[i]: data[:, i] / n_steps for i in loss_cols}
    # identical columns (e.g. crf_acc and tag_acc: the same accuracy under two names) are one line
    groups: List[Tuple[List[str], np.ndarray]] = []
    for i, name in enumerate(columns):
        if i in loss_cols or name in ("E", "#", "SCORE"):
            continue
        same = next((g for g in groups if np.allclose(g[1], data[:, i], rtol=0, atol=1e-9)), None)
        if same is None:
            groups.append(([name], data[:, i]))
        else:
            same[0].append(name)
    main = None
    if "SCORE" in columns:
        main, groups = _main_score(data[:, columns.index("SCORE")], groups)
    return LearningCurve(steps, losses, main, [(" = ".join(names), v) for names, v in groups])


def _main_score(score: np.ndarray, groups: List[Tuple[List[str], np.ndarray]]):
    """The main score line and the score groups left to draw beside it.

    ``SCORE`` is the weighted sum of the configured scores on a 0..1 scale; with
    one weighted score it repeats that score. The console prints it with two
    decimals, so a score column within half a printed unit (0.5 points) at every
    row is the one it repeats: the main line takes that column's (more precise)
    values and its name, and the column is not drawn again.
    """
    percent = 100 * score
    printed = np.allclose(score, np.round(score, 2), rtol=0, atol=1e-9)
    tolerance = 0.5 + 1e-6 if printed else 1e-6
    gaps = [float(np.max(np.abs(values - percent))) for _, values in groups]
    close = [k for k, gap in enumerate(gaps) if gap <= tolerance]
    if not close:
        return ("SCORE (main score, x100)", percent), groups
    k = min(close, key=lambda c: gaps[c])
    names, values = groups[k]
    return (f"SCORE (main score) = {' = '.join(names)}", values), groups[:k] + groups[k + 1:]


def plot_learning_curve(columns: List[str], rows: List[List[float]], path: Path) -> str:
    """The dev scores and the loss per step against the training step."""
    curve = learning_curve_series(columns, rows)
    fig = learning_curve_figure(curve)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    steps = curve.steps
    best = ""
    if "SCORE" in columns:
        s = np.asarray(rows, dtype=float)[:, columns.index("SCORE")]
        best = f", best SCORE {s.max():.2f} at step {int(steps[s.argmax()])}"
    n_lines = (curve.main is not None) + len(curve.scores)
    return (f"{len(rows)} evaluations, steps {int(steps[0])}..{int(steps[-1])}{best}, "
            f"{n_lines} distinct score lines, loss per step")


def learning_curve_figure(curve: LearningCurve):
    """The figure of :func:`plot_learning_curve`: scores above, losses below."""
    fig, (ax, ax_loss) = plt.subplots(2, 1, figsize=(7, 6), sharex=True,
                                      gridspec_kw={"height_ratios": [2, 1]})
    if curve.main is not None:
        label, values = curve.main
        ax.plot(curve.steps, values, "k-o", markersize=3, linewidth=2, label=label)
    for label, values in curve.scores:
        ax.plot(curve.steps, values, "-", marker=".", label=label)
    ax.set_ylabel("dev score (%)")
    ax.grid(alpha=0.3)
    if ax.lines:
        ax.legend(fontsize=7)
    ax.set_title("Learning curve (spacy train log)", fontsize=9)
    for label, values in curve.losses.items():
        ax_loss.plot(curve.steps, values, "-", marker=".", label=label)
    ax_loss.set_xlabel("training step")
    ax_loss.set_ylabel("loss per step\n(logged loss / steps since the previous row)", fontsize=8)
    ax_loss.grid(alpha=0.3)
    if curve.losses:
        ax_loss.legend(fontsize=7)
    fig.tight_layout()
    return fig


#: structure name -> the drawing of its label-interaction scores
INTERACTION_PLOTS = {"chain": plot_chain_transitions, "pruned_chain": plot_chain_transitions,
                     "tree": plot_pair_matrices}
