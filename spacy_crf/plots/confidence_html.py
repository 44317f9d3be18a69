"""``confidence.html``: docs with each token coloured by the CRF's confidence in
its predicted label and, for span targets (``ents``, ``spans:KEY``), an entity
view: the predicted spans drawn as boxes with their label and
``span._.crf_confidence``, wrong spans marked and missed gold spans outlined.
Given a component's name, the confidences are that component's own
(``token._.{stem}_confidence``, ``span._.{stem}_confidence``), whatever other
crf_taggers stored on the docs. Self-contained: no external assets, no script."""

import html
from typing import List, Optional, Sequence, Tuple

import numpy as np
from spacy.tokens import Span

from .. import token_values
from ..pipeline.extensions import CONFIDENCE, SHARED_CONFIDENCE, stem
from .entities import _by_bounds, span_confidence, span_confusion, span_scores

SpanList = Sequence[Span]

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
.ents { line-height: 2.6em; margin: 0.4em 0 0.8em 0; padding-top: 0.4em; border-top: 1px dotted #ccc; }
.ents h3 { font-size: 0.75em; color: #777; margin: 0; line-height: 1.5em; font-weight: normal; }
.group { display: inline-block; vertical-align: top; line-height: 2.6em; }
.group > .row { display: block; }
.ent { display: inline-block; padding: 0 0.35em; margin: 0 0.1em; border: 2px solid #888;
       border-radius: 0.35em; line-height: 1.8em; cursor: help; }
.ent .el { font-size: 0.62em; font-weight: bold; margin-left: 0.4em; vertical-align: middle; }
.ent.wrong { border-color: #c00; }
.ent.wrong .el { color: #a00; text-decoration: line-through; }
.ent.missed { border: 2px dashed #06c; background: transparent; color: #555; }
.ent.missed .el { color: #06c; }
"""


def confidence_colour(p: Optional[float]) -> str:
    """Red (low) to green (high) background; grey where no confidence is stored."""
    if p is None or not np.isfinite(p):
        return "hsl(0, 0%, 88%)"
    p = float(min(max(p, 0.0), 1.0))
    return f"hsl({int(round(120 * p))}, 75%, {int(round(88 - 10 * p))}%)"


def token_confidences(doc, component: Optional[str] = None) -> List[Optional[float]]:
    """Per token of ``doc``, its stored confidence: that of the crf_tagger
    named ``component`` (``token._.{stem}_confidence``), or with ``component``
    None ``token._.crf_confidence`` (a ValueError, E191, where several
    components stored theirs on the doc); None where none is stored."""
    if component is not None:
        found = token_values.doc_values(doc, CONFIDENCE, stem(component))
        return found if found is not None else [None] * len(doc)
    return [token._.get(SHARED_CONFIDENCE) for token in doc]


def render_html(docs, gold: List[np.ndarray], pred: List[np.ndarray],
                labels: Sequence[str], title: str,
                gold_spans: Optional[Sequence[Optional[SpanList]]] = None,
                pred_spans: Optional[Sequence[SpanList]] = None,
                component: Optional[str] = None) -> str:
    """The page: per doc, the tokens coloured by confidence with the predicted
    label under each and, given ``gold_spans`` and ``pred_spans`` (span
    targets: each doc's gold spans, None where unannotated, and its predicted
    spans), the entity view of :func:`render_entities` below them.

    ``component`` names the crf_tagger whose labels these are: the
    confidences shown are its own (:func:`token_confidences`,
    :func:`~.entities.span_confidence`), so other crf_taggers of the pipeline
    that stored theirs on the docs change nothing. None reads the shared
    ``token._.crf_confidence`` and ``span._.crf_confidence``, which hold the
    values of the one component that stored any.
    """
    def name(i: int) -> str:
        return labels[i] if 0 <= i < len(labels) else "(none)"

    parts = ["<!DOCTYPE html>", "<html><head><meta charset=\"utf-8\">",
             f"<title>{html.escape(title)}</title>", f"<style>{CSS}</style></head><body>",
             f"<h1 style=\"font-size:1.2em\">{html.escape(title)}</h1>",
             "<div class=\"legend\">confidence: "]
    for p in (0.0, 0.25, 0.5, 0.75, 0.9, 1.0):
        parts.append(f"<span style=\"background:{confidence_colour(p)}\">{p:.2f}</span>")
    parts.append(" &middot; predicted label under each token, gold on hover, "
                 "<span style=\"text-decoration: underline wavy #c00\">errors underlined</span>")
    if pred_spans is not None:
        parts.append(" &middot; spans: <span class=\"ent\">predicted <span class=\"el\">LABEL 90%</span>"
                     "</span> <span class=\"ent wrong\">wrong <span class=\"el\">LABEL</span></span> "
                     "<span class=\"ent missed\">missed <span class=\"el\">GOLD (missed)</span></span>")
    parts.append("</div>")
    n_tokens = n_errors = 0
    for d, (doc, g, p) in enumerate(zip(docs, gold, pred)):
        errors = int(((g >= 0) & (g != p)).sum())
        n_tokens += len(doc)
        n_errors += errors
        parts.append(f"<div class=\"doc\"><h2>doc {d}: {len(doc)} tokens, {errors} errors</h2>")
        for token, conf in zip(doc, token_confidences(doc, component)):
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
        if pred_spans is not None:
            parts.append(render_entities(doc, gold_spans[d] if gold_spans is not None else None,
                                         pred_spans[d], component))
        parts.append("</div>")
    parts.append(f"<p style=\"color:#777;font-size:0.8em\">{len(docs)} docs, {n_tokens} tokens, "
                 f"{n_errors} errors</p></body></html>")
    return "\n".join(parts)


def _pct(conf: Optional[float]) -> str:
    return "n/a" if conf is None or not np.isfinite(conf) else f"{int(round(100 * float(conf)))}%"


def _describe(span: Span) -> str:
    return f"{span.label_} \u201c{span.text}\u201d"


def _rows(items: List[Tuple[int, int, str, Span]]) -> List[List[Tuple[int, int, str, Span]]]:
    """Overlapping spans in separate rows (predicted ones first), each row's
    spans disjoint and in text order."""
    rows: List[List[Tuple[int, int, str, Span]]] = []
    for item in items:
        for row in rows:
            if all(item[1] <= other[0] or other[1] <= item[0] for other in row):
                row.append(item)
                break
        else:
            rows.append([item])
    return [sorted(row, key=lambda it: it[0]) for row in rows]


def render_entities(doc, gold_spans: Optional[SpanList], pred_spans: SpanList,
                    component: Optional[str] = None) -> str:
    """The entity view of one doc: its text with the predicted spans as boxes
    (label and confidence, coloured by it) and, where the doc is annotated,
    each predicted span that is not a gold span (exact boundaries and label,
    :mod:`.entities`) in class ``ent wrong`` and each gold span no predicted
    span matches in class ``ent missed``. Overlapping spans (a boundary
    error) are drawn in stacked rows over the same stretch of text. A span's
    confidence is the crf_tagger ``component``'s (None: ``span._.crf_confidence``,
    :func:`~.entities.span_confidence`)."""
    text = doc.text
    known = gold_spans is not None
    gold_by = _by_bounds(gold_spans or [])
    pred_by = _by_bounds(pred_spans)
    items: List[Tuple[int, int, str, Span]] = []
    for sp in pred_spans:
        b = (sp.start_char, sp.end_char)
        items.append((b[0], b[1], "ok" if not known or gold_by.get(b) == sp.label_ else "wrong", sp))
    for sp in gold_spans or []:
        b = (sp.start_char, sp.end_char)
        if pred_by.get(b) != sp.label_:
            items.append((b[0], b[1], "missed", sp))

    def overlapping(spans: SpanList, a: int, b: int) -> List[Span]:
        return [s for s in spans if s.start_char < b and a < s.end_char]

    def box(item: Tuple[int, int, str, Span]) -> str:
        a, b, kind, sp = item
        words = html.escape(text[a:b])
        if kind == "missed":
            there = overlapping(pred_spans, a, b)
            hover = (f"missed gold span {_describe(sp)}; predicted here: "
                     + (", ".join(_describe(s) for s in there) if there else "nothing"))
            return (f"<span class=\"ent missed\" title=\"{html.escape(hover, quote=True)}\">"
                    f"{words}<span class=\"el\">{html.escape(sp.label_)} (missed)</span></span>")
        conf = span_confidence(sp, component)
        hover = f"predicted {_describe(sp)}, confidence {_pct(conf)}"
        if not known:
            hover += "; gold unknown"
        elif kind == "wrong":
            there = overlapping(gold_spans, a, b)
            hover += "; wrong, gold here: " + (
                ", ".join(_describe(s) for s in there) if there else "no gold span")
        else:
            hover += "; correct"
        cls = "ent wrong" if kind == "wrong" else "ent"
        return (f"<span class=\"{cls}\" style=\"background:{confidence_colour(conf)}\" "
                f"title=\"{html.escape(hover, quote=True)}\">{words}"
                f"<span class=\"el\">{html.escape(sp.label_)} {_pct(conf)}</span></span>")

    def row_html(row, a: int, b: int) -> str:
        out, pos = [], a
        for item in row:
            out.append(html.escape(text[pos:item[0]]))
            out.append(box(item))
            pos = item[1]
        out.append(html.escape(text[pos:b]))
        return "".join(out)

    # groups: maximal stretches of text covered by overlapping spans
    groups: List[List[Tuple[int, int, str, Span]]] = []
    for item in sorted(items, key=lambda it: (it[0], it[1])):
        if groups and item[0] < max(it[1] for it in groups[-1]):
            groups[-1].append(item)
        else:
            groups.append([item])
    parts, pos = [], 0
    for group in groups:
        a, b = min(it[0] for it in group), max(it[1] for it in group)
        parts.append(html.escape(text[pos:a]))
        rows = _rows(sorted(group, key=lambda it: (it[2] == "missed", it[0], it[1])))
        if len(rows) == 1:
            parts.append(row_html(rows[0], a, b))
        else:
            parts.append("<span class=\"group\">" + "".join(
                f"<span class=\"row\">{row_html(row, a, b)}</span>" for row in rows) + "</span>")
        pos = b
    parts.append(html.escape(text[pos:]))
    if known:
        types, counts = span_confusion([gold_spans], [pred_spans])
        n_wrong = sum(it[2] == "wrong" for it in items)
        n_missed = sum(it[2] == "missed" for it in items)
        p, r, f = span_scores(counts)
        fmt = lambda v: "n/a" if not np.isfinite(v) else f"{v:.2f}"  # noqa: E731
        head = (f"spans: {len(pred_spans)} predicted, {len(gold_spans)} gold, {n_wrong} wrong, "
                f"{n_missed} missed (P {fmt(p)}, R {fmt(r)}, F {fmt(f)})")
    else:
        head = f"spans: {len(pred_spans)} predicted, no gold span annotation"
    return f"<div class=\"ents\"><h3>{html.escape(head)}</h3>{''.join(parts)}</div>"
