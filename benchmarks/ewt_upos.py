"""UD English EWT universal POS tags: spacy-crf's FeatureCRF vs sklearn-crfsuite
vs spaCy's own ``tagger``, side by side in one run.

Every system is trained on train and evaluated on test; the two spaCy systems
use dev for model selection (``model-best``). Data (``--data-dir``, default
``../shared/data`` from the repo root, folder ``ud_english_ewt/r2.9``):
``en_ewt-ud-{train,dev,test}.conllu``, converted with
``python -m spacy convert DIR OUT -c conllu -n 1`` (one sentence per doc;
multiword-token lines and empty nodes skipped, as spaCy's converter does).
``--quick`` uses the shipped sample ``assets/ewt_sample/en_ewt-{train,dev,test}.conllu``
(600 / 200 / 200 sentences).

Systems
1. spacy-crf FeatureCRF: ``python -m spacy train configs/ewt_upos.cfg`` (target
   ``pos``; a subprocess, wall clock), ``model-best`` evaluated on test.
   ``--quick``: ``--training.max_epochs 15 --training.eval_frequency 25
   --training.batcher.size 500``, as the project's ``train-sample``.
2. sklearn-crfsuite with the same features: the config's templates rendered
   as crfsuite attributes by ``crfsuite_peer.CrfsuiteFeaturizer`` (spaCy lexeme
   values, padding outside the sentence, a ``bias`` attribute). L-BFGS, c1=0.1,
   c2=0.01, max_iterations=100 (``--quick``: 50), sklearn-crfsuite's other
   defaults. Train time is ``fit``; decode time is featurize + predict.
3. spaCy ``tagger``: the default CPU config of
   ``python -m spacy init config CFG -l en -p tagger -o efficiency`` (tok2vec +
   tagger, no vectors), trained with ``spacy train`` on copies of the corpus in
   which every token's ``tag_`` is its UPOS (the tagger predicts ``tag_``), for
   a fixed budget of ``--training.max_steps 2000 --training.eval_frequency 200``
   (``--quick``: 200 / 50) with ``patience 0``.

Scoring: the predicted UPOS of every system (FeatureCRF ``pos_``, crfsuite's
labels, the tagger's ``tag_``) against the gold UPOS column of the test
CoNLL-U, token accuracy computed by one function (:func:`upos_accuracy`),
cross-checked with spaCy's ``Scorer.score_token_attr``.

Decode speed: ``list(nlp.pipe(docs, batch_size=1000))`` over test Docs made
from the gold words (``Doc(nlp.vocab, words=words)``, fresh every run, not
timed), after an untimed warm-up, best of ``--decode-runs``; crfsuite:
featurize + predict, best of ``--decode-runs``. Peak memory: the ``spacy
train`` subprocesses, and a fresh process for each decode and for crfsuite
(which trains and decodes in one process).

    python benchmarks/ewt_upos.py --out benchmarks/results/ewt_upos.json     # full run
    python benchmarks/ewt_upos.py --quick --out /tmp/bench_ewt_upos_q.json   # smoke run, sample

A full run first waits until no other benchmark or ``spacy train`` process is
running (``--no-wait`` to skip), so that its timings are clean.
"""

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from common import (
    REPO_ROOT, SHARED_DATA, add_run_arguments, environment, log, make_summary, markdown_table,
    mb, print_timing_footer, render_summary, run_benchmark, run_isolated, summary_row,
    train_spacy_subprocess,
)
from crfsuite_peer import phase_fit_and_decode
from ewt_tree import EWT_SUBDIR, conllu_files, convert
from spacy_peer import make_default_config, phase_decode, relabel_docbin, train_fixed_steps

from spacy_crf.converters import read_conllu_upos

DEFAULT_CONFIG = REPO_ROOT / "configs" / "ewt_upos.cfg"
COMPONENT = "crf_tagger"
TASK = "EWT UPOS"
FULL_COMMAND = "python benchmarks/ewt_upos.py --out benchmarks/results/ewt_upos.json"
QUICK_COMMAND = "python benchmarks/ewt_upos.py --quick"
CRFSUITE_PARAMS = {"algorithm": "lbfgs", "c1": 0.1, "c2": 0.01, "max_iterations": 100}
# the project's train-sample settings: the sample is only ~10k tokens, so smaller
# batches and more epochs than the config's
QUICK_CRF_TRAINING = {"max_epochs": 15, "eval_frequency": 25, "batcher.size": 500}
SYSTEM_KEYS = ("spacy_crf", "crfsuite", "spacy_tagger")

# -- data ------------------------------------------------------------------------

def check_corpus(files: Dict[str, Path], corpus: Dict[str, Path]) -> Dict[str, Dict[str, Any]]:
    """Sentence / token counts of each split, and whether the converted docs carry
    the words and UPOS of the CoNLL-U file (so that what the spaCy systems train
    on and what every system is scored against agree)."""
    import spacy
    from spacy.tokens import DocBin

    vocab = spacy.blank("en").vocab
    stats = {}
    for split, path in files.items():
        raw = read_conllu_upos(path)
        docs = list(DocBin().from_disk(corpus[split]).get_docs(vocab))
        if len(raw) != len(docs):
            raise ValueError(f"{path}: {len(raw)} sentences read but {len(docs)} docs converted")
        mismatched = sum(1 for doc, (words, tags) in zip(docs, raw)
                         if [t.text for t in doc] != words or [t.pos_ for t in doc] != tags)
        stats[split] = {"file": str(path), "sentences": len(raw),
                        "tokens": sum(len(w) for w, _ in raw),
                        "sentences_not_round_tripping": mismatched}
    return stats


# -- scoring: one function for every system ----------------------------------------

def upos_accuracy(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> Dict[str, Any]:
    """Token accuracy of predicted against gold UPOS, overall and per gold tag.

    Parameters
    ----------
    gold, pred : sequence of sequence of str
        One label list per test sentence.

    Returns
    -------
    dict
        ``acc``, ``n_tokens``, ``n_correct``, ``per_tag`` (gold tag ->
        ``{"acc", "n"}``) and ``spacy_scorer_acc``: spaCy's
        ``Scorer.score_token_attr`` on Docs carrying the same labels, a
        cross-check that must equal ``acc``.

    Raises
    ------
    ValueError
        If the sentences or their lengths differ.
    """
    from spacy.scorer import Scorer
    from spacy.tokens import Doc
    from spacy.training import Example
    from spacy.vocab import Vocab

    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold sentences but {len(pred)} predicted")
    per_tag: Dict[str, List[int]] = {}
    n = right = 0
    for g, p in zip(gold, pred):
        if len(g) != len(p):
            raise ValueError("gold and predicted sentences differ in length")
        for a, b in zip(g, p):
            counts = per_tag.setdefault(a, [0, 0])
            counts[0] += 1
            counts[1] += a == b
            n += 1
            right += a == b
    vocab = Vocab()
    examples = []
    for g, p in zip(gold, pred):
        # the labels go into tag_, which takes any string (pos_ only takes valid UPOS,
        # and an invalid prediction must count as wrong, not fail); the words do not
        # matter to the scorer
        words = [f"w{i}" for i in range(len(g))]
        examples.append(Example(Doc(vocab, words=words, tags=list(p)),
                                Doc(vocab, words=words, tags=list(g))))
    spacy_acc = Scorer.score_token_attr(examples, "tag")["tag_acc"]
    return {"acc": right / n if n else 0.0, "n_tokens": n, "n_correct": right,
            "per_tag": {t: {"acc": c[1] / c[0], "n": c[0]} for t, c in sorted(per_tag.items())},
            "spacy_scorer_acc": spacy_acc}


# -- driver ----------------------------------------------------------------------

def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=SHARED_DATA,
                        help=f"folder holding {EWT_SUBDIR}/en_ewt-ud-{{train,dev,test}}.conllu "
                             "(default: %(default)s)")
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG,
                        help="spacy-crf training config, target pos (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=None, help="write all results to this JSON file")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run on the shipped sample (assets/ewt_sample: 600 / 200 / 200 "
                             "sentences): FeatureCRF 15 epochs of 500-word batches, spaCy tagger "
                             "200 steps, crfsuite 50 iterations")
    parser.add_argument("--tagger-max-steps", type=int, default=None,
                        help="training.max_steps of spaCy's tagger (default: 2000; --quick: 200)")
    parser.add_argument("--tagger-eval-frequency", type=int, default=None,
                        help="training.eval_frequency of spaCy's tagger (default: 200; --quick: 50)")
    parser.add_argument("--crfsuite-max-iterations", type=int, default=None,
                        help="L-BFGS iterations of sklearn-crfsuite (default: 100; --quick: 50)")
    add_run_arguments(parser)
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    files = conllu_files(args.data_dir, args.quick)
    return run_benchmark(args, [*files.values(), args.config], "bench_ewt_upos_",
                         lambda workdir: run(args, files, workdir), print_report)


def run(args: argparse.Namespace, files: Dict[str, Path], workdir: Path) -> Dict[str, Any]:
    from spacy import util

    tagger_steps = args.tagger_max_steps or (200 if args.quick else 2000)
    tagger_eval = args.tagger_eval_frequency or (50 if args.quick else 200)
    iterations = args.crfsuite_max_iterations or (50 if args.quick else 100)
    config = util.load_config(args.config, interpolate=False)
    templates = list(config["components"][COMPONENT]["model"]["templates"])
    report: Dict[str, Any] = {
        "benchmark": "ewt_upos",
        "quick": args.quick,
        "data": {s: str(p) for s, p in files.items()},
        "config": str(args.config),
        "templates": templates,
        "environment": environment(),
    }
    log(f"converting {', '.join(str(p) for p in files.values())} (spacy convert -c conllu -n 1)")
    corpus = convert(files, workdir)
    report["corpus"] = check_corpus(files, corpus)
    for split, st in report["corpus"].items():
        log(f"    {split}: {st['sentences']} sentences, {st['tokens']} tokens"
            + (f", {st['sentences_not_round_tripping']} NOT ROUND-TRIPPING"
               if st["sentences_not_round_tripping"] else ""))
    test = read_conllu_upos(files["test"])
    test_words = [words for words, _ in test]
    gold = [tags for _, tags in test]
    systems: Dict[str, Dict[str, Any]] = {}

    # 1. spacy-crf FeatureCRF
    crf_training = dict(QUICK_CRF_TRAINING) if args.quick else {}
    crf_overrides = [x for k, v in crf_training.items() for x in (f"--training.{k}", str(v))]
    log(f"[1] spacy-crf FeatureCRF: spacy train {args.config.name} {' '.join(crf_overrides)}")
    out = workdir / "spacy_crf"
    train = train_spacy_subprocess(args.config, out, corpus, crf_overrides,
                                   workdir / "spacy_crf.log")
    for key in ("max_epochs", "eval_frequency"):
        train[key] = int(crf_training.get(key, config["training"][key]))
    log(f"    trained in {train['train_s']:.1f}s (CPU share {train['cpu_share']}, last "
        f"evaluation at step {train['last_step']}); decoding test")
    decode = run_isolated(phase_decode, str(out / "model-best"), test_words, "pos_",
                          args.decode_runs, [COMPONENT], 200, ["pos_acc"])
    systems["spacy_crf"] = _spacy_system("spacy-crf FeatureCRF", train, decode, gold)

    # 2. sklearn-crfsuite, same features
    params = dict(CRFSUITE_PARAMS, max_iterations=iterations)
    log(f"[2] sklearn-crfsuite {params}, {args.config.name}'s templates as attributes")
    sc = run_isolated(phase_fit_and_decode, read_conllu_upos(files["train"]),
                      [words for words, _ in test], templates, params,
                      str(workdir / "crfsuite_upos.model"), args.decode_runs)
    sc["scores"] = upos_accuracy(gold, sc.pop("pred"))
    sc["name"] = "sklearn-crfsuite"
    sc["weights_bytes"] = sc["pipeline_bytes"] = sc["model_bytes"]
    sc["train_peak_rss_mb"] = sc["peak_rss_mb"]  # fit and decode in one process
    systems["crfsuite"] = sc
    _log_system(sc)

    # 3. spaCy tagger, on copies of the corpus with tag_ = UPOS
    init = make_default_config("tagger", workdir / "spacy_tagger_efficiency.cfg")
    tagger_corpus, relabelled = {}, {}
    for split in ("train", "dev"):
        tagger_corpus[split] = workdir / "corpus_tag_upos" / f"{split}.spacy"
        relabelled[split] = relabel_docbin(corpus[split], tagger_corpus[split],
                                           lambda doc: [t.pos_ for t in doc])
    log(f"[3] spaCy tagger ({init['command']}), tag_ = UPOS, --training.max_steps "
        f"{tagger_steps} --training.eval_frequency {tagger_eval} --training.patience 0")
    out = workdir / "spacy_tagger"
    train = train_fixed_steps(Path(init["path"]), out, tagger_corpus, tagger_steps, tagger_eval,
                              workdir / "spacy_tagger.log")
    train["init_config_command"] = init["command"]
    train["relabelled_corpus"] = {s: {k: v for k, v in r.items() if k != "labels"}
                                  for s, r in relabelled.items()}
    log(f"    trained in {train['train_s']:.1f}s (CPU share {train['cpu_share']}, last "
        f"evaluation at step {train['last_step']}); decoding test")
    decode = run_isolated(phase_decode, str(out / "model-best"), test_words, "tag_",
                          args.decode_runs, ["tok2vec", "tagger"], 200, ["tag_acc"])
    systems["spacy_tagger"] = _spacy_system("spaCy tagger", train, decode, gold)
    report["systems"] = systems

    ours = systems["spacy_crf"]
    report["ratios"] = {k: _ratios(ours, systems[k]) for k in ("crfsuite", "spacy_tagger")}
    report["summary"] = ewt_upos_summary(report)
    return report


def _spacy_system(name: str, train: Dict[str, Any], decode: Dict[str, Any],
                  gold: List[List[str]]) -> Dict[str, Any]:
    result = {
        "name": name,
        "train": train,
        "scores": upos_accuracy(gold, decode.pop("pred")),
        "decode": decode,
        "n_test_tokens": decode["n_test_tokens"],
        "train_s": train["train_s"],
        "train_cpu_share": train["cpu_share"],
        "train_peak_rss_mb": train["peak_rss_mb"],
        "decode_tokens_per_s": decode["decode_tokens_per_s"],
        "decode_cpu_share": decode["decode_cpu_share"],
        "decode_peak_rss_mb": decode["peak_rss_mb"],
        "weights_bytes": decode["weights_bytes"],
        "pipeline_bytes": decode["pipeline_bytes"],
    }
    _log_system(result)
    return result


def _ratios(ours: Dict[str, Any], other: Dict[str, Any]) -> Dict[str, Optional[float]]:
    """ours / other (accuracy: ours - other, in points)."""
    def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
        return a / b if a is not None and b else None

    return {
        "acc_ours_minus_other_points": 100 * (ours["scores"]["acc"] - other["scores"]["acc"]),
        "train_s_ours_over_other": ratio(ours["train_s"], other["train_s"]),
        "decode_tokens_per_s_ours_over_other":
            ratio(ours["decode_tokens_per_s"], other["decode_tokens_per_s"]),
        "train_peak_ours_over_other":
            ratio(ours["train_peak_rss_mb"], other["train_peak_rss_mb"]),
        "decode_peak_ours_over_other":
            ratio(ours["decode_peak_rss_mb"], other.get("decode_peak_rss_mb")),
        "weights_bytes_ours_over_other": ratio(ours["weights_bytes"], other["weights_bytes"]),
    }


def ewt_upos_summary(report: Dict[str, Any]) -> Dict[str, Any]:
    """The README row of each system (``common.render_summary``)."""
    systems = report["systems"]
    ours, sc, tg = systems["spacy_crf"], systems["crfsuite"], systems["spacy_tagger"]
    tagger_steps, tagger_eval = tg["train"]["max_steps"], tg["train"]["eval_frequency"]
    p = sc["params"]
    rows = [
        summary_row(TASK, "spacy-crf FeatureCRF", "acc", ours["scores"]["acc"], ours["train_s"],
                    ours["decode_tokens_per_s"], ours["train_peak_rss_mb"],
                    ours["decode_peak_rss_mb"], ours["weights_bytes"]),
        summary_row(TASK, "sklearn-crfsuite", "acc", sc["scores"]["acc"], sc["train_s"],
                    sc["decode_tokens_per_s"], sc["peak_rss_mb"], None, sc["weights_bytes"],
                    note="same features"),
        summary_row(TASK, "spaCy tagger", "acc", tg["scores"]["acc"], tg["train_s"],
                    tg["decode_tokens_per_s"], tg["train_peak_rss_mb"], tg["decode_peak_rss_mb"],
                    tg["weights_bytes"], note=f"{tagger_steps} steps"),
    ]
    c = report["corpus"]
    data = ("the shipped sample assets/ewt_sample" if report["quick"]
            else "UD English EWT r2.9")
    notes = [
        f"{data}: train {c['train']['sentences']:,} sentences / {c['train']['tokens']:,} tokens, "
        f"dev {c['dev']['sentences']:,} / {c['dev']['tokens']:,}, test "
        f"{c['test']['sentences']:,} / {c['test']['tokens']:,}; score = token accuracy of "
        f"UPOS on test (one function for all systems); the spaCy systems keep model-best on dev",
        f"spacy-crf: {Path(report['config']).name}, {ours['train']['max_epochs']} epochs, "
        f"eval every {ours['train']['eval_frequency']} steps"
        + (", batches of 500 words" if report["quick"] else ""),
        f"sklearn-crfsuite: L-BFGS c1={p['c1']} c2={p['c2']} max_iterations={p['max_iterations']} "
        f"({sc['iterations']} run), the config's {sc['n_templates']} templates + bias as "
        f"attributes; train s = fit only, decode = featurize + predict; trains and decodes in "
        f"one process",
        f"spaCy tagger: `{tg['train']['init_config_command']}` (tok2vec + tagger, no vectors), "
        f"a fixed budget of {tagger_steps} steps (max_steps {tagger_steps}, eval every "
        f"{tagger_eval}, patience 0), trained on the corpus with tag_ = UPOS",
        "train s: wall time of the whole `spacy train` subprocess for the spaCy systems "
        "(start-up, init, dev evaluations, checkpoints); decode: nlp.pipe(batch_size=1000) over "
        "Docs made from the test words, after a warm-up, best of "
        f"{len(ours['decode']['decode_runs_s'])}",
        "model MB: the weights (model-best/crf_tagger; the crfsuite model file; "
        "model-best/tok2vec + tagger)",
    ]
    command = QUICK_COMMAND if report["quick"] else FULL_COMMAND
    title = "UD English EWT UPOS" + (" (QUICK: shipped 600 / 200 / 200 sentence sample)"
                                     if report["quick"] else "")
    return make_summary(title, command, rows, notes)


def _log_system(system: Dict[str, Any]) -> None:
    s = system["scores"]
    log(f"    {system['name']}: acc {100 * s['acc']:.2f} ({s['n_correct']}/{s['n_tokens']}), "
        f"train {system['train_s']:.1f}s, decode {system['decode_tokens_per_s']:,.0f} tokens/s")


def print_report(report: Dict[str, Any]) -> None:
    print("\n" + render_summary(report["summary"], level=2))
    systems = report["systems"]
    ours, sc, tg = (systems[k] for k in SYSTEM_KEYS)

    def x(value: Optional[float]) -> str:
        return "" if value is None else f"{value:.2f}x"

    print("Ratios (ours = spacy-crf FeatureCRF):\n")
    print(markdown_table(
        ["ours / ...", "acc diff (points)", "train time", "decode tokens/s", "train peak RSS",
         "decode peak RSS", "model (weights)"],
        [[k, f"{r['acc_ours_minus_other_points']:+.2f}", x(r["train_s_ours_over_other"]),
          x(r["decode_tokens_per_s_ours_over_other"]), x(r["train_peak_ours_over_other"]),
          x(r["decode_peak_ours_over_other"]), x(r["weights_bytes_ours_over_other"])]
         for k, r in report["ratios"].items()]))
    print("\nDetails:")
    print(f"- dev acc of model-best (meta.json): spacy-crf "
          f"{100 * (ours['decode']['dev_scores_meta']['pos_acc'] or 0):.2f} (last dev evaluation "
          f"at step {ours['train']['last_step']}, epoch {ours['train']['last_epoch']}), spaCy "
          f"tagger {100 * (tg['decode']['dev_scores_meta']['tag_acc'] or 0):.2f} (last at step "
          f"{tg['train']['last_step']}, epoch {tg['train']['last_epoch']})")
    print(f"- pipeline dir MB: spacy-crf {mb(ours['pipeline_bytes'])}, spaCy tagger "
          f"{mb(tg['pipeline_bytes'])}")
    print(f"- crfsuite: {sc['num_attributes']:,} attributes, {sc['active_features']:,} active "
          f"features; + {sc['featurize_train_s']:.1f}s Python featurization of train (not in "
          f"train s); predict only (pre-featurized): {sc['predict_only_tokens_per_s']:,.0f} "
          f"tokens/s")
    agree = all(abs(s["scores"]["acc"] - s["scores"]["spacy_scorer_acc"]) < 1e-9
                for s in systems.values())
    print("- scoring cross-check (spaCy's Scorer.score_token_attr): "
          + ("agrees for all systems" if agree else "DISAGREES: " + ", ".join(
              f"{k} {100 * s['scores']['spacy_scorer_acc']:.2f}" for k, s in systems.items())))
    bad = {k: v["sentences_not_round_tripping"] for k, v in report["corpus"].items()
           if v["sentences_not_round_tripping"]}
    if bad:
        print(f"- WARNING: converted docs differ from the CoNLL-U words / UPOS: {bad}")
    print_timing_footer(report, {
        "spacy-crf train": ours["train_cpu_share"], "spacy-crf decode": ours["decode_cpu_share"],
        "crfsuite fit": sc["train_cpu_share"], "crfsuite decode": sc["decode_cpu_share"],
        "spaCy tagger train": tg["train_cpu_share"], "spaCy tagger decode": tg["decode_cpu_share"]})


if __name__ == "__main__":
    sys.exit(main())
