"""``python -m spacy_crf.evaluate`` / ``spacy crf-evaluate``: ``spacy evaluate`` with inputs copied as trained.

    python -m spacy_crf.evaluate MODEL DATA.spacy --output scores.json
    python -m spacy_crf.evaluate MODEL DATA.spacy --copy HEAD,DEP,POS

The command line of :mod:`spacy_crf.evaluation`: the corpus is read with the
attributes the model's training config copied onto its inputs (``--copy``
overrides them), and the scores are printed and saved as ``spacy evaluate``
prints and saves them.
"""

from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import srsly
from spacy.cli._util import setup_gpu
from spacy.language import Language
from spacy.training import Example

from ..evaluation import read_examples, score
from ..pipeline.crf_tagger import CRFTagger
from ._util import (CODE_HELP, COPY_HELP, Arg, Opt, command, copy_option, import_code, load_model,
                    msg, our_errors, run)


@command("crf-evaluate")
def evaluate_cli(
    # fmt: off
    model: str = Arg(..., help="Model name or path"),
    data_path: Path = Arg(..., help="Location of binary evaluation data in .spacy format", exists=True),
    output: Optional[Path] = Opt(None, "--output", "-o", help="Output JSON file for metrics", dir_okay=False),
    code_path: Optional[Path] = Opt(None, "--code", "-c", help=CODE_HELP),
    use_gpu: int = Opt(-1, "--gpu-id", "-g", help="GPU ID or -1 for CPU"),
    gold_preproc: bool = Opt(False, "--gold-preproc", "-G", help="Use gold preprocessing"),
    displacy_path: Optional[Path] = Opt(None, "--displacy-path", "-dp", help="Directory to output rendered parses as HTML", exists=True, file_okay=False),
    displacy_limit: int = Opt(25, "--displacy-limit", "-dl", help="Limit of parses to render as HTML"),
    per_component: bool = Opt(False, "--per-component", "-P", help="Return scores per component, only applicable when an output JSON file is specified."),
    copy: Optional[str] = Opt(None, "--copy", help=COPY_HELP),
    # fmt: on
):
    """
    Evaluate a pipeline, inputs copied as trained. As spacy evaluate does,
    with the attributes its training config copied from the corpus onto the inputs (the
    spacy-crf.copy_attrs.v1 augmenter of its [corpora], saved with the
    pipeline) copied again, so that a CRF reading gold POS or a gold parse
    sees them. --copy overrides them. A crf_tagger that reads an attribute
    none of the evaluation docs carries gets a warning naming it.
    """
    import_code(code_path)
    setup_gpu(use_gpu)
    # a model or corpus that cannot be read, a bad --copy, a model that cannot run
    # without an input not copied (E015): a ✘ line, not a traceback
    with our_errors():
        nlp = load_model(model)
        attrs = copy_option(nlp, copy)
        examples = read_examples(nlp, data_path, attrs, gold_preproc=gold_preproc)
        scores = score(nlp, examples, attrs, per_component=per_component)
    rows = [(key, f"{value:.4f}" if not key.endswith("speed") else f"{value:.0f}")
            for key, value in (flat_scores(scores) if per_component else scores).items()
            if isinstance(value, float)]
    if rows:  # the key column 16 wide (or the longest key's), the values after one space
        widths = (max(16, *(len(key) for key, _ in rows)), max(len(value) for _, value in rows))
        msg.table(rows, title="Results", widths=widths, spacing=1)
    print_tables_per_type(scores)
    if per_component and output is None:
        msg.warn("The per-component option is enabled but there is no output JSON file "
                 "provided to save the scores to.")
    if displacy_path is not None:
        render_examples(nlp, examples[:displacy_limit], displacy_path, model)
        msg.good(f"Generated {min(displacy_limit, len(examples))} parses as HTML", displacy_path)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        srsly.write_json(output, scores)
        msg.good(f"Saved scores to {output}")


def flat_scores(scores: Dict[str, Any]) -> Dict[str, Any]:
    """Per-component scores (``{component: {key: value}}``) as ``{component.key: value}``
    (scores of the whole pipeline, such as ``speed``, as they are)."""
    flat: Dict[str, Any] = {}
    for name, value in scores.items():
        if isinstance(value, dict):
            flat.update({f"{name}.{key}": v for key, v in value.items()})
        else:
            flat[name] = value
    return flat


#: the titles spacy evaluate gives its tables per type ("NER (per type)"); other
#: keys are titled by their prefix: "SPANS sc", "CHUNK" (a ``_.chunk`` target's)
PER_TYPE_TITLES = {"ents_per_type": "NER", "morph_per_feat": "MORPH", "dep_las_per_type": "LAS"}


def print_tables_per_type(scores: Dict[str, Any], component: str = "") -> None:
    """The P / R / F tables per type (per feature) that ``spacy evaluate`` prints
    after its results, for every such score: ``ents_per_type``, ``morph_per_feat``,
    ``spans_KEY_per_type`` of any key, ``NAME_per_type`` of a ``_.NAME`` target;
    with ``--per-component`` each component's, titled by its name."""
    from spacy.cli.evaluate import print_prf_per_type

    for key, value in scores.items():
        if isinstance(value, dict) and not key.endswith(("_per_type", "_per_feat")):
            print_tables_per_type(value, component=f"{key}: ")  # a component's scores
            continue
        if not (key.endswith(("_per_type", "_per_feat")) and value
                and all(isinstance(row, dict) and {"p", "r", "f"} <= set(row)
                        for row in value.values())):
            continue
        prefix, _, kind = key.rpartition("_per_")
        name = PER_TYPE_TITLES.get(key) or (f"SPANS {prefix[len('spans_'):]}"
                                            if prefix.startswith("spans_") else prefix.upper())
        print_prf_per_type(msg, value, f"{component}{name}", kind)


def render_examples(nlp: Language, examples: Sequence[Example], path: Path, model: str) -> None:
    """displaCy pages of the pipeline's predictions on ``examples`` (their inputs, with
    the copied attributes), as spacy evaluate's ``--displacy-path`` writes them:
    entities.html for entity predictions, parses.html for a parser's, spans.html for
    span predictions in ``doc.spans["sc"]``."""
    from spacy.cli.evaluate import render_parses

    if not examples:
        return
    factories = {nlp.get_pipe_meta(name).factory for name in nlp.pipe_names}
    targets = [pipe.target for _, pipe in nlp.pipeline if isinstance(pipe, CRFTagger)]
    docs = list(nlp.pipe(eg.predicted.copy() for eg in examples))
    # spans.html shows doc.spans["sc"], the key displaCy and spancat default to
    render_parses(docs, path, model_name=model, limit=len(docs),
                  deps="parser" in factories,
                  ents="ner" in factories or any("doc.ents" in t.assigns for t in targets),
                  spans="spancat" in factories or any(t.spans_key == "sc" for t in targets))


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m spacy_crf.evaluate``: :func:`evaluate_cli`; its exit code."""
    return run(evaluate_cli, argv, "python -m spacy_crf.evaluate")

