"""Universal NER English EWT (PER / ORG / LOC): spacy-crf's FeatureCRF vs
sklearn-crfsuite vs spaCy's own ``ner``, side by side in one run.

Every system is trained on train, evaluated on test; the two spaCy systems use
dev for model selection (``model-best``). Data (``--data-dir``, default
``../shared/data`` from the repo root, folder ``uner_english_ewt``):

    train  en_ewt-ud-train.v0-normalized.iob2   the NORMALIZED PRE-RELEASE v0 train
           (UNER's first commit, *-OTH / B-O set to O), NOT the official UNER v1 train
           (see uner_english_ewt/SOURCE.md); dev / test are the official v1 files
    dev    en_ewt-ud-dev.iob2
    test   en_ewt-ud-test.iob2

``--quick`` uses the shipped sample ``assets/ewt_sample/en_ewt-{train,dev,test}.iob2``.

Systems
1. spacy-crf FeatureCRF: ``python -m spacy train configs/uner_ner.cfg`` (a
   subprocess, wall clock), ``model-best`` evaluated on test.
2. sklearn-crfsuite with the same features: ``configs/uner_ner.cfg``'s templates
   are read from the config and rendered as crfsuite attributes
   (``TEMPLATE=value|value``), with the token attributes read from spaCy's
   lexemes of a blank English vocab (NORM, SHAPE, IS_TITLE, LIKE_NUM, ...), so
   both systems see the same values; a template window that leaves the sentence
   gives a padding value, as FeatureCRF's hashing does; plus a constant ``bias``
   attribute, crfsuite's counterpart of FeatureCRF's per-label bias. L-BFGS,
   c1=0.1, c2=0.01, max_iterations=100, sklearn-crfsuite's other defaults
   (all_possible_transitions=False). Train time is ``fit``; decode time is
   featurize + predict.
3. spaCy ``ner``: the default CPU config of
   ``python -m spacy init config CFG -l en -p ner -o efficiency`` (tok2vec +
   transition-based ner, no vectors), ``spacy train`` on the same .spacy files
   with ``--training.max_steps 3000 --training.eval_frequency 500``.

Scoring: every system's output becomes (start, end, type) token spans per
sentence (FeatureCRF / ner: ``doc.ents``; crfsuite: seqeval's reading of its
IOB2 tags), and one function computes micro P/R/F1 (exact span and type).
As cross-checks, seqeval (default mode) on IOB2 tags and spaCy's
``get_ner_prf`` on Docs are computed for all three systems and must agree.

Decode speed: ``list(nlp.pipe(docs, batch_size=1000))`` over test Docs made
from the words (fresh Docs every run, not timed), after a warm-up, best of 3;
for crfsuite featurize + predict, best of 3.

    python benchmarks/uner.py --out /tmp/bench_uner.json          # full run
    python benchmarks/uner.py --quick --out /tmp/bench_uner_q.json  # smoke run, shipped sample

A full run first waits until no other benchmark or ``spacy train`` process is
running (``--no-wait`` to skip), so that its timings are clean.
"""

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from crfsuite_peer import phase_fit_and_decode
from spacy_peer import make_default_config, phase_decode
from common import (
    REPO_ROOT, SHARED_DATA, add_run_arguments, environment, log, make_summary, markdown_table,
    mb, print_timing_footer, render_summary, run_benchmark, run_isolated, summary_row,
    train_spacy_subprocess,
)

DEFAULT_CONFIG = REPO_ROOT / "configs" / "uner_ner.cfg"
SAMPLE = REPO_ROOT / "assets" / "ewt_sample"
UNER_SUBDIR = "uner_english_ewt"
FULL_FILES = {
    "train": "en_ewt-ud-train.v0-normalized.iob2",
    "dev": "en_ewt-ud-dev.iob2",
    "test": "en_ewt-ud-test.iob2",
}
TRAIN_NOTE = ("train = en_ewt-ud-train.v0-normalized.iob2: the normalized PRE-RELEASE v0 train "
              "(UNER_English-EWT first commit 0c7ce0d, *-OTH and B-O set to O), NOT the official "
              "UNER v1 train; dev and test are the official UNER v1 files")
QUICK_NOTE = "QUICK: shipped sample assets/ewt_sample/en_ewt-{train,dev,test}.iob2"
SPLITS = ("train", "dev", "test")
COMPONENT = "crf_tagger"
CRFSUITE_PARAMS = {"algorithm": "lbfgs", "c1": 0.1, "c2": 0.01, "max_iterations": 100}
NER_INIT_COMMAND = "python -m spacy init config CFG -l en -p ner -o efficiency"
ENTS_KEYS = ("ents_p", "ents_r", "ents_f")  # the dev scores of model-best, from meta.json

Span = Tuple[int, int, str]  # token start, token end (exclusive), entity type


# -- data ------------------------------------------------------------------------

def iob2_files(data_dir: Path, quick: bool, train_file: str = FULL_FILES["train"]
               ) -> Dict[str, Path]:
    if quick:
        return {s: SAMPLE / f"en_ewt-{s}.iob2" for s in SPLITS}
    names = dict(FULL_FILES, train=train_file)
    return {s: data_dir / UNER_SUBDIR / names[s] for s in SPLITS}


def data_note(args: argparse.Namespace) -> str:
    if args.quick:
        return QUICK_NOTE
    if args.train_file == FULL_FILES["train"]:
        return TRAIN_NOTE
    return f"train = {args.train_file}; dev and test are the official UNER v1 files"


def read_iob2(path: Path) -> List[Tuple[List[str], List[str]]]:
    """(words, IOB2 tags) per sentence of a UNER .iob2 file (comment lines skipped)."""
    sentences = []
    for block in path.read_text(encoding="utf8").strip("\n").split("\n\n"):
        rows = [line.split("\t") for line in block.splitlines()
                if line and not line.startswith("#")]
        if rows:
            sentences.append(([r[1] for r in rows], [r[2] for r in rows]))
    return sentences


def convert(files: Dict[str, Path], workdir: Path) -> Dict[str, Any]:
    """``spacy_crf.converters.convert_uner`` of each split into ``workdir/corpus/SPLIT.spacy``.

    Checks that the entities of the converted docs read back to the file's own
    IOB2 tags (a test of the converter)."""
    from spacy.tokens import DocBin
    from spacy.vocab import Vocab
    from spacy_crf.converters import convert_uner, iob_tags_from_ents

    out = workdir / "corpus"
    out.mkdir(parents=True, exist_ok=True)
    info: Dict[str, Any] = {"paths": {}, "stats": {}}
    for split, path in files.items():
        docs = convert_uner(path.read_text(encoding="utf8"), Vocab())
        raw = read_iob2(path)
        if len(raw) != len(docs):
            raise ValueError(f"{path}: {len(raw)} sentences read but {len(docs)} docs converted")
        mismatched = sum(1 for doc, (words, tags) in zip(docs, raw)
                         if [t.text for t in doc] != words or iob_tags_from_ents(doc) != tags)
        target = out / f"{split}.spacy"
        DocBin(docs=docs, store_user_data=True).to_disk(target)
        labels: Dict[str, int] = {}
        for doc in docs:
            for ent in doc.ents:
                labels[ent.label_] = labels.get(ent.label_, 0) + 1
        info["paths"][split] = target
        info["stats"][split] = {
            "file": str(path), "sentences": len(docs), "tokens": sum(len(d) for d in docs),
            "entities": dict(sorted(labels.items())),
            "sentences_not_round_tripping": mismatched,
        }
    return info


# -- scoring: one function for every system ----------------------------------------

def span_prf(gold: Sequence[Set[Span]], pred: Sequence[Set[Span]]) -> Dict[str, Any]:
    """Micro P/R/F1 of (start, end, type) spans, exact span and type match, plus per type."""
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold sentences but {len(pred)} predicted")
    counts: Dict[str, List[int]] = {}  # type -> [n_gold, n_pred, n_correct]
    for g, p in zip(gold, pred):
        g, p = set(g), set(p)
        for spans, k in ((g, 0), (p, 1), (g & p, 2)):
            for span in spans:
                counts.setdefault(span[2], [0, 0, 0])[k] += 1

    def prf(n_gold: int, n_pred: int, n_correct: int) -> Dict[str, Any]:
        p = n_correct / n_pred if n_pred else 0.0
        r = n_correct / n_gold if n_gold else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        return {"p": p, "r": r, "f": f, "n_gold": n_gold, "n_pred": n_pred, "n_correct": n_correct}

    total = [sum(c[i] for c in counts.values()) for i in range(3)]
    result = prf(*total)
    result["per_type"] = {label: prf(*c) for label, c in sorted(counts.items())}
    return result


def spans_from_iob(tags: Sequence[str]) -> Set[Span]:
    """Spans of IOB2 tags as seqeval reads them (its default, conlleval-compatible mode)."""
    from seqeval.metrics.sequence_labeling import get_entities

    return {(start, end + 1, label) for label, start, end in get_entities(list(tags))}


def iob_from_spans(spans: Set[Span], n: int) -> List[str]:
    tags = ["O"] * n
    for start, end, label in sorted(spans):
        tags[start] = f"B-{label}"
        for i in range(start + 1, end):
            tags[i] = f"I-{label}"
    return tags


def score_system(test: List[Tuple[List[str], List[str]]], gold_spans: List[Set[Span]],
                 pred_spans: List[Set[Span]], pred_tags: Optional[List[List[str]]] = None
                 ) -> Dict[str, Any]:
    """The shared span score, and two cross-checks that must agree with it:
    seqeval on IOB2 tags (the system's own tags where it has them) and spaCy's
    ``get_ner_prf`` on Docs carrying the predicted entities."""
    from seqeval.metrics import f1_score, precision_score, recall_score
    from spacy.scorer import get_ner_prf
    from spacy.tokens import Doc
    from spacy.tokens import Span as SpacySpan
    from spacy.training import Example
    from spacy.vocab import Vocab

    main = span_prf(gold_spans, pred_spans)
    gold_tags = [tags for _, tags in test]
    if pred_tags is None:
        pred_tags = [iob_from_spans(s, len(w)) for s, (w, _) in zip(pred_spans, test)]
    seqeval = {"p": float(precision_score(gold_tags, pred_tags)),
               "r": float(recall_score(gold_tags, pred_tags)),
               "f": float(f1_score(gold_tags, pred_tags))}
    vocab = Vocab()
    examples = []
    for (words, _), g, p in zip(test, gold_spans, pred_spans):
        docs = []
        for spans in (p, g):
            doc = Doc(vocab, words=words)
            doc.set_ents([SpacySpan(doc, s, e, label=l) for s, e, l in sorted(spans)],
                         default="outside")
            docs.append(doc)
        examples.append(Example(docs[0], docs[1]))
    spacy_scores = get_ner_prf(examples)
    spacy_prf = {"p": spacy_scores["ents_p"], "r": spacy_scores["ents_r"],
                 "f": spacy_scores["ents_f"]}
    agree = all(abs(main[k] - other[k]) < 1e-9 for other in (seqeval, spacy_prf)
                for k in ("p", "r", "f"))
    return dict(main, seqeval=seqeval, spacy_get_ner_prf=spacy_prf, cross_checks_agree=agree)


# -- spaCy training (subprocess) and decoding (fresh process) -----------------------

# -- driver ----------------------------------------------------------------------

def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA,
                        help=f"folder holding {UNER_SUBDIR}/ (default: %(default)s)")
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG,
                        help="spacy-crf training config (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=None, help="write all results to this JSON file")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run on the shipped sample (assets/ewt_sample), spaCy ner "
                             "200 steps")
    parser.add_argument("--ner-max-steps", type=int, default=None,
                        help="training.max_steps of spaCy's ner (default: 3000; --quick: 200)")
    parser.add_argument("--ner-eval-frequency", type=int, default=None,
                        help="training.eval_frequency of spaCy's ner (default: 500; --quick: 50)")
    parser.add_argument("--crf-eval-frequency", type=int, default=None,
                        help="training.eval_frequency of the FeatureCRF (default: the config's; "
                             "--quick: 20, since the sample is only ~14 steps an epoch)")
    parser.add_argument("--crfsuite-max-iterations", type=int, default=100)
    parser.add_argument("--train-file", default=FULL_FILES["train"],
                        help=f"the train file in DATA_DIR/{UNER_SUBDIR} (default: %(default)s; "
                             "the official UNER v1 file is en_ewt-ud-train.iob2)")
    add_run_arguments(parser)
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    files = iob2_files(args.data_dir, args.quick, args.train_file)
    return run_benchmark(args, [*files.values(), args.config], "bench_uner_",
                         lambda workdir: run(args, files, workdir), print_report)


def run(args: argparse.Namespace, files: Dict[str, Path], workdir: Path) -> Dict[str, Any]:
    from spacy import util

    ner_steps = args.ner_max_steps or (200 if args.quick else 3000)
    ner_eval = args.ner_eval_frequency or (50 if args.quick else 500)
    config = util.load_config(args.config, interpolate=False)
    templates = list(config["components"][COMPONENT]["model"]["templates"])
    report: Dict[str, Any] = {
        "benchmark": "uner_english_ewt",
        "quick": args.quick,
        "data": {s: str(p) for s, p in files.items()},
        "data_note": data_note(args),
        "config": str(args.config),
        "templates": templates,
        "environment": environment(),
    }
    log(f"converting {', '.join(str(p) for p in files.values())} (convert_uner)")
    converted = convert(files, workdir)
    corpus = converted["paths"]
    report["corpus"] = converted["stats"]
    for split, st in converted["stats"].items():
        log(f"    {split}: {st['sentences']} sentences, {st['tokens']} tokens, {st['entities']}"
            + (f", {st['sentences_not_round_tripping']} NOT ROUND-TRIPPING"
               if st["sentences_not_round_tripping"] else ""))
    test = read_iob2(files["test"])
    gold_spans = [spans_from_iob(tags) for _, tags in test]
    test_words = [words for words, _ in test]
    systems: Dict[str, Dict[str, Any]] = {}

    # 1. spacy-crf FeatureCRF
    crf_eval = args.crf_eval_frequency or (20 if args.quick else None)
    crf_overrides = ["--training.eval_frequency", str(crf_eval)] if crf_eval else []
    log(f"[1] spacy-crf FeatureCRF: spacy train {args.config.name} {' '.join(crf_overrides)}")
    out = workdir / "spacy_crf"
    train = train_spacy_subprocess(args.config, out, corpus, crf_overrides, workdir / "spacy_crf.log")
    train["eval_frequency"] = crf_eval or int(config["training"]["eval_frequency"])
    train["max_epochs"] = int(config["training"]["max_epochs"])
    log(f"    trained in {train['train_s']:.1f}s (CPU share {train['cpu_share']}, "
        f"last evaluation at step {train['last_step']}); decoding test")
    decode = run_isolated(phase_decode, str(out / "model-best"), test_words, "ents",
                          args.decode_runs, meta_keys=ENTS_KEYS)
    systems["spacy_crf"] = _spacy_system("spacy-crf FeatureCRF", train, decode, test, gold_spans,
                                         [COMPONENT])

    # 2. sklearn-crfsuite, same features
    params = dict(CRFSUITE_PARAMS, max_iterations=args.crfsuite_max_iterations)
    log(f"[2] sklearn-crfsuite {params}, {args.config.name}'s templates as attributes")
    sc = run_isolated(phase_fit_and_decode, read_iob2(files["train"]), [w for w, _ in test],
                      templates, params, str(workdir / "crfsuite_uner.model"), args.decode_runs)
    pred_tags = sc.pop("pred")
    sc["scores"] = score_system(test, gold_spans, [spans_from_iob(t) for t in pred_tags],
                                pred_tags)
    sc["name"] = "sklearn-crfsuite"
    sc["weights_bytes"] = sc["model_bytes"]
    systems["crfsuite"] = sc
    _log_system(sc)

    # 3. spaCy ner
    ner_config = Path(make_default_config("ner", workdir / "spacy_ner_efficiency.cfg")["path"])
    overrides = ["--training.max_steps", str(ner_steps), "--training.eval_frequency", str(ner_eval)]
    log(f"[3] spaCy ner ({NER_INIT_COMMAND}) {' '.join(overrides)}")
    out = workdir / "spacy_ner"
    train = train_spacy_subprocess(ner_config, out, corpus, overrides, workdir / "spacy_ner.log")
    train["init_config_command"] = NER_INIT_COMMAND
    train["max_steps"], train["eval_frequency"] = ner_steps, ner_eval
    log(f"    trained in {train['train_s']:.1f}s (CPU share {train['cpu_share']}, "
        f"last evaluation at step {train['last_step']}); decoding test")
    decode = run_isolated(phase_decode, str(out / "model-best"), test_words, "ents",
                          args.decode_runs, meta_keys=ENTS_KEYS)
    systems["spacy_ner"] = _spacy_system("spaCy ner", train, decode, test, gold_spans,
                                         ["tok2vec", "ner"])
    report["systems"] = systems

    ours, base, ner = systems["spacy_crf"], systems["crfsuite"], systems["spacy_ner"]
    report["ratios"] = {other: _ratios(ours, sys_) for other, sys_ in
                        (("crfsuite", base), ("spacy_ner", ner))}
    report["summary"] = uner_summary(report)
    return report


def uner_summary(report: Dict[str, Any]) -> Dict[str, Any]:
    """The README row of each system (``common.render_summary``)."""
    systems = report["systems"]
    sc, ner = systems["crfsuite"], systems["spacy_ner"]
    p = sc["params"]
    names = {
        "spacy_crf": f"spacy-crf FeatureCRF ({Path(report['config']).name}, BILUO)",
        "crfsuite": f"sklearn-crfsuite (L-BFGS, c1 = {p['c1']}, c2 = {p['c2']}, "
                    f"{sc['iterations']} it, same features)",
        "spacy_ner": f"spaCy ner (init config -o efficiency, {ner['train']['max_steps']} steps)",
    }
    rows = []
    for key, system in systems.items():
        spacy_system = "train" in system
        rows.append(summary_row(
            "UNER English NER", names[key], "F1", system["scores"]["f"], system["train_s"],
            system["decode_tokens_per_s"],
            system["train"]["peak_rss_mb"] if spacy_system else system["peak_rss_mb"],
            system["decode"]["peak_rss_mb"] if spacy_system else None, system["weights_bytes"]))
    c = report["corpus"]
    notes = [
        report["data_note"],
        f"train {c['train']['sentences']:,} sentences / {c['train']['tokens']:,} tokens, test "
        f"{c['test']['sentences']:,} / {c['test']['tokens']:,} "
        f"({sum(c['test']['entities'].values())} entities); exact-span micro F1 (seqeval and "
        "spaCy's scorer agree)",
        "train s: the whole `spacy train` for spaCy systems (model-best by dev F1); crfsuite "
        "`fit` only",
        "decode: Docs made from the words through `nlp.pipe`; crfsuite featurize + predict",
    ]
    title = "Universal NER English EWT" + (" (quick)" if report["quick"] else "")
    command = (f"python benchmarks/uner.py --quick" if report["quick"] else
               f"python benchmarks/uner.py --out benchmarks/results/uner.json")
    return make_summary(title, command, rows, notes)


def _spacy_system(name: str, train: Dict[str, Any], decode: Dict[str, Any], test,
                  gold_spans: List[Set[Span]], weight_components: List[str]) -> Dict[str, Any]:
    pred = [set(map(tuple, spans)) for spans in decode.pop("pred")]
    result = {
        "name": name,
        "train": train,
        "decode": decode,
        "scores": score_system(test, gold_spans, pred),
        "train_s": train["train_s"],
        "train_cpu_share": train["cpu_share"],
        "decode_tokens_per_s": decode["decode_tokens_per_s"],
        "decode_cpu_share": decode["decode_cpu_share"],
        "weights_bytes": sum(decode["component_bytes"].get(c, 0) for c in weight_components),
        "model_bytes": decode["pipeline_bytes"],
    }
    _log_system(result)
    return result


def _ratios(ours: Dict[str, Any], other: Dict[str, Any]) -> Dict[str, float]:
    return {
        "f1_ours_minus_other_points": 100 * (ours["scores"]["f"] - other["scores"]["f"]),
        "f1_ours_over_other": ours["scores"]["f"] / other["scores"]["f"]
        if other["scores"]["f"] else float("nan"),
        "train_s_ours_over_other": ours["train_s"] / other["train_s"],
        "decode_tokens_per_s_ours_over_other":
            ours["decode_tokens_per_s"] / other["decode_tokens_per_s"],
        "weights_bytes_ours_over_other": ours["weights_bytes"] / other["weights_bytes"],
        "model_bytes_ours_over_other": ours["model_bytes"] / other["model_bytes"],
    }


def _log_system(system: Dict[str, Any]) -> None:
    s = system["scores"]
    log(f"    {system['name']}: P {100 * s['p']:.2f} R {100 * s['r']:.2f} F1 {100 * s['f']:.2f} "
        f"(seqeval F1 {100 * s['seqeval']['f']:.2f}, spaCy scorer F1 "
        f"{100 * s['spacy_get_ner_prf']['f']:.2f}), train {system['train_s']:.1f}s, decode "
        f"{system['decode_tokens_per_s']:,.0f} tokens/s")


def print_report(report: Dict[str, Any]) -> None:
    print("\n" + render_summary(report["summary"], level=2))
    systems = report["systems"]
    ours, sc, ner = systems["spacy_crf"], systems["crfsuite"], systems["spacy_ner"]
    p = sc["params"]
    labels = {
        "spacy_crf": f"spacy-crf FeatureCRF ({Path(report['config']).name}, "
                     f"{ours['train']['max_epochs']} epochs, eval every "
                     f"{ours['train']['eval_frequency']}, model-best)",
        "crfsuite": f"sklearn-crfsuite (L-BFGS, c1={p['c1']}, c2={p['c2']}, "
                    f"{sc['iterations']} it, same features)",
        "spacy_ner": f"spaCy ner (init config -o efficiency, max_steps "
                     f"{ner['train']['max_steps']}, eval every "
                     f"{ner['train']['eval_frequency']}, model-best)",
    }
    rows = []
    for key in ("spacy_crf", "crfsuite", "spacy_ner"):
        s = systems[key]
        rows.append([labels[key], f"{100 * s['scores']['p']:.2f}", f"{100 * s['scores']['r']:.2f}",
                     f"{100 * s['scores']['f']:.2f}", f"{s['train_s']:.1f}",
                     f"{s['decode_tokens_per_s']:,.0f}", mb(s["weights_bytes"]),
                     mb(s["model_bytes"])])
    c = report["corpus"]
    title = "Universal NER English EWT (PER/ORG/LOC), test" + (" (QUICK)" if report["quick"] else "")
    print(f"\n## {title}\n")
    print(f"{report['data_note']}.")
    print(f"train {c['train']['sentences']} sentences / {c['train']['tokens']} tokens, dev "
          f"{c['dev']['sentences']} / {c['dev']['tokens']}, test {c['test']['sentences']} / "
          f"{c['test']['tokens']} ({sum(c['test']['entities'].values())} entities)\n")
    print(markdown_table(["system", "P", "R", "F1", "train s", "decode tokens/s",
                          "model MB (weights)", "pipeline dir MB"], rows))
    print("\nPer-type F1 (P / R / F1 micro over exact (start, end, type) spans):\n")
    types = sorted(ours["scores"]["per_type"].keys() | sc["scores"]["per_type"].keys()
                   | ner["scores"]["per_type"].keys())
    print(markdown_table(["system", *types], [
        [key, *(f"{100 * systems[key]['scores']['per_type'].get(t, {}).get('f', 0.0):.2f}"
                for t in types)] for key in ("spacy_crf", "crfsuite", "spacy_ner")]))
    print("\nRatios (ours = spacy-crf FeatureCRF):\n")
    rr = report["ratios"]
    print(markdown_table(
        ["ours / ...", "F1 diff (points)", "F1 ratio", "train time", "decode tokens/s",
         "model (weights)", "pipeline dir"],
        [[k, f"{r['f1_ours_minus_other_points']:+.2f}", f"{r['f1_ours_over_other']:.3f}",
          f"{r['train_s_ours_over_other']:.2f}x", f"{r['decode_tokens_per_s_ours_over_other']:.2f}x",
          f"{r['weights_bytes_ours_over_other']:.2f}x", f"{r['model_bytes_ours_over_other']:.2f}x"]
         for k, r in rr.items()]))
    print("\nNotes:")
    print(f"- train s: wall time of the whole `python -m spacy train` subprocess for the spaCy "
          f"systems (start-up, corpus loading, init, {ours['train']['n_dev_evaluations']} / "
          f"{ner['train']['n_dev_evaluations']} dev evaluations and checkpoint saves included); "
          f"crfsuite: `fit` only ({sc['iterations']} L-BFGS iterations; + "
          f"{sc['featurize_train_s']:.1f}s Python featurization of train, not counted)")
    print(f"- decode: nlp.pipe(batch_size=1000) on test Docs made from the words, best of "
          f"{len(ours['decode']['decode_runs_s'])}; crfsuite featurize + predict (predict only, "
          f"pre-featurized: {sc['predict_only_tokens_per_s']:,.0f} tokens/s)")
    print(f"- model (weights): crfsuite model file; spacy-crf model-best/crf_tagger; spaCy ner "
          f"model-best/tok2vec + ner. pipeline dir: the whole model-best directory "
          f"(crfsuite: the model file)")
    print(f"- dev F1 of model-best (meta.json): spacy-crf "
          f"{100 * (ours['decode']['dev_scores_meta']['ents_f'] or 0):.2f}, spaCy ner "
          f"{100 * (ner['decode']['dev_scores_meta']['ents_f'] or 0):.2f}; last dev evaluation "
          f"at step {ours['train']['last_step']} (epoch {ours['train']['last_epoch']}) / "
          f"{ner['train']['last_step']} (epoch {ner['train']['last_epoch']})")
    agree = all(systems[k]["scores"]["cross_checks_agree"] for k in systems)
    print(f"- scoring cross-checks (seqeval on IOB2, spaCy get_ner_prf): "
          + ("all agree with the span F1" if agree else "DISAGREE: " + ", ".join(
              f"{k}: seqeval F1 {100 * systems[k]['scores']['seqeval']['f']:.2f}, spaCy "
              f"{100 * systems[k]['scores']['spacy_get_ner_prf']['f']:.2f}" for k in systems)))
    print(f"- crfsuite: {sc['num_attributes']:,} attributes, {sc['active_features']:,} active "
          f"features, {sc['n_templates']} templates + bias")
    print_timing_footer(report, {
        "spacy-crf train": ours["train_cpu_share"], "spacy-crf decode": ours["decode_cpu_share"],
        "crfsuite fit": sc["train_cpu_share"], "crfsuite decode": sc["decode_cpu_share"],
        "spaCy ner train": ner["train_cpu_share"], "spaCy ner decode": ner["decode_cpu_share"]})


if __name__ == "__main__":
    sys.exit(main())
