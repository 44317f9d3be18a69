"""Diagnostic plots for a trained ``crf_tagger`` pipeline.

Writes into ``--out``:

* ``transitions.png``: the learned label-interaction scores. Chain models: the
  transition matrix (rows = previous label, columns = next label) with the
  start scores as an extra first row and the end scores as an extra last
  column. Tree models: one panel per relation group (rows = child label,
  columns = head label; each group named by its relation), the root scores as
  an extra column of the first.
* ``confusion.png``: gold against predicted label per token on ``--data``,
  each row normalised to sum to 1.
* ``learning_curve.png``: the scores against training steps, parsed from the
  console output of ``spacy train`` or from the JSON lines of
  ``spacy.ConsoleLogger.v3``'s ``output_file``, given with ``--train-log``
  (skipped with a note without it).
* ``confidence.html``: the first ``--n-docs`` docs, each token coloured by the
  CRF's confidence in its predicted label (``token._.crf_confidence``), the
  predicted label under it, the gold label on hover and errors underlined.
  Self-contained: no external assets.

    python benchmarks/plots.py --model training/model-best --data corpus/dev.spacy \\
        --train-log training/train.log --out plots/
    python benchmarks/plots.py --model M --data D.spacy --copy HEAD DEP --out plots/

``--copy`` copies attributes from the corpus onto the inputs, as
``python -m spacy_crf.evaluate`` does (e.g. ``TAG`` for CoNLL-2000 chunking,
``HEAD DEP`` for tree models).
"""

import argparse
import html
import re
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import spacy  # noqa: E402
from spacy.training import Corpus, Example  # noqa: E402

from spacy_crf import CRFTagger  # noqa: E402
from spacy_crf.augmenters import create_copy_attrs  # noqa: E402

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


# ------------------------------------------------------------------ loading


def find_component(nlp, name: Optional[str]) -> Tuple[str, CRFTagger]:
    """The named component, or the first ``crf_tagger`` of the pipeline."""
    if name is not None:
        component = nlp.get_pipe(name)
        if not isinstance(component, CRFTagger):
            raise ValueError(f"component '{name}' is not a crf_tagger")
        return name, component
    for pipe_name, component in nlp.pipeline:
        if isinstance(component, CRFTagger):
            return pipe_name, component
    raise ValueError(f"no crf_tagger in the pipeline {nlp.pipe_names}")


def potentials_params(component: CRFTagger) -> Dict[str, np.ndarray]:
    for node in component.model.walk():
        if node.name == "crf_potentials":
            return {name: np.asarray(node.get_param(name))
                    for name in ("transitions", "start", "end", "pair", "root")
                    if node.has_param(name)}
    raise ValueError("the component's model has no crf_potentials layer")


def predict(nlp, component: CRFTagger, examples: List[Example],
            batch_size: int) -> Tuple[List, List[np.ndarray], List[np.ndarray]]:
    """Run the pipeline over the predicted docs (confidences on); gold and predicted ids."""
    component.cfg["store_confidence"] = True
    docs = list(nlp.pipe((eg.predicted for eg in examples), batch_size=batch_size))
    target = component.target
    gold = [target.gold_ids(eg) for eg in examples]
    pred = [target.ids_of_keys(target.reference_keys(doc)) for doc in docs]
    return docs, gold, pred


# ------------------------------------------------------------------ plots


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
    if component.cfg["structure"] == "tree":
        return plot_pair_matrices(component, path)
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


def parse_train_log(text: str) -> Tuple[List[str], List[List[float]]]:
    """Column names and rows of the table ``spacy train``'s console logger prints.

    The header starts ``E    #`` and its columns are separated by two or more
    spaces (a loss column is ``LOSS NAME``); rows are whitespace-separated numbers.
    Several tables (e.g. resumed runs) are concatenated.
    """
    if text.lstrip().startswith("{"):
        return parse_jsonl_log(text)
    columns: List[str] = []
    rows: List[List[float]] = []
    for raw in text.splitlines():
        line = ANSI.sub("", raw).rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        if re.match(r"^E\s+#\s", stripped):
            columns = re.split(r"\s{2,}", stripped)
            continue
        if not columns or set(stripped) <= set("- "):
            continue
        fields = stripped.split()
        if len(fields) != len(columns):
            continue
        try:
            rows.append([float(x) for x in fields])
        except ValueError:
            continue
    return columns, rows


def parse_jsonl_log(text: str) -> Tuple[List[str], List[List[float]]]:
    """The same table from the JSON lines ``spacy.ConsoleLogger.v3`` writes to its
    ``output_file`` (the shipped configs set it from ``paths.train_log``), with the
    console's columns and scale (scores already in percent there)."""
    import json

    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    if not records:
        return [], []
    losses = list(records[0]["losses"])
    scores = [k for k, v in records[0]["scores"].items() if isinstance(v, (int, float))]
    columns = ["E", "#", *(f"LOSS {name.upper()}" for name in losses),
               *(name.upper() for name in scores), "SCORE"]
    rows = [[float(r["epoch"]), float(r["step"]), *(float(r["losses"][n]) for n in losses),
             *(float(r["scores"][n] or 0.0) for n in scores), float(r["score"])]
            for r in records]
    return columns, rows


def find_log_file(path: Path) -> Optional[Path]:
    """``path`` itself, or a log file holding the table in a directory (a training output dir)."""
    if path.is_file():
        return path
    if path.is_dir():
        candidates = sorted(list(path.glob("*.log")) + list(path.glob("*.txt"))
                            + list(path.glob("*.jsonl")) + list(path.glob("*/*.log")))
        for candidate in candidates:
            try:
                if parse_train_log(candidate.read_text(errors="replace"))[1]:
                    return candidate
            except OSError:
                continue
    return None


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


# ------------------------------------------------------------------ HTML


CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 2em; color: #222; }
.doc { line-height: 3.2em; margin-bottom: 1.6em; padding: 0.6em 1em; border: 1px solid #ddd; border-radius: 6px; }
.doc h2 { font-size: 0.8em; color: #777; margin: 0; line-height: 1.5em; font-weight: normal; }
.tok { display: inline-block; text-align: center; padding: 0.15em 0.35em; margin: 0 0.1em;
       border-radius: 0.35em; line-height: 1.3em; vertical-align: top; cursor: help; }
.tok .w { display: block; font-size: 1em; }
.tok .l { display: block; font-size: 0.62em; font-weight: bold; opacity: 0.8; }
.tok.err .w { text-decoration: underline wavy #c00; text-decoration-thickness: 2px; }
.tok.err .l { color: #a00; }
.legend { margin-bottom: 1.5em; font-size: 0.85em; }
.legend span { display: inline-block; padding: 0.2em 0.6em; margin-right: 0.2em; border-radius: 0.3em; }
"""


def confidence_colour(p: Optional[float]) -> str:
    """Red (low) to green (high) background; grey where no confidence is stored."""
    if p is None or not np.isfinite(p):
        return "hsl(0, 0%, 88%)"
    p = float(min(max(p, 0.0), 1.0))
    return f"hsl({int(round(120 * p))}, 75%, {int(round(88 - 10 * p))}%)"


def render_html(docs, gold: List[np.ndarray], pred: List[np.ndarray],
                labels: Sequence[str], title: str) -> str:
    def name(i: int) -> str:
        return labels[i] if 0 <= i < len(labels) else "(none)"

    parts = ["<!DOCTYPE html>", "<html><head><meta charset=\"utf-8\">",
             f"<title>{html.escape(title)}</title>", f"<style>{CSS}</style></head><body>",
             f"<h1 style=\"font-size:1.2em\">{html.escape(title)}</h1>",
             "<div class=\"legend\">confidence: "]
    for p in (0.0, 0.25, 0.5, 0.75, 0.9, 1.0):
        parts.append(f"<span style=\"background:{confidence_colour(p)}\">{p:.2f}</span>")
    parts.append(" &middot; predicted label under each token, gold on hover, "
                 "<span style=\"text-decoration: underline wavy #c00\">errors underlined</span></div>")
    n_tokens = n_errors = 0
    for d, (doc, g, p) in enumerate(zip(docs, gold, pred)):
        errors = int(((g >= 0) & (g != p)).sum())
        n_tokens += len(doc)
        n_errors += errors
        parts.append(f"<div class=\"doc\"><h2>doc {d}: {len(doc)} tokens, {errors} errors</h2>")
        for token in doc:
            conf = token._.crf_confidence
            gi, pi = int(g[token.i]), int(p[token.i])
            err = gi >= 0 and gi != pi
            conf_text = "n/a" if conf is None else f"{conf:.3f}"
            hover = (f"predicted: {name(pi)} | gold: {name(gi) if gi >= 0 else '(unknown)'}"
                     f" | confidence: {conf_text}")
            cls = "tok err" if err else "tok"
            parts.append(
                f"<span class=\"{cls}\" style=\"background:{confidence_colour(conf)}\" "
                f"title=\"{html.escape(hover, quote=True)}\">"
                f"<span class=\"w\">{html.escape(token.text)}</span>"
                f"<span class=\"l\">{html.escape(name(pi))}</span></span>"
            )
            if token.whitespace_:
                parts.append(" ")
        parts.append("</div>")
    parts.append(f"<p style=\"color:#777;font-size:0.8em\">{len(docs)} docs, {n_tokens} tokens, "
                 f"{n_errors} errors</p></body></html>")
    return "\n".join(parts)


# ------------------------------------------------------------------ main


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="pipeline directory or package name")
    parser.add_argument("--data", required=True, type=Path, help="evaluation corpus (.spacy)")
    parser.add_argument("--copy", nargs="*", default=[],
                        help="attributes copied from the corpus onto the inputs (e.g. TAG, HEAD DEP)")
    parser.add_argument("--train-log", type=Path, default=None,
                        help="console output of `spacy train` (a file, or a directory holding one)")
    parser.add_argument("--out", required=True, type=Path, help="output directory")
    parser.add_argument("--n-docs", type=int, default=20, help="docs in confidence.html")
    parser.add_argument("--component", default=None, help="component name (default: first crf_tagger)")
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args(argv)
    if not args.data.exists():
        parser.error(f"data file not found: {args.data}")
    if args.n_docs < 0:
        parser.error("--n-docs must be >= 0")

    nlp = spacy.load(args.model)
    name, component = find_component(nlp, args.component)
    labels = list(component.labels)
    augmenter = create_copy_attrs(args.copy) if args.copy else None
    examples = list(Corpus(args.data, augmenter=augmenter)(nlp))
    if not examples:
        parser.error(f"no examples in {args.data}")
    args.out.mkdir(parents=True, exist_ok=True)
    written: List[Tuple[Path, str]] = []

    path = args.out / "transitions.png"
    written.append((path, plot_transitions(component, path)))

    docs, gold, pred = predict(nlp, component, examples, args.batch_size)
    counts, n_unknown = confusion_matrix(gold, pred, len(labels))
    path = args.out / "confusion.png"
    info = plot_confusion(labels, counts, path)
    if n_unknown:
        info += f" ({n_unknown} tokens without a known gold label skipped)"
    written.append((path, info))

    if args.train_log is None:
        print("learning_curve.png skipped: no --train-log given")
    else:
        log = find_log_file(args.train_log)
        columns, rows = parse_train_log(log.read_text(errors="replace")) if log else ([], [])
        if not rows or "#" not in columns:
            print(f"learning_curve.png skipped: no `spacy train` score table found in {args.train_log}"
                  " (save the console output of spacy train, e.g. `spacy train ... | tee train.log`)")
        else:
            path = args.out / "learning_curve.png"
            written.append((path, plot_learning_curve(columns, rows, path) + f", from {log}"))

    n = min(args.n_docs, len(docs))
    path = args.out / "confidence.html"
    title = f"{name} ({component.cfg['target']}, {component.cfg['structure']}) on {args.data.name}"
    path.write_text(render_html(docs[:n], gold[:n], pred[:n], labels, title), encoding="utf-8")
    written.append((path, f"{n} docs"))

    print(f"model {args.model}, component '{name}', {len(labels)} labels, {len(examples)} docs")
    for path, info in written:
        print(f"wrote {path}: {info}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
