"""``confidence.html``: docs with each token coloured by the CRF's confidence in
its predicted label. Self-contained: no external assets, no script."""

import html
from typing import List, Optional, Sequence

import numpy as np

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
