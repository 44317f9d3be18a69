"""Lemmas (target ``lemma``) against spaCy's trainable_lemmatizer, sentence
boundaries (target ``sent_starts``) against spaCy's senter, and a pipeline of
four CRFs against spaCy's pipeline of the same four, in one run (issue #52's
acceptance)::

    python benchmarks/lemma_senter.py --data-dir ../shared/data --tasks lemma lemma_doc --filled-max-steps 4000 --out benchmarks/results/lemma.json
    python benchmarks/lemma_senter.py --data-dir ../shared/data --tasks sents sents_doc sents_lines --out benchmarks/results/senter.json
    python benchmarks/lemma_senter.py --data-dir ../shared/data --tasks pipeline --out benchmarks/results/senter_pipeline.json
    python benchmarks/lemma_senter.py --quick --no-wait --out /tmp/lemma_senter_quick.json   # 300 sentences a split, lemma and sents rows
    python benchmarks/lemma_senter.py --quick --no-wait --tasks pipeline --out /tmp/pipeline_quick.json

UD English EWT (``--data-dir``, folder ``ud_english_ewt``:
``en_ewt-ud-{train,dev,test}.conllu``), trained on train, scored on test. Each
system trains in a fresh process and is decoded in another fresh process, so
peak RSS is per phase. Four tasks, each on its own conversion of the corpus:

* ``lemma``: ``spacy convert -c conllu -n 1`` (a sentence a doc). Rows:

  1. **factory defaults, nlp.update loop**: ``nlp.add_pipe("crf_tagger",
     config={"target": "lemma"})``, ``nlp.initialize()``'s optimizer, 5
     shuffled epochs of ``nlp.update`` in batches of 32 docs;
  2. **factory defaults, spacy train (filled config)**: ``spacy init
     fill-config`` of a config naming only the component and its target,
     trained by ``spacy train`` as filled;
  3. **tuned config, spacy train**: ``configs/ewt_lemma.cfg``;
  4. **spaCy trainable_lemmatizer** (``edit_tree_lemmatizer``): ``spacy init
     config -p trainable_lemmatizer -o efficiency``, ``spacy train`` with a
     fixed step budget (``--spacy-steps``, patience 0), model-best;
  5. **UPOS model**: ``config={"target": "pos"}``, the loop of row 1, for the
     lemma/UPOS ratios of decode tok/s, training s and peak memory.

* ``lemma_doc``: the same rows but the UPOS model's on documents as the corpus
  marks them (each ``# newdoc`` document one doc, as ``sents_doc``), the
  corpus issue #52's acceptance names; ``lemma`` keeps the sentence docs of
  spaCy's own lemmatizer benchmarks beside it.
* ``sents``: ``spacy convert -c conllu -n 10`` (ten consecutive sentences a doc;
  spaCy's converter drops the comment lines, so these docs cross the corpus's
  ``# newdoc`` marks). Rows 1-4 with target ``sent_starts``,
  ``configs/ewt_senter.cfg`` and spaCy's ``senter`` (efficiency config, the
  same step budget, the same docs).
* ``sents_doc``: documents as the corpus marks them: each ``# newdoc``
  document one doc (``common.convert_conllu`` with ``n_sents = 0``: ``spacy
  crf-convert conllu``, spaCy's converter over each document, its sentences
  joined). Rows 1, 3 and 4.
* ``sents_lines``: the same documents with the raw text's line breaks kept: a
  ``"\\n"`` token closes each sentence that a paragraph (``# newpar``)
  follows (``spacy crf-convert conllu --line-breaks``), in the training docs
  and the scored ones, for every row (1, 3 and 4).
* ``pipeline_lines`` (not run unless named): the ``pipeline`` task below on
  docs that keep the raw text's line breaks (``crf-convert conllu -n 10
  --line-breaks``), for training and for the raw text it runs on.
* ``pipeline`` (not run unless named): the ``-n 10`` docs with Universal NER
  English EWT's PER / ORG / LOC entities (``--data-dir``, folder
  ``uner_english_ewt``, the files ``uner.py`` reads) joined to their sentences
  by ``# sent_id`` (``common.add_uner_entities``: a sentence UNER lacks, or has
  with other tokens, keeps its entities unannotated, missing, not "O"; the
  counts are in the report); ``configs/ewt_pipeline.cfg`` (sent_starts, morph,
  lemma and ents CRFs, the factory's defaults, trained together by one ``spacy
  train``) beside spaCy's ``senter``, ``morphologizer``,
  ``trainable_lemmatizer`` and ``ner`` (``spacy init config -p
  senter,morphologizer,trainable_lemmatizer,ner -o efficiency``, the step
  budget), each saved, loaded in a fresh process and run on the raw text of the
  test docs (tokenizer and every component: the whole-pipeline tok/s), scored
  against the gold docs through spaCy's ``Example`` alignment. ``--quick``: the
  first 300 sentences of each split, their entities from the same UNER files.

Every system is scored by one function on Docs made from the gold test words
and their spacing, as ``spacy evaluate`` reads a corpus (spaCy's
``lemmatizer_score``: ``lemma_acc``; ``senter_score``: ``sents_f``; UPOS: token
accuracy; the pipeline rows also ``morphologizer_score`` and
``get_ner_prf``: ``ents_f``), the predictions read back from ``Token.lemma_``,
``Token.is_sent_start`` and ``Token.pos_`` (``spacy_peer.phase_decode``).
Decode tokens/s: ``nlp.pipe`` (batch 1000) over those Docs, best of
``--decode-runs`` after a warm-up. Model MB: the pipeline's component
directories (spaCy's: tok2vec and the component). The summary ends with
issue #52's goals, pass or fail.
"""

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (REPO_ROOT, add_task_arguments, add_uner_entities,  # noqa: E402
                    command_line, convert_conllu, disk_bytes, filled_factory_config, log,
                    make_summary, phase_plain_loop, render_summary, run_benchmark,
                    run_isolated, slow_decodes, summary_row, task_runner, time_pipe,
                    token_accuracy, train_spacy_subprocess, ud_sources, verdict)
from uner import FULL_FILES as UNER_FILES, TRAIN_NOTE as UNER_TRAIN_NOTE, UNER_SUBDIR  # noqa: E402

DATA = {"dir": "ud_english_ewt", "prefix": "en_ewt-ud", "lang": "en"}
PLAIN = "factory defaults, nlp.update loop"
FILLED = "factory defaults, spacy train (filled config)"
UPOS = "UPOS model (target pos), factory defaults, nlp.update loop"
#: the pipeline task's components: each CRF's target and spaCy's pipe for it, in order
PIPELINE = (("sent_starts", "senter"), ("morph", "morphologizer"),
            ("lemma", "trainable_lemmatizer"), ("ents", "ner"))
#: each task: its corpus (sentences a doc, 0 = the corpus's documents), target,
#: tuned config, spaCy's peer pipe, the prediction's token attribute and the rows
TASKS: Dict[str, Dict[str, Any]] = {
    "lemma": {"title": "UD English EWT lemmas", "n_sents": 1, "target": "lemma",
              "config": "ewt_lemma.cfg", "peer": "trainable_lemmatizer", "attr": "lemma_",
              "metric": "lemma_acc", "label": "lemma acc",
              "rows": ["plain", "filled", "tuned", "peer", "upos"]},
    "lemma_doc": {"title": "UD English EWT lemmas, the corpus's documents (# newdoc)",
                  "n_sents": 0, "target": "lemma", "config": "ewt_lemma.cfg",
                  "peer": "trainable_lemmatizer", "attr": "lemma_", "metric": "lemma_acc",
                  "label": "lemma acc", "rows": ["plain", "filled", "tuned", "peer"]},
    "sents": {"title": "UD English EWT sentences, docs of 10 sentences", "n_sents": 10,
              "target": "sent_starts", "config": "ewt_senter.cfg", "peer": "senter",
              "attr": "is_sent_start", "metric": "sents_f", "label": "sents F",
              "rows": ["plain", "filled", "tuned", "peer"]},
    "sents_doc": {"title": "UD English EWT sentences, the corpus's documents (# newdoc)",
                  "n_sents": 0, "target": "sent_starts", "config": "ewt_senter.cfg",
                  "peer": "senter", "attr": "is_sent_start", "metric": "sents_f",
                  "label": "sents F", "rows": ["plain", "tuned", "peer"]},
    "sents_lines": {"title": "UD English EWT sentences, the corpus's documents (# newdoc), "
                           "line breaks kept (# newpar)",
                    "n_sents": 0, "line_breaks": True, "target": "sent_starts",
                    "config": "ewt_senter.cfg", "peer": "senter", "attr": "is_sent_start",
                    "metric": "sents_f", "label": "sents F", "rows": ["plain", "tuned", "peer"]},
    "pipeline": {"title": "UD English EWT raw text, docs of 10 sentences", "n_sents": 10,
                 "target": "pipeline", "config": "ewt_pipeline.cfg",
                 "peer": ",".join(pipe for _, pipe in PIPELINE), "attr": None,
                 "metric": "lemma_acc", "label": "lemma acc", "rows": ["tuned", "peer"],
                 "entities": True},
    "pipeline_lines": {"title": "UD English EWT raw text with its line breaks, docs of 10 "
                              "sentences", "n_sents": 10, "line_breaks": True,
                       "target": "pipeline", "config": "ewt_pipeline.cfg",
                       "peer": ",".join(pipe for _, pipe in PIPELINE), "attr": None,
                       "metric": "lemma_acc", "label": "lemma acc", "rows": ["tuned", "peer"],
                       "entities": True},
}
#: the summary's title, by the targets of the run's tasks (the pipeline's: pipeline_title)
TITLES = {"lemma": "lemmas: the lemma target against spaCy's trainable_lemmatizer",
          "sent_starts": "sentence boundaries: the sent_starts target against spaCy's senter",
          "pipeline": None}
#: issue #52's goals
GOALS = {"lemma_acc": 0.975, "sents_f": 0.910, "sents_over_senter": 0.01,
         "sents_tok_s": 1_000_000}


def is_pipeline(task: str) -> bool:
    """Whether ``task`` trains and runs the pipeline of four components."""
    return TASKS[task]["target"] == "pipeline"


def tuned_name(task: str) -> str:
    if is_pipeline(task):  # no tuning: each component as the factory fills it
        return f"configs/{TASKS[task]['config']} (the factory's defaults), spacy train"
    return f"tuned config (configs/{TASKS[task]['config']}), spacy train"


def peer_name(task: str) -> str:
    return f"spaCy {TASKS[task]['peer']} (efficiency config)"


def pipeline_rows(systems: Dict[str, Any]) -> List[Optional[Dict[str, Any]]]:
    """The pipeline task's rows: the CRFs' and spaCy's, found by what their names
    start with (which pipes they name, and how, changed with the ner)."""
    return [next((r for name, r in systems.items() if name.startswith("spaCy ") == peer), None)
            for peer in (False, True)]


def and_join(words: Sequence[str]) -> str:
    """``a, b and c``."""
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


def pipeline_title(result: Dict[str, Any]) -> str:
    """The pipeline task's heading: the CRFs' targets and spaCy's pipes, those of
    :data:`PIPELINE` in spaCy's pipeline of the run."""
    peer = pipeline_rows(result["systems"])[1]
    pipes = peer["decode"]["pipeline"] if peer else [pipe for _, pipe in PIPELINE]
    pairs = [(target, pipe) for target, pipe in PIPELINE if pipe in pipes]
    return (f"a pipeline of {and_join([t for t, _ in pairs])} CRFs against spaCy's "
            f"{and_join([p for _, p in pairs])}, on raw text")


# -- scoring -----------------------------------------------------------------------

def score_predictions(target: str, test_path: Path,
                      pred: Sequence[Sequence[Any]]) -> Dict[str, Any]:
    """spaCy's own score of a target (``lemmatizer_score`` for "lemma",
    ``senter_score`` for "sent_starts") of predicted lemmas or sentence starts
    set on Docs of the gold test words; for "pos" the accuracy of ``Token.pos_``."""
    import spacy
    from spacy.pipeline.lemmatizer import lemmatizer_score
    from spacy.pipeline.senter import senter_score
    from spacy.tokens import DocBin
    from spacy.training import Example

    from spacy_crf.util import tokens_only

    vocab = spacy.blank(DATA["lang"]).vocab
    gold = list(DocBin().from_disk(test_path).get_docs(vocab))
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} test docs but {len(pred)} predicted")
    if target == "pos":
        return {"pos_acc": token_accuracy([[t.pos_ for t in d] for d in gold], pred)}
    examples = []
    for ref, values in zip(gold, pred):
        if len(ref) != len(values):
            raise ValueError("a predicted doc differs in length from its gold doc")
        doc = tokens_only(ref, vocab)
        for i, (token, value) in enumerate(zip(doc, values)):
            if target == "lemma":
                token.lemma_ = value
            else:
                token.is_sent_start = i == 0 or bool(value)
        examples.append(Example(doc, ref))
    if target == "lemma":
        return dict(lemmatizer_score(examples))
    scores = senter_score(examples)
    return {**{k: scores[k] for k in ("sents_f", "sents_p", "sents_r")},
            **start_prf(gold, pred)}


def start_prf(gold: Sequence[Any], pred: Sequence[Sequence[Any]]) -> Dict[str, float]:
    """Precision, recall and F of the predicted sentence starts as tokens
    (``starts_p``, ``starts_r``, ``starts_f``), each doc's first token left out
    (always a start): the boundaries one by one, where ``sents_f`` counts a
    sentence right only when both its ends are."""
    n_gold = n_pred = n_right = 0
    for ref, values in zip(gold, pred):
        for token, value in zip(ref[1:], values[1:]):
            n_gold += bool(token.is_sent_start)
            n_pred += bool(value)
            n_right += bool(token.is_sent_start) and bool(value)
    p = n_right / n_pred if n_pred else 0.0
    r = n_right / n_gold if n_gold else 0.0
    return {"starts_p": p, "starts_r": r, "starts_f": 2 * p * r / (p + r) if p + r else 0.0}


def decoded(row: Dict[str, Any], model_dir: Path, test_path: Path, target: str, attr: str,
            decode_runs: int) -> Dict[str, Any]:
    """Decode the test words with a saved pipeline in a fresh process and score
    the predictions; the figures merged into ``row``."""
    from spacy.tokens import DocBin
    from spacy.vocab import Vocab

    from spacy_peer import phase_decode

    docs = list(DocBin().from_disk(test_path).get_docs(Vocab()))
    # the words with their spacing, as spacy evaluate reads a corpus (a model
    # that reads the text's spacing, SPACE_AFTER, would read none in Doc(words))
    words = [[t.text for t in d] for d in docs]
    spaces = [[bool(t.whitespace_) for t in d] for d in docs]
    result = run_isolated(phase_decode, str(model_dir), words, attr, decode_runs, spaces=spaces)
    row["scores"] = score_predictions(target, test_path, result.pop("pred"))
    result["model_bytes"] = result.pop("weights_bytes")
    row["decode"] = result
    return row


def whitespace_unscored(gold: Sequence[Any]) -> None:
    """Take the POS, morphology and lemma off the whitespace tokens (the line
    breaks) of the gold docs ``gold``, in place. spaCy's token scores
    (``Scorer.score_token_attr``: pos_acc, morph_acc, lemma_acc) skip a
    predicted whitespace token but count a gold one as missed, so each line
    break would cost every system recall on a token none of them is scored on."""
    for doc in gold:
        for token in doc:
            if token.is_space:
                token.pos = 0
                token.set_morph(None)
                token.lemma = 0


def phase_raw_text(model_dir: str, test_path: str, decode_runs: int) -> Dict[str, Any]:
    """Load a saved pipeline and run it on the raw text of the test docs (the
    tokenizer and every component: ``nlp.pipe``, best of ``decode_runs`` after a
    warm-up); spaCy's scores of its sentences, morphology and lemmas against the
    gold docs (``Example`` aligns the tokenisations), and of its entities
    (``get_ner_prf``: a predicted entity over gold tokens without entity
    annotation counts neither way); the gold line breaks' POS, morphology and
    lemma left out (:func:`whitespace_unscored`). For ``run_isolated``."""
    import spacy
    from spacy.pipeline.lemmatizer import lemmatizer_score
    from spacy.pipeline.morphologizer import morphologizer_score
    from spacy.pipeline.senter import senter_score
    from spacy.scorer import get_ner_prf
    from spacy.tokens import DocBin
    from spacy.training import Example

    nlp = spacy.load(model_dir)
    gold = list(DocBin().from_disk(test_path).get_docs(nlp.vocab))
    texts = [doc.text for doc in gold]
    timing = time_pipe(nlp, lambda: list(texts), decode_runs, warmup_docs=20)
    best = min(timing["times"])
    whitespace_unscored(gold)
    examples = [Example(doc, ref) for doc, ref in zip(timing["docs"], gold)]
    scores = {**senter_score(examples), **morphologizer_score(examples),
              **lemmatizer_score(examples), **get_ner_prf(examples)}
    n_tokens = sum(len(doc) for doc in gold)
    components = {name: disk_bytes(Path(model_dir) / name) for name in nlp.pipe_names}
    return {"scores": {k: scores[k] for k in ("lemma_acc", "sents_f", "sents_p", "sents_r",
                                              "morph_acc", "pos_acc", "ents_f", "ents_p",
                                              "ents_r")},
            "decode": {"decode_s": best, "decode_runs_s": timing["times"],
                       "decode_cpu_share": timing["shares"][timing["times"].index(best)],
                       "decode_tokens_per_s": n_tokens / best, "n_test_tokens": n_tokens,
                       "n_predicted_tokens": sum(len(doc) for doc in timing["docs"]),
                       "pipeline": list(nlp.pipe_names), "model_bytes": sum(components.values()),
                       "component_bytes": components}}


# -- the run -----------------------------------------------------------------------

def run_task(task: str, args: Any, workdir: Path) -> Dict[str, Any]:
    spec = TASKS[task]
    limit = 300 if args.quick else 0
    log(f"{task}: converting (n_sents {spec['n_sents']})")
    out_dir = workdir / f"{task}_corpus"
    sources = ud_sources(args.data_dir, DATA["dir"], DATA["prefix"], out_dir, limit)
    corpus = {split: convert_conllu(src, out_dir, spec["n_sents"], spec.get("line_breaks", False))
              for split, src in sources.items()}
    entities = uner_entities(args.data_dir, sources, corpus) if spec.get("entities") else None
    quick_train = (["--training.max_steps", "100", "--training.eval_frequency", "10"]
                   if args.quick else [])
    names = {"plain": PLAIN, "filled": FILLED, "tuned": tuned_name(task),
             "peer": peer_name(task), "upos": UPOS}
    rows: Dict[str, Dict[str, Any]] = {}
    for key in spec["rows"]:
        name = names[key]
        if args.systems and not any(s in name for s in args.systems):
            continue
        log(f"{task}: {name}")
        out = workdir / f"{task}_{key}"
        if key in ("plain", "upos"):
            target = spec["target"] if key == "plain" else "pos"
            row = run_isolated(phase_plain_loop, DATA["lang"], target, str(corpus["train"]),
                               str(out), args.epochs, args.batch_size)
            model = out
        elif key in ("filled", "tuned"):
            config = (filled_factory_config(workdir, f"{task}_factory", spec["target"])
                      if key == "filled" else REPO_ROOT / "configs" / spec["config"])
            cap = (["--training.max_steps", str(args.filled_max_steps)]
                   if key == "filled" and args.filled_max_steps and not args.quick else [])
            row = train_spacy_subprocess(config, out, corpus, quick_train + cap,
                                         workdir / f"{out.name}.log")
            row["config"] = (str(config.relative_to(REPO_ROOT)) if key == "tuned" else
                             f"spacy init fill-config of crf_tagger target {spec['target']}")
            row["max_steps_cap"] = int(cap[1]) if cap else None
            model = out / "model-best"
        else:
            from spacy_peer import make_default_config, train_fixed_steps

            made = make_default_config(spec["peer"], workdir / f"{spec['peer']}.cfg", DATA["lang"])
            steps = 100 if args.quick else args.spacy_steps
            row = train_fixed_steps(Path(made["path"]), out, corpus, steps,
                                    50 if args.quick else 200, workdir / f"{out.name}.log")
            row["config"] = made["command"]
            model = out / "model-best"
        row["train_peak_rss_mb"] = row.pop("peak_rss_mb")
        upos = key == "upos"
        if is_pipeline(task):
            result = run_isolated(phase_raw_text, str(model), str(corpus["test"]),
                                  args.decode_runs)
            result["decode"]["peak_rss_mb"] = result.pop("peak_rss_mb")
            rows[name] = {**row, **result}
        else:
            rows[name] = decoded(row, model, corpus["test"], "pos" if upos else spec["target"],
                                 "pos_" if upos else spec["attr"], args.decode_runs)
        r = rows[name]
        scores = ", ".join(f"{k} {100 * v:.2f}" for k, v in r["scores"].items() if v is not None)
        log(f"  {name}: {scores}, "
            f"train {r['train_s']:.1f} s, {r['decode']['decode_tokens_per_s']:,.0f} tok/s, "
            f"train peak {r['train_peak_rss_mb']:.0f} MB, "
            f"{r['decode']['model_bytes'] / 2**20:.1f} MB")
    return {"title": spec["title"], "n_sents_a_doc": spec["n_sents"],
            "corpus": {k: str(v.name) for k, v in corpus.items()},
            **({"entities": entities} if entities else {}), "systems": rows}


def uner_entities(data_dir: Path, sources: Dict[str, Path],
                  corpus: Dict[str, Path]) -> Dict[str, Any]:
    """Universal NER English EWT's entities added to each split's docs
    (``common.add_uner_entities``, train from the normalized v0 file as
    ``uner.py`` reads it), with what matched per split."""
    splits: Dict[str, Any] = {}
    for split, path in corpus.items():
        iob2 = data_dir / UNER_SUBDIR / UNER_FILES[split]
        splits[split] = add_uner_entities(path, sources[split], iob2)
        log(f"  UNER entities: {uner_matched(split, splits[split])}"
            + ("" if splits[split]["uner_file"] else f" ({iob2} not found)"))
    if not any(s["entities"] for s in splits.values()):
        log("  no entities: the ner components learn nothing, ents_f is not measured")
    return {"train_note": UNER_TRAIN_NOTE, "splits": splits}


def uner_matched(split: str, stats: Dict[str, Any]) -> str:
    """What ``common.add_uner_entities`` matched in a split, in words."""
    return (f"{split} {stats['matched']:,} of {stats['sentences']:,} sentences "
            f"({stats['unmatched']['no_sent_id']} without their sent_id in UNER, "
            f"{stats['unmatched']['tokens_differ']} with other tokens there), "
            f"{sum(stats['entities'].values()):,} entities")


# -- the summary ---------------------------------------------------------------------

def lemma_senter_summary(report: Dict[str, Any]) -> Dict[str, Any]:
    """The summary table, notes and goals of a run (any of its tasks)."""
    rows, goal_rows = [], []
    for task, result in report["tasks"].items():
        spec = TASKS[task]
        for name, r in result["systems"].items():
            s, d = r["scores"], r["decode"]
            is_upos = name == UPOS
            note = []
            if "max_steps" in r:
                note.append(f"{r['max_steps']} steps")
            if r.get("max_steps_cap"):
                note.append(f"max_steps capped at {r['max_steps_cap']}, a time budget: as "
                            f"filled it trains to patience 1600 or 20000 steps")
            if spec["metric"] == "sents_f":
                note.append(f"P {100 * s['sents_p']:.2f}, R {100 * s['sents_r']:.2f}; "
                            f"start F {100 * s['starts_f']:.2f}")
            if is_pipeline(task):
                note.append(f"sents F {100 * s['sents_f']:.2f}, UFeats {100 * s['morph_acc']:.2f}"
                            f", UPOS {100 * s['pos_acc']:.2f}" + (
                                f", ents F {100 * s['ents_f']:.2f}"
                                if s.get("ents_f") is not None else ""))
            rows.append(summary_row(result["title"], name, "UPOS acc" if is_upos else spec["label"],
                                    s["pos_acc" if is_upos else spec["metric"]], r["train_s"],
                                    d["decode_tokens_per_s"], r["train_peak_rss_mb"],
                                    d.get("peak_rss_mb"), d["model_bytes"], "; ".join(note)))
        goal_rows += goals(task, result)
    pipeline = next((result for task, result in report["tasks"].items() if is_pipeline(task)),
                    {})
    with_ents = any("ents_f" in r["scores"] for r in pipeline.get("systems", {}).values())
    s = report["settings"]
    notes = [f"Test split; train s: initialize + loop for the nlp.update rows, the whole "
             f"spacy train process otherwise; peak RSS of the training process / of a fresh "
             f"decoding process; model MB: the components' directories (spaCy's: tok2vec + "
             f"the component). Plain loop: {s['epochs']} epochs, batches of {s['batch_size']} "
             f"docs; spaCy's components: {s['spacy_steps']} steps (patience 0, model-best).",
             "One scoring for every system: spaCy's lemmatizer_score (lemma_acc), "
             "senter_score (sents_f, the sentences as spans, each right only when both its "
             "ends are; start F: the predicted starts as tokens, each doc's first token "
             "left out)" + (", morphologizer_score and get_ner_prf (ents_f)" if with_ents else
                            " and morphologizer_score") + ", on Docs made from the gold test words"
             + (" and their spacing (as spacy evaluate reads a corpus)"
                if s.get("test_spacing") else "")
             + ("; the pipeline rows run on the test docs' raw text (spaCy's tokenizer, then "
                "every component), their predicted tokens aligned with the gold ones by "
                "spaCy's Example, tok/s counted in gold tokens"
                + ("; the gold line breaks hold no POS, morphology or lemma there (spaCy's "
                   "token scores would count each as missed: whitespace_unscored)."
                   if any(is_pipeline(t) and TASKS[t].get("line_breaks")
                          for t in report["tasks"]) else ".") if pipeline
                else "."),
             *entities_note(pipeline.get("entities")),
             *slow_decodes(report),
             f"Machine load: {report['load']['describe']}; speeds are noisy, accuracies are not."]
    tables = [{"caption": "Issue #52's goals (factory defaults = the nlp.update loop row)",
               "headers": ["goal", "measured", "result"], "rows": goal_rows}] if goal_rows else []
    targets = {TASKS[task]["target"] for task in report["tasks"]}
    title = " and ".join(text or pipeline_title(pipeline) for target, text in TITLES.items()
                         if target in targets)
    return make_summary(title[0].upper() + title[1:], report["command"], rows, notes, tables)


def entities_note(entities: Optional[Dict[str, Any]]) -> List[str]:
    """The pipeline task's note on its entities: what UNER matched, split by split."""
    if not entities:
        return []
    counts = "; ".join(uner_matched(split, s) for split, s in entities["splits"].items())
    return [f"Entities: Universal NER English EWT's PER / ORG / LOC joined to the UD sentences "
            f"by sent_id where the tokens agree: {counts}. The other sentences keep their "
            f"entities unannotated (missing, not O): no training signal there, and get_ner_prf "
            f"counts no prediction on them. {entities['train_note']}."]


def goals(task: str, result: Dict[str, Any]) -> List[List[str]]:
    """Issue #52's goals that this task's rows measure: pass / fail, or the
    measured ratio where the goal is a comparison without a bound."""
    systems = result["systems"]
    if is_pipeline(task):
        ours, theirs = pipeline_rows(systems)
        if not (ours and theirs):
            return []
        mine, other = (r["decode"]["decode_tokens_per_s"] for r in (ours, theirs))
        text = " (the text with its line breaks)" if TASKS[task].get("line_breaks") else ""
        return [[f"CRF pipeline's raw-text tok/s against spaCy's pipeline's{text}",
                 f"{mine / other:.2f}x ({mine:,.0f} / {other:,.0f})", "reported"]]
    if PLAIN not in systems:
        return []
    plain, spec = systems[PLAIN], TASKS[task]
    score, tok_s = plain["scores"][spec["metric"]], plain["decode"]["decode_tokens_per_s"]
    title = result["title"].split(", ", 1)
    where = f"{title[1]}: " if len(title) > 1 else ""
    if spec["target"] == "lemma":
        out = [[f"{where}lemma_acc >= {100 * GOALS['lemma_acc']:.1f}", f"{100 * score:.2f}"
                + (f" (filled config: {100 * systems[FILLED]['scores']['lemma_acc']:.2f})"
                   if FILLED in systems else ""), verdict(score >= GOALS["lemma_acc"])]]
        upos = systems.get(UPOS)
        if upos:
            for what, mine, theirs, fmt in (
                    ("decode tok/s", tok_s, upos["decode"]["decode_tokens_per_s"], ",.0f"),
                    ("train s", plain["train_s"], upos["train_s"], ".1f"),
                    ("peak training RSS MB", plain["train_peak_rss_mb"],
                     upos["train_peak_rss_mb"], ",.0f")):
                out.append([f"{what} against the UPOS model's", f"{mine / theirs:.2f}x "
                            f"({mine:{fmt}} / {theirs:{fmt}})", "reported"])
        return out
    starts = plain["scores"]["starts_f"]
    out = [[f"{where}sents_f >= {100 * GOALS['sents_f']:.1f}", f"{100 * score:.2f}",
            verdict(score >= GOALS["sents_f"])],
           [f"{where}start F (the boundaries as tokens) >= {100 * GOALS['sents_f']:.1f}",
            f"{100 * starts:.2f}", verdict(starts >= GOALS["sents_f"])]]
    peer = systems.get(peer_name(task))
    if peer:
        theirs = peer["scores"]["sents_f"]
        out.append([f"{where}sents_f >= spaCy senter's + 1", f"{100 * score:.2f} vs "
                    f"{100 * theirs:.2f}", verdict(score >= theirs + GOALS["sents_over_senter"])])
    share = plain["decode"].get("decode_cpu_share")
    out.append([f"{where}decode >= {GOALS['sents_tok_s']:,} tok/s", f"{tok_s:,.0f}" + (
        f" (CPU share {share:.2f}: {tok_s / share:,.0f} a CPU second)" if share else ""),
        verdict(tok_s >= GOALS["sents_tok_s"])])
    return out


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_task_arguments(parser, list(TASKS), ["lemma", "sents", "sents_doc", "sents_lines"])
    parser.add_argument("--spacy-steps", type=int, default=2000,
                        help="training steps of spaCy's trainable_lemmatizer and senter")
    parser.add_argument("--filled-max-steps", type=int, default=0,
                        help="cap the filled config's training at this many steps (a time "
                             "budget; 0: as filled, max_steps 20000 and patience 1600)")
    args = parser.parse_args(argv)
    command = command_line("lemma_senter.py", args, parser,
                           ("tasks", "spacy_steps", "filled_max_steps", "epochs", "batch_size"))
    settings = {"epochs": args.epochs, "batch_size": args.batch_size,
                "spacy_steps": 100 if args.quick else args.spacy_steps,
                "filled_max_steps": args.filled_max_steps,
                "decode_runs": args.decode_runs, "goals": GOALS,
                # the test Docs have the text's spacing (runs before had Doc(words) alone)
                "test_spacing": True}
    run = task_runner("lemma_senter", command, settings, args.tasks,
                      lambda task, workdir: run_task(task, args, workdir), lemma_senter_summary)
    return run_benchmark(args, [args.data_dir / DATA["dir"]], "lemma_senter_bench_", run,
                         lambda report: print(render_summary(report["summary"])))


if __name__ == "__main__":
    sys.exit(main())
