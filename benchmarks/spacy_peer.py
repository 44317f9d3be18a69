"""spaCy's own components as benchmark peers: a default CPU config for a pipe,
a training corpus relabelled so that ``Token.tag_`` holds the benchmark's
labels, a ``spacy train`` with a fixed step budget, and a decode phase.

spaCy's ``tagger`` learns and predicts ``Token.tag_`` only. To compare it with
a CRF on another per-token label (UPOS, IOB chunk tags, ...), the corpus is
copied with ``tag_`` set to that label (:func:`relabel_docbin`), the tagger is
trained on the copy (:func:`make_default_config`, :func:`train_fixed_steps`)
and its ``tag_`` predictions are read back as the label (:func:`phase_decode`
with ``attr="tag_"``). :func:`phase_decode` is the same for every spaCy
pipeline (spacy-crf's included), so all systems are decoded the same way.

Used by the EWT UPOS benchmark (``tag_`` = UPOS) and meant for the CoNLL-2000
one (``tag_`` = chunk tag). Not part of the package: the benchmarks run from a
checkout, with this directory on ``sys.path``.
"""

import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from common import disk_bytes, time_pipe, train_spacy_subprocess

#: what :func:`make_default_config` runs (``PIPE`` is filled in)
INIT_CONFIG_COMMAND = "python -m spacy init config CFG -l {lang} -p {pipe} -o {optimize}"

Labels = Union[Callable[[Any], Sequence[str]], Sequence[Sequence[str]]]


def make_default_config(pipe: str, path: Path, lang: str = "en",
                        optimize: str = "efficiency") -> Dict[str, str]:
    """Write spaCy's default CPU config for one pipe (``spacy init config``).

    Parameters
    ----------
    pipe : str
        The pipeline component, e.g. ``"tagger"`` (``-p``; spaCy adds the
        ``tok2vec`` it listens to).
    path : Path
        Where to write the config.
    lang : str
        Language code (``-l``).
    optimize : str
        ``"efficiency"`` or ``"accuracy"`` (``-o``); without ``--gpu`` and
        without vectors either way.

    Returns
    -------
    dict
        ``path`` (the written config, as str) and ``command`` (the ``spacy
        init config`` command line, for the report).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "spacy", "init", "config", str(path), "-l", lang,
                    "-p", pipe, "-o", optimize, "--force"],
                   check=True, capture_output=True, text=True)
    return {"path": str(path),
            "command": INIT_CONFIG_COMMAND.format(lang=lang, pipe=pipe, optimize=optimize)}


def relabel_docbin(src: Path, dst: Path, labels: Labels) -> Dict[str, Any]:
    """Copy a ``.spacy`` file with every token's ``tag_`` set to a given label.

    Everything else of the docs (words, spaces, other annotation, user data)
    is kept: spaCy's tagger reads only ``tag_`` from the reference docs.

    Parameters
    ----------
    src, dst : Path
        The DocBin to read and the one to write.
    labels : callable or sequence
        Either a function ``doc -> list of str`` (one label per token, e.g.
        ``lambda doc: [t.pos_ for t in doc]``) or one list of labels per doc,
        in the DocBin's order.

    Returns
    -------
    dict
        ``n_docs``, ``n_tokens``, ``n_unlabelled`` (tokens given an empty
        label: the tagger treats them as missing annotation, not as a label)
        and ``labels`` (count per label).

    Raises
    ------
    ValueError
        If a doc gets a different number of labels than it has tokens, or a
        label list is given for a different number of docs.
    """
    import spacy
    from spacy.tokens import DocBin

    vocab = spacy.blank("en").vocab
    docs = list(DocBin().from_disk(src).get_docs(vocab))
    if not callable(labels) and len(labels) != len(docs):
        raise ValueError(f"{src}: {len(docs)} docs but labels for {len(labels)}")
    out = DocBin(store_user_data=True)
    counts: Dict[str, int] = {}
    n_tokens = n_unlabelled = 0
    for i, doc in enumerate(docs):
        tags = list(labels(doc) if callable(labels) else labels[i])
        if len(tags) != len(doc):
            raise ValueError(f"{src}, doc {i}: {len(doc)} tokens but {len(tags)} labels")
        for token, tag in zip(doc, tags):
            token.tag_ = tag
            counts[tag] = counts.get(tag, 0) + 1
        n_tokens += len(doc)
        n_unlabelled += sum(1 for tag in tags if not tag)
        out.add(doc)
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    out.to_disk(dst)
    return {"n_docs": len(docs), "n_tokens": n_tokens, "n_unlabelled": n_unlabelled,
            "labels": dict(sorted(counts.items()))}


def train_fixed_steps(config: Path, output: Path, corpus: Dict[str, Path], max_steps: int,
                      eval_frequency: int, log_path: Path,
                      extra_overrides: Sequence[str] = ()) -> Dict[str, Any]:
    """``python -m spacy train`` with a fixed budget of optimizer steps.

    ``training.patience`` is set to 0, so early stopping cannot end the run
    before ``max_steps`` (the default configs have ``max_epochs = 0``, no
    epoch limit either): every run takes exactly ``max_steps`` steps and
    ``model-best`` is the best of its dev evaluations.

    Parameters
    ----------
    config : Path
        The training config (e.g. from :func:`make_default_config`).
    output : Path
        ``spacy train --output``: gets ``model-best`` and ``model-last``.
    corpus : dict
        ``{"train": path, "dev": path}`` of ``.spacy`` files.
    max_steps, eval_frequency : int
        ``training.max_steps`` and ``training.eval_frequency``.
    log_path : Path
        Where the training table goes.
    extra_overrides : sequence of str
        More ``--section.key value`` overrides.

    Returns
    -------
    dict
        :func:`common.train_spacy_subprocess`'s result (wall time, CPU share,
        ``peak_rss_mb`` of the training process, ...) plus ``max_steps``,
        ``eval_frequency`` and ``patience``.
    """
    overrides = ["--training.max_steps", str(max_steps),
                 "--training.eval_frequency", str(eval_frequency),
                 "--training.patience", "0", *extra_overrides]
    result = train_spacy_subprocess(Path(config), Path(output), corpus, overrides, Path(log_path))
    result.update(max_steps=max_steps, eval_frequency=eval_frequency, patience=0)
    return result


def _token_getter(attr: str) -> Callable[[Any], str]:
    """``"tag_"`` -> ``token.tag_``; ``"_.chunk"`` -> ``token._.chunk``."""
    if attr.startswith("_."):
        name = attr[2:]
        return lambda token: getattr(token._, name)
    return lambda token: getattr(token, attr)


def phase_decode(model_dir: str, sentences: List[List[str]], attr: str, decode_runs: int,
                 components: Optional[List[str]] = None, warmup_docs: int = 200,
                 meta_keys: Sequence[str] = (),
                 spaces: Optional[List[List[bool]]] = None) -> Dict[str, Any]:
    """Load a trained pipeline, tag Docs made from the given words, time ``nlp.pipe``.

    Meant to run in a fresh process (``common.run_isolated``), which adds
    the process's ``peak_rss_mb``. The Docs are ``Doc(nlp.vocab, words=words)``
    (with ``spaces=`` where they are given), made fresh for every timed run and
    not timed; ``nlp.pipe`` runs with ``batch_size=1000`` after an untimed
    warm-up (``common.time_pipe``).

    Parameters
    ----------
    model_dir : str
        The pipeline directory (e.g. ``.../model-best``).
    sentences : list of list of str
        The words of each test sentence.
    attr : str
        Where the prediction is: a token attribute (``"tag_"`` for spaCy's
        tagger, ``"pos_"`` for a ``crf_tagger`` with target ``pos``,
        ``"_.NAME"`` for an extension attribute), or ``"ents"`` for the
        entities of each doc as sorted ``(start, end, label)`` token spans.
    decode_runs : int
        Timed runs; the best is reported.
    components : list of str, optional
        The components whose directories are the model's weights (default:
        every component of the pipeline).
    warmup_docs : int
        Docs of the untimed warm-up run.
    meta_keys : sequence of str
        Scores to copy from ``meta.json``'s ``performance`` (the dev scores
        of the saved model).
    spaces : list of list of bool, optional
        Whether whitespace follows each word, as the test text has it (by
        default a space after every word, as ``Doc(words)`` puts it).

    Returns
    -------
    dict
        ``pred`` (one label list, or span list, per sentence, from the last timed run),
        decode times and ``decode_tokens_per_s`` of the best run, its CPU
        share, load and warm-up times, ``weights_bytes`` (the components'
        directories), ``pipeline_bytes`` (the whole directory),
        ``component_bytes`` and ``dev_scores_meta``.
    """
    import spacy
    import srsly
    from spacy.tokens import Doc

    t0 = time.perf_counter()
    nlp = spacy.load(model_dir)
    load_s = time.perf_counter() - t0

    def make_docs() -> List[Doc]:
        if spaces is None:
            return [Doc(nlp.vocab, words=words) for words in sentences]
        return [Doc(nlp.vocab, words=words, spaces=gaps)
                for words, gaps in zip(sentences, spaces)]

    timing = time_pipe(nlp, make_docs, decode_runs, warmup_docs=warmup_docs)
    times, shares, docs = timing["times"], timing["shares"], timing["docs"]
    if attr == "ents":
        pred = [sorted((e.start, e.end, e.label_) for e in doc.ents) for doc in docs]
    else:
        get = _token_getter(attr)
        pred = [[get(token) or "" for token in doc] for doc in docs]
    n_tokens = sum(len(words) for words in sentences)
    best = min(times)
    component_bytes = {name: disk_bytes(Path(model_dir) / name) for name in nlp.pipe_names}
    meta = srsly.read_json(Path(model_dir) / "meta.json")
    return {
        "model_dir": model_dir,
        "pipeline": list(nlp.pipe_names),
        "attr": attr,
        "load_s": load_s,
        "warmup_s": timing["warmup_s"],
        "n_test_docs": len(sentences),
        "n_test_tokens": n_tokens,
        "decode_s": best,
        "decode_runs_s": times,
        "decode_cpu_share": shares[times.index(best)],
        "decode_tokens_per_s": n_tokens / best if best else None,
        "pred": pred,
        "component_bytes": component_bytes,
        "weights_bytes": sum(component_bytes[c] for c in (components or nlp.pipe_names)),
        "pipeline_bytes": disk_bytes(Path(model_dir)),
        "dev_scores_meta": {k: meta.get("performance", {}).get(k) for k in meta_keys},
    }
