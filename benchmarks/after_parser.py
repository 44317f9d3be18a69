"""EWT UPOS and UNER NER: the chain and the tree CRF after a trained spaCy parser, against gold trees.

A user's trees come from a parser, not from the treebank. Given a parser
trained with ``spacy train`` (spaCy's default parser config), this trains,
each with ``spacy train`` in a fresh process on UD English EWT r2.9 train
(dev for model selection) and scores on test with ``spacy_crf.evaluate``:

* the chain CRF with no parser (``configs/ewt_upos.cfg``);
* the chain CRF after the parser (``[parser, crf_tagger]``, the parser
  frozen and annotating, so the CRF trains on its sentence boundaries);
* the chain CRF with tree features after the parser (``configs/ewt_upos_tree.cfg``
  at ``structure = "chain"``: label interactions along the sentence, features
  from the predicted tree);
* the tree CRF after the parser (``configs/ewt_upos_tree.cfg`` over the
  parser's predicted trees, in training and at test);
* the chain and the tree CRF as two experts after the parser
  (``structure = "chain_tree"``);
* the tree CRF over gold trees copied from the treebank (the oracle);
* what a new user gets (EWT UPOS): ``nlp.add_pipe("crf_tagger", ...)`` with the
  factory defaults, on a blank pipeline and with ``structure = "chain_tree"``
  behind the loaded parser, trained by ``nlp.initialize()``'s optimizer and a
  plain ``nlp.update`` loop (``FACTORY_UPOS``).

It also scores the parser itself on test (UAS, LAS). With ``--task ner``, on
Universal NER English EWT (the same sentences, joined to the EWT trees by
``python -m spacy_crf.convert uner ... --conllu``): the chain with no parser,
after the parser, with tree features read from the parser's trees, and with
tree features read from the gold trees (oracle); entities are spans, which a
tree CRF does not label. With ``--task deprel``, on EWT: the relation of every
token over the parser's predicted heads (target ``dep``: the CRF relabels the
parser's arcs), chain and tree, against the parser's own relations, and the
tree over gold heads (oracle); no tagger runs, so these CRFs read words, not POS.

Every row also gives the decode speed of its whole pipeline over the test
texts (``nlp.pipe``, best of 3), and without the parser's time (the upstream
components timed alone, subtracted).

    python -m spacy convert .../en_ewt-ud-{train,dev,test}.conllu corpus/ewt -c conllu -n 1
    python -m spacy init config parser.cfg --lang en --pipeline parser --optimize efficiency
    python -m spacy train parser.cfg --output training/parser --paths.train ... --paths.dev ...
    python benchmarks/after_parser.py --parser training/parser/model-best --corpus corpus/ewt \\
        --out benchmarks/results/after_parser.json
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (REPO_ROOT, environment, log, make_summary, print_rows, summary_row,  # noqa: E402
                    write_json)

CONFIGS = REPO_ROOT / "configs"


def after_parser_config(base: Path, parser: Path, out: Path, structure: Optional[str] = None,
                        sequence: str = "sentence") -> Path:
    """``base`` with the parser's pipeline (its tok2vec and parser) sourced in front
    of the crf_tagger, frozen and annotating, and no gold trees copied from the corpus;
    ``structure`` overrides the crf_tagger's; ``sequence`` is a chain per predicted
    sentence unless "doc" (the rows were measured per sentence, the default then)."""
    from spacy.util import load_config

    config = load_config(base, interpolate=False)
    upstream = load_config(parser / "config.cfg", interpolate=False)["nlp"]["pipeline"]  # tok2vec, parser
    config["nlp"]["pipeline"] = [*upstream, "crf_tagger"]
    for name in upstream:
        config["components"][name] = {"source": str(parser.resolve())}
    for split in ("train", "dev"):
        config["corpora"][split]["augmenter"] = None
    config["training"]["frozen_components"] = list(upstream)
    config["training"]["annotating_components"] = list(upstream)
    if structure:
        config["components"]["crf_tagger"]["structure"] = structure
    config["components"]["crf_tagger"]["sequence"] = sequence
    config.to_disk(out)
    return out


PARSER_ABOUT = ("spaCy's default parser config (--optimize efficiency), trained with spacy train "
                "on EWT train (4000 steps, configs/ewt_parser.cfg)")
DECODE_NOTE = ("decode tok/s: the whole pipeline (parser included where there is one) over the "
               "test texts with nlp.pipe, best of 3; in brackets, without the parser's time: the "
               "crf_tagger alone over docs the parser has annotated, best of 3.")
#: per task: title, metric, the corpus files (train, dev, test) and the configs
TASKS = {
    "upos": {"title": "UD English EWT UPOS", "metric": "acc",
             "files": ("en_ewt-ud-train.spacy", "en_ewt-ud-dev.spacy", "en_ewt-ud-test.spacy")},
    "ner": {"title": "Universal NER English EWT", "metric": "F1",
            "files": ("train.spacy", "dev.spacy", "test.spacy")},
    "deprel": {"title": "UD English EWT relations (DEPREL)", "metric": "acc",
               "files": ("en_ewt-ud-train.spacy", "en_ewt-ud-dev.spacy", "en_ewt-ud-test.spacy")},
}
#: the relation labeller's features without POS (the parser's pipeline has no
#: tagger): words, shapes and suffixes around the token and at its head
DEPREL_TEMPLATES = ["NORM[-2..2]", "NORM[-1]|NORM[0]", "NORM[0]|NORM[1]", "SHAPE[-1..1]",
                    "SUFFIX3", "IS_PUNCT", "head:NORM", "head:SHAPE", "NORM|head:NORM",
                    "SUFFIX3|head:NORM", "HEAD_DIST", "HEAD_DIST|NORM", "HEAD_DIST|head:NORM",
                    "N_CHILDREN", "N_CHILDREN|NORM", "DEPTH"]
#: tree features a chain reads from a parse (the UNER config's own tree-feature
#: variant also reads gold POS, which no parser here predicts)
NER_TREE_FEATURES = ["DEP", "head:NORM", "head:SHAPE", "DEP|head:DEP", "HEAD_DIST"]


def with_tree_features(base: Path, out: Path, copy_trees: bool) -> Path:
    """``base`` (a chain) with :data:`NER_TREE_FEATURES` added to its templates;
    with ``copy_trees`` the corpus's gold trees are copied onto the docs (oracle)."""
    from spacy.util import load_config

    config = load_config(base, interpolate=False)
    model = config["components"]["crf_tagger"]["model"]
    model["templates"] = list(model["templates"]) + NER_TREE_FEATURES
    if copy_trees:
        for split in ("train", "dev"):
            config["corpora"][split]["augmenter"] = {"@augmenters": "spacy-crf.copy_attrs.v1",
                                                     "attrs": ["HEAD", "DEP"]}
    config.to_disk(out)
    return out


def deprel_config(out: Path, structure: str, gold_heads: bool) -> Path:
    """``configs/ewt_deprel_tree.cfg`` with :data:`DEPREL_TEMPLATES` at ``structure``;
    with ``gold_heads`` the treebank's trees are copied onto the docs (oracle),
    else the docs have none (a parser in front gives them)."""
    from spacy.util import load_config

    config = load_config(CONFIGS / "ewt_deprel_tree.cfg", interpolate=False)
    component = config["components"]["crf_tagger"]
    component["structure"] = structure
    component["model"]["templates"] = list(DEPREL_TEMPLATES)
    augmenter = ({"@augmenters": "spacy-crf.copy_attrs.v1", "attrs": ["HEAD", "DEP"]}
                 if gold_heads else None)
    for split in ("train", "dev"):
        config["corpora"][split]["augmenter"] = augmenter
    config.to_disk(out)
    return out


def systems_of(task: str, parser: Path, workdir: Path) -> Dict[str, Path]:
    """The configs of every row of ``task``, after the parser or not."""
    if task == "deprel":
        return {
            "chain over the parser's predicted heads": after_parser_config(
                deprel_config(workdir / "deprel_chain.cfg", "chain", False), parser,
                workdir / "deprel_chain_after_parser.cfg"),
            "tree over the parser's predicted heads": after_parser_config(
                deprel_config(workdir / "deprel_tree.cfg", "tree", False), parser,
                workdir / "deprel_tree_after_parser.cfg"),
            "tree over gold heads (oracle)": deprel_config(workdir / "deprel_tree_oracle.cfg",
                                                           "tree", True),
        }
    if task == "upos":
        return {
            "chain, no parser": CONFIGS / "ewt_upos.cfg",
            "chain after the parser": after_parser_config(CONFIGS / "ewt_upos.cfg", parser,
                                                          workdir / "chain_after_parser.cfg"),
            "chain after the parser, one sequence per doc": after_parser_config(
                CONFIGS / "ewt_upos.cfg", parser, workdir / "chain_after_parser_doc.cfg",
                sequence="doc"),
            "chain + tree features after the parser": after_parser_config(
                CONFIGS / "ewt_upos_tree.cfg", parser, workdir / "chain_treefeat_after_parser.cfg",
                structure="chain"),
            "tree over the parser's predicted trees": after_parser_config(
                CONFIGS / "ewt_upos_tree.cfg", parser, workdir / "tree_after_parser.cfg"),
            "chain and tree as two experts (chain_tree) after the parser": after_parser_config(
                CONFIGS / "ewt_upos_tree.cfg", parser, workdir / "chain_tree_after_parser.cfg",
                structure="chain_tree", sequence="doc"),
            "tree over gold trees (oracle)": CONFIGS / "ewt_upos_tree.cfg",
        }
    # entities are spans: a tree CRF does not label them (E018), so the tree
    # enters through the chain's features only
    base = CONFIGS / "uner_ner.cfg"
    treefeat = with_tree_features(base, workdir / "ner_treefeat.cfg", copy_trees=False)
    return {
        "chain, no parser": base,
        "chain after the parser": after_parser_config(base, parser,
                                                      workdir / "ner_chain_after_parser.cfg"),
        "chain after the parser, one sequence per doc": after_parser_config(
            base, parser, workdir / "ner_chain_after_parser_doc.cfg", sequence="doc"),
        "chain + tree features after the parser": after_parser_config(
            treefeat, parser, workdir / "ner_chain_treefeat_after_parser.cfg"),
        "chain + tree features over gold trees (oracle)": with_tree_features(
            base, workdir / "ner_treefeat_oracle.cfg", copy_trees=True),
    }


def train_and_score(name: str, config: Path, corpus: Path, workdir: Path,
                    task: str = "upos") -> Dict[str, Any]:
    """spacy train (whole process timed), then spacy_crf.evaluate on test."""
    out = workdir / f"{task}_{name.replace(' ', '_')}"
    train, dev, test = TASKS[task]["files"]
    paths = ["--paths.train", str(corpus / train), "--paths.dev", str(corpus / dev)]
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "spacy", "train", str(config), "--output", str(out),
                          *paths], capture_output=True, text=True)
    train_s = time.perf_counter() - start
    if run.returncode:
        raise SystemExit(f"{name}: spacy train failed\n{run.stderr[-3000:]}")
    return score_model(name, out / "model-best", corpus / test, workdir / f"{out.name}.json",
                       train_s)


def score_model(name: str, model: Path, test: Path, scores: Path,
                train_s: float) -> Dict[str, Any]:
    """spacy_crf.evaluate of ``model`` on ``test`` (raw text, report into
    ``scores``), and its decode speeds."""
    import srsly

    run = subprocess.run([sys.executable, "-m", "spacy_crf.evaluate", str(model), str(test),
                          "--output", str(scores)], capture_output=True, text=True)
    if run.returncode:
        raise SystemExit(f"{name}: evaluate failed\n{run.stderr[-3000:]}")
    result = srsly.read_json(scores)
    return {"score": result["crf_score"], "train_s": train_s, "evaluate": result,
            "decode": decode_speed(model, test)}


#: the factory-default rows of EWT UPOS: what a new user gets from
#: nlp.add_pipe("crf_tagger", config={"target": "pos", ...}), nlp.initialize()'s
#: optimizer and a plain nlp.update loop (benchmarks/defaults.py), the parser in
#: front where there is one; name -> (after the parser, component settings)
FACTORY_UPOS = {
    "chain, no parser, factory defaults (nlp.update loop)": (False, {}),
    "chain_tree after the parser, factory defaults (nlp.update loop)":
        (True, {"structure": "chain_tree"}),
}
FACTORY_EPOCHS, FACTORY_BATCH = 5, 32


def phase_factory(parser: Optional[str], train: str, settings: Dict[str, Any],
                  out: str) -> Dict[str, Any]:
    """Train a factory-default crf_tagger (behind ``parser``'s pipeline if given)
    on ``train`` with the plain loop, and save the pipeline to ``out``. Only the
    crf_tagger is initialized and updated (``nlp.select_pipes``), so the loaded
    parser stays as trained; it annotates the training docs once, as a frozen
    annotating component would in every epoch of spacy train (the same trees)."""
    import spacy
    from spacy.tokens import DocBin
    from spacy.training import Example

    from spacy_crf.util import tokens_only

    from defaults import update_loop

    nlp = spacy.load(parser) if parser else spacy.blank("en")
    nlp.add_pipe("crf_tagger", config={"target": "pos", **settings})
    gold = list(DocBin().from_disk(train).get_docs(nlp.vocab))
    start = time.perf_counter()
    words = (tokens_only(ref, nlp.vocab) for ref in gold)
    with nlp.select_pipes(disable=["crf_tagger"]):
        predicted = list(nlp.pipe(words, batch_size=256))
    examples = [Example(doc, ref) for doc, ref in zip(predicted, gold)]
    with nlp.select_pipes(enable=["crf_tagger"]):
        update_loop(nlp, examples, FACTORY_EPOCHS, FACTORY_BATCH)
    train_s = time.perf_counter() - start
    nlp.to_disk(out)
    return {"train_s": train_s}


def factory_and_score(name: str, parser: Optional[Path], corpus: Path,
                      workdir: Path, settings: Dict[str, Any]) -> Dict[str, Any]:
    """A factory-default row of EWT UPOS: trained in a fresh process, then scored
    as the spacy train rows are."""
    from common import run_isolated

    out = workdir / f"upos_{name.replace(' ', '_')}"
    train, _, test = TASKS["upos"]["files"]
    trained = run_isolated(phase_factory, str(parser) if parser else None, str(corpus / train),
                           settings, str(out))
    return score_model(name, out, corpus / test, workdir / f"{out.name}.json", trained["train_s"])


def decode_speed(model: Path, test: Path, runs: int = 3) -> Dict[str, Any]:
    """Tokens/s of the whole pipeline over the test texts (``nlp.pipe``, best of
    ``runs`` after a warm-up), and of its crf_tagger alone over docs the
    components before it (the parser and its tok2vec) have already annotated:
    the pipeline's speed without the parser's time, measured, not subtracted.
    An oracle's docs get the gold trees its training copied (not timed)."""
    import spacy
    from spacy.tokens import DocBin
    from spacy.training import Example

    from common import Stopwatch, time_pipe
    from spacy_crf.augmenters import create_copy_attrs
    from spacy_crf.evaluation import training_copy

    nlp = spacy.load(model)
    references = list(DocBin().from_disk(test).get_docs(nlp.vocab))
    has_crf = "crf_tagger" in nlp.pipe_names
    copy = training_copy(nlp) if has_crf else None
    augment = create_copy_attrs(copy) if copy else None

    def make_docs():
        if augment is None:
            return [nlp.make_doc(ref.text) for ref in references]
        return [next(iter(augment(nlp, Example(nlp.make_doc(ref.text), ref)))).predicted
                for ref in references]

    n_tokens = sum(len(doc) for doc in make_docs())
    whole_s = min(time_pipe(nlp, make_docs, runs, 50)["times"])
    crf_s = None
    if has_crf:
        crf = nlp.get_pipe("crf_tagger")
        with nlp.select_pipes(disable=["crf_tagger"]):
            upstream = list(nlp.pipe(make_docs(), batch_size=1000))  # not timed
        times = []
        for _ in range(max(1, runs)):
            with Stopwatch() as watch:
                list(crf.pipe(upstream, batch_size=1000))
            times.append(watch.wall_s)
        crf_s = min(times)
    return {"tokens": n_tokens, "whole_s": whole_s, "crf_s": crf_s,
            "upstream": [name for name in nlp.pipe_names if name != "crf_tagger"],
            "tokens_per_s": n_tokens / whole_s,
            "tokens_per_s_without_parser": n_tokens / crf_s if crf_s else None}


def remeasure_decode(report_path: Path, workdir: Path, corpus: Path, task: str,
                     parser: Path) -> None:
    """Measure the decode speeds of a finished run again (its models in
    ``workdir``), e.g. on a quiet machine, and rewrite the report's rows."""
    import srsly

    report = srsly.read_json(report_path)
    test = corpus / TASKS[task]["files"][2]
    for name, result in report["systems"].items():
        log(f"decode: {name}")
        result["decode"] = decode_speed(workdir / f"{task}_{name.replace(' ', '_')}" / "model-best",
                                        test)
    parsed = report.get("parser")
    if parsed and "decode" in parsed:
        parsed["decode"] = decode_speed(parser, test)
    rows = report["summary"]["rows"]
    for row in rows:
        result = report["systems"].get(row["system"])
        if result is not None:
            row["decode_tokens_per_s"] = result["decode"]["tokens_per_s"]
            row["note"] = row_note(result, task)
        elif parsed and "decode" in parsed:  # the parser's own row
            row["decode_tokens_per_s"] = parsed["decode"]["tokens_per_s"]
    notes = report["summary"]["notes"]
    report["summary"]["notes"] = [DECODE_NOTE if note.startswith("decode tok/s:") else note
                                  for note in notes]
    report["decode_remeasured"] = {"environment": environment()}
    write_json(report_path, report)
    print_rows(rows, report["summary"]["notes"][-1:])


def parser_scores(parser: Path, corpus: Path) -> Dict[str, Any]:
    """UAS / LAS / sentence F of the parser on test (spaCy's own scorer), the
    accuracy of its relations on every token (as the crf_tagger's ``dep_acc``
    counts them), and its decode speed."""
    import spacy
    from spacy.scorer import Scorer
    from spacy.tokens import DocBin
    from spacy.training import Example

    nlp = spacy.load(parser)
    docs = DocBin().from_disk(corpus / "en_ewt-ud-test.spacy").get_docs(nlp.vocab)
    examples = [Example(nlp.make_doc(doc.text), doc) for doc in docs]
    scores = nlp.evaluate(examples)
    predicted = [Example(nlp(eg.predicted.text), eg.reference) for eg in examples]
    dep_acc = Scorer.score_token_attr(predicted, "dep")["dep_acc"]
    return {"uas": scores["dep_uas"], "las": scores["dep_las"], "sents_f": scores["sents_f"],
            "dep_acc": dep_acc,
            "decode": decode_speed(parser, corpus / "en_ewt-ud-test.spacy")}


def default_name(task: str) -> str:
    """The report's benchmark name for ``task`` (and its JSON file's stem)."""
    return "after_parser" if task == "upos" else f"after_parser_{task}"


def row_note(result: Dict[str, Any], task: str) -> str:
    """A row's bracket: its speed without the parser's time, and LAS for relations."""
    parts = []
    without = result["decode"]["tokens_per_s_without_parser"]
    if without and result["decode"].get("upstream"):
        parts.append(f"{without:,.0f} tok/s without the parser")
    if task == "deprel" and "dep_las" in result["evaluate"]:
        parts.append(f"LAS {100 * result['evaluate']['dep_las']:.2f}")
    return "; ".join(parts)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parser", type=Path, required=True, help="a trained spaCy parser")
    parser.add_argument("--corpus", type=Path, required=True,
                        help="directory with en_ewt-ud-{train,dev,test}.spacy (for --task ner: "
                             "{train,dev,test}.spacy of UNER joined to the EWT trees)")
    parser.add_argument("--task", choices=list(TASKS), default="upos")
    parser.add_argument("--ewt-corpus", type=Path, default=None,
                        help="for --task ner: where the parser is scored (EWT .spacy files)")
    parser.add_argument("--parser-about", default=PARSER_ABOUT,
                        help="how the parser was trained, for the report's notes")
    parser.add_argument("--name", default=None,
                        help="the report's benchmark name (default: after_parser[_TASK])")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--systems", nargs="+", default=None,
                        help="run only the rows whose names contain one of these strings "
                             "(with --name, so the report does not replace the full one)")
    parser.add_argument("--decode-only", action="store_true",
                        help="measure the decode speeds of the finished run in --workdir again "
                             "(e.g. on a quiet machine) and rewrite --out's rows")
    args = parser.parse_args(argv)
    if args.decode_only:
        if not (args.out and args.out.exists() and args.workdir):
            raise SystemExit("--decode-only needs --out (the run's report) and --workdir (its models)")
        remeasure_decode(args.out, args.workdir, args.corpus, args.task, args.parser)
        return 0
    began = time.perf_counter()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="after_parser_"))
    workdir.mkdir(parents=True, exist_ok=True)
    systems = systems_of(args.task, args.parser, workdir)
    if args.systems:
        systems = {name: config for name, config in systems.items()
                   if any(part in name for part in args.systems)}
        if not systems:
            raise SystemExit(f"--systems {args.systems} matches none of: {list(systems_of(args.task, args.parser, workdir))}")
    factory = {name: row for name, row in FACTORY_UPOS.items()
               if args.task == "upos" and (not args.systems
                                           or any(part in name for part in args.systems))}
    task = TASKS[args.task]
    results: Dict[str, Dict[str, Any]] = {}
    for name, config in systems.items():
        log(name)
        results[name] = train_and_score(name, config, args.corpus, workdir, args.task)
        log(f"  {100 * results[name]['score']:.2f} in {results[name]['train_s']:.1f} s")
    for name, (after_parser, settings) in factory.items():
        log(name)
        results[name] = factory_and_score(name, args.parser if after_parser else None,
                                          args.corpus, workdir, settings)
        log(f"  {100 * results[name]['score']:.2f} in {results[name]['train_s']:.1f} s")
    parsed = parser_scores(args.parser, args.ewt_corpus or args.corpus)
    log(f"parser on test: {parsed}")
    rows = [summary_row(task["title"], name, task["metric"], r["score"], r["train_s"],
                        r["decode"]["tokens_per_s"], None, None, None, note=row_note(r, args.task))
            for name, r in results.items()]
    if args.task == "deprel":
        rows.insert(0, summary_row(task["title"], "the parser's own relations", "acc",
                                   parsed["dep_acc"], None, parsed["decode"]["tokens_per_s"],
                                   None, None, None, note=f"LAS {100 * parsed['las']:.2f}"))
    notes = [f"The parser: {args.parser_about}; on test UAS "
             f"{100 * parsed['uas']:.2f}, LAS {100 * parsed['las']:.2f}, sentence F "
             f"{100 * parsed['sents_f']:.2f}.",
             "After the parser: [parser, crf_tagger] with the parser frozen and annotating, so "
             "the CRF trains and is tested on its predicted trees and sentence boundaries (a "
             "chain per predicted sentence, sequence = \"sentence\"; 'one sequence per doc' is "
             "sequence = \"doc\", the default now, which ignores them); the oracle copies the treebank's trees onto the docs in "
             "training and at test.",
             "train s is the whole spacy train process (with the parser's predictions for the "
             "rows after it); scores from python -m spacy_crf.evaluate on test.",
             "Test docs are read as spacy_crf.evaluate reads them: from the raw text, tokenized by "
             "spaCy, and aligned to the treebank's tokens; so the chain's score here and on the "
             "gold tokens in the orders and trainers benchmarks come from the same config, read two ways."]
    if factory:
        notes.append(f"factory defaults rows: nlp.add_pipe(\"crf_tagger\", config={{\"target\": "
                     f"\"pos\", ...}}) behind the loaded parser (or on a blank pipeline), "
                     f"nlp.initialize()'s optimizer and a plain nlp.update loop ({FACTORY_EPOCHS} "
                     f"epochs, batches of {FACTORY_BATCH} sentences, train only; the crf_tagger "
                     f"alone initialized and updated, the parser annotating the training docs "
                     f"once); train s is the parse and the loop; the other rows are the shipped "
                     f"configs with spacy train.")
    notes.append(DECODE_NOTE)
    if args.task == "deprel":
        notes[1] = ("Over predicted heads: [parser, crf_tagger] with the parser frozen and "
                    "annotating; the crf_tagger (target dep) relabels the parser's arcs, keeping "
                    "its heads. acc is the relation of every token (punctuation included, as "
                    "dep_acc counts it); LAS is spaCy's (heads and relations, punctuation "
                    "excluded). No tagger runs, so the CRFs read words, shapes and suffixes "
                    "(benchmarks/after_parser.py DEPREL_TEMPLATES), not POS.")
    if args.task == "ner":
        notes[1] = ("After the parser: [parser, crf_tagger] with the parser frozen and annotating; "
                    "entities are spans, which a tree CRF does not label, so the tree enters "
                    "as the chain's features (" + ", ".join(NER_TREE_FEATURES) + "), read "
                    "from the parser's trees, or from the gold trees (oracle).")
        notes[3] = ("Test docs are read from the raw text, tokenized by spaCy and aligned to "
                    "the corpus's tokens, as spacy_crf.evaluate reads them.")
    name = args.name or default_name(args.task)
    command = {"upos": "python benchmarks/after_parser.py --parser PARSER --corpus corpus/ewt "
                       "--out benchmarks/results/after_parser.json",
               "ner": "python benchmarks/after_parser.py --task ner --parser PARSER --corpus "
                      "corpus/uner --ewt-corpus corpus/ewt --out "
                      "benchmarks/results/after_parser_ner.json",
               "deprel": "python benchmarks/after_parser.py --task deprel --parser PARSER "
                         "--corpus corpus/ewt --out benchmarks/results/after_parser_deprel.json",
               }[args.task]
    title = f"{task['title'].replace('UD English ', '')} after a trained parser"
    if args.systems:
        command += " --systems " + " ".join(f"'{part}'" for part in args.systems)
    if args.name:  # another parser: say which in the command and the title
        command = (command.replace("--parser PARSER", "--parser PARSER --parser-about TEXT")
                   .replace(f"results/{default_name(args.task)}.json", f"results/{name}.json")
                   + f" --name {name}")
        title = f"{task['title'].replace('UD English ', '')} after a parser: {args.parser_about}"
    if args.systems:  # a subset of the rows: say which, so its section is not another's twin
        title += ": " + ", ".join(args.systems) + " (same run)"
    summary = make_summary(title, command, rows, notes)
    write_json(args.out, {"benchmark": name, "environment": environment(),
                          "parser": parsed, "systems": results, "summary": summary,
                          "benchmark_wall_s": time.perf_counter() - began})
    print_rows(rows, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
