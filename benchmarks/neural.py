"""The CRF head on a shared tok2vec against spaCy's own tagger and ner, at an equal budget.

For each task, one config made by ``spacy init config --pipeline tagger|ner
--optimize efficiency`` (a CNN ``tok2vec`` component and a head listening to
it), and systems that differ only in the head:

* spaCy's ``tagger`` / ``ner``;
* ``crf_tagger`` with ``spacy-crf.NeuralCRF.v3`` (v2 before) on the same listener, no
  hashed features (tok2vec only);
* the same with the factory's default feature templates added (both): v2 pools
  a CRF over the tok2vec and a CRF over the features, each trained on its own
  likelihood (``neural_weight`` 0.2);
* the same pool with its weight fitted on dev before every evaluation
  (``[training.before_update]`` = ``spacy-crf.fit_pool_weights.v1``: the
  weight that maximises the dev likelihood, Smith et al. 2005);
* ``crf_tagger`` with its factory default model, ``spacy-crf.FeatureCRF.v2``,
  and no tok2vec component (features only).

Every system gets the same ``[training]`` block (spaCy's default optimizer and
batcher) and the same step budget (``--steps``), evaluated on dev every 200
steps without early stopping; the report gives the step where each one's dev
score peaked, to show whether the budget was long enough. Test scores come
from ``spacy_crf.evaluate`` (raw text). EWT UPOS is learnt as ``Token.tag_``
(the corpus's UPOS copied into the tags), since spaCy's tagger predicts tags.

    python benchmarks/neural.py --ewt corpus/ewt --uner corpus/uner \\
        --out benchmarks/results/neural.json
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import environment, log, make_summary, print_rows, summary_row, write_json  # noqa: E402

#: per task: spaCy's head, the crf_tagger's target, the main score, corpus files
TASKS = {
    "upos": {"title": "UD English EWT UPOS (as tags)", "head": "tagger", "target": "tag",
             "score": "tag_acc", "metric": "acc",
             "files": ("en_ewt-ud-train.spacy", "en_ewt-ud-dev.spacy", "en_ewt-ud-test.spacy")},
    "ner": {"title": "Universal NER English EWT", "head": "ner", "target": "ents",
            "score": "ents_f", "metric": "F1", "files": ("train.spacy", "dev.spacy", "test.spacy")},
}


#: the pooled system whose weight is fitted on dev in training
FITTED = ("crf_tagger, NeuralCRF.v2 as above, pool weight fitted on dev "
          "(spacy-crf.fit_pool_weights.v1)")


def upos_as_tags(corpus: Path, out: Path) -> Path:
    """EWT's .spacy files with each token's UPOS as its tag (and nothing else)."""
    import spacy
    from spacy.tokens import DocBin

    from spacy_crf.util import tokens_only

    vocab = spacy.blank("en").vocab
    out.mkdir(parents=True, exist_ok=True)
    for name in TASKS["upos"]["files"]:
        docs = [tokens_only(d, vocab, tags=[t.pos_ for t in d])
                for d in DocBin().from_disk(corpus / name).get_docs(vocab)]
        DocBin(docs=docs).to_disk(out / name)
    return out


def eval_frequency(steps: int) -> int:
    """Every 200 steps, or a tenth of a shorter budget."""
    return max(10, min(200, steps // 10))


def system_configs(task: str, steps: int, workdir: Path) -> Dict[str, Path]:
    """One filled config per system, all from spaCy's efficiency config for the task."""
    from spacy.cli.init_config import fill_config, init_config

    spec = TASKS[task]
    head = spec["head"]
    listener = {"@architectures": "spacy.Tok2VecListener.v1",
                "width": "${components.tok2vec.model.encode.width}", "upstream": "*"}
    from spacy_crf.pipeline.factory import DEFAULT_MODEL

    pooled = {"@architectures": "spacy-crf.NeuralCRF.v3", "tok2vec": listener,
              # the factory default's features: the feature expert is the features-only row's model
              "templates": list(DEFAULT_MODEL["templates"]), "n_buckets": DEFAULT_MODEL["n_buckets"]}
    heads = {
        f"spaCy {head}": None,
        "crf_tagger, NeuralCRF on the shared tok2vec (tok2vec only)": {
            "@architectures": "spacy-crf.NeuralCRF.v3", "tok2vec": listener, "templates": None},
        "crf_tagger, NeuralCRF.v2 on the shared tok2vec + default features (both, pooled)": pooled,
        FITTED: pooled,
        "crf_tagger, factory default FeatureCRF, no tok2vec (features only)": "features",
    }
    configs = {}
    for i, (name, model) in enumerate(heads.items()):
        config = init_config(lang="en", pipeline=[head], optimize="efficiency", gpu=False)
        training = config["training"]
        training["max_steps"] = steps
        training["patience"] = 0
        training["eval_frequency"] = eval_frequency(steps)
        training["logger"] = {"@loggers": "spacy.ConsoleLogger.v3", "progress_bar": None,
                              "console_output": True, "output_file": "${paths.train_log}"}
        config["paths"]["train_log"] = None
        if model is not None:
            del config["components"][head]
            component = {"factory": "crf_tagger", "target": spec["target"]}
            if model == "features":
                del config["components"]["tok2vec"]
                config["nlp"]["pipeline"] = ["crf_tagger"]
            else:
                component["model"] = model
                config["nlp"]["pipeline"] = ["tok2vec", "crf_tagger"]
            config["components"]["crf_tagger"] = component
            training["score_weights"] = {}
        if name == FITTED:
            training["before_update"] = {"@callbacks": "spacy-crf.fit_pool_weights.v1",
                                         "every": "${training.eval_frequency}"}
        raw = workdir / f"{task}_{i}_raw.cfg"
        config.to_disk(raw)
        filled = workdir / f"{task}_{i}.cfg"
        fill_config(filled, raw, silent=True)
        configs[name] = filled
    return configs


def train_and_score(name: str, config: Path, corpus: Path, task: str, workdir: Path,
                    index: int) -> Dict[str, Any]:
    """spacy train (timed), its dev curve, and the test score of model-best."""
    import spacy
    import srsly

    from spacy_crf.evaluation import evaluate
    from spacy_crf.models.pooled_experts import WEIGHTS, pool_weights_node

    spec = TASKS[task]
    train, dev, test = (corpus / f for f in spec["files"])
    out = workdir / f"{task}_{index}"
    train_log = workdir / f"{task}_{index}_log.jsonl"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "spacy", "train", str(config), "--output", str(out),
                           "--paths.train", str(train), "--paths.dev", str(dev),
                           "--paths.train_log", str(train_log)], capture_output=True, text=True)
    train_s = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"{name}: spacy train failed\n{proc.stderr[-3000:]}")
    curve = [(int(row["step"]), float(row["score"])) for row in srsly.read_jsonl(train_log)]
    best_step, best_dev = max(curve, key=lambda point: (point[1], -point[0]))
    nlp = spacy.load(out / "model-best")
    scores = evaluate(nlp, test, [])
    weights = pool_weights_node(nlp.get_pipe(nlp.pipe_names[-1]).model)
    return {"score": scores[spec["score"]], "train_s": train_s, "curve": curve,
            "best_step": best_step, "best_dev": best_dev, "last_step": curve[-1][0],
            "pool_weights": None if weights is None else list(weights.attrs[WEIGHTS]),
            "evaluate": {k: v for k, v in scores.items() if isinstance(v, (int, float))}}


def _weight_note(weights: Optional[List[float]]) -> str:
    """The tok2vec CRF's share of model-best's pool (NeuralCRF.v2 lists it second)."""
    return "" if weights is None else f"; tok2vec CRF's weight {weights[1]:.3f}"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ewt", type=Path, required=True,
                        help="directory with en_ewt-ud-{train,dev,test}.spacy")
    parser.add_argument("--uner", type=Path, required=True,
                        help="directory with UNER {train,dev,test}.spacy")
    parser.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS))
    parser.add_argument("--steps", type=int, default=3000, help="the step budget of every system")
    parser.add_argument("--name", default="neural", help="the report's benchmark name")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="neural_"))
    workdir.mkdir(parents=True, exist_ok=True)
    corpora = {"upos": upos_as_tags(args.ewt, workdir / "ewt_tags") if "upos" in args.tasks
               else None, "ner": args.uner}
    results: Dict[str, Dict[str, Dict[str, Any]]] = {}
    rows = []
    for task in args.tasks:
        results[task] = {}
        for i, (name, config) in enumerate(system_configs(task, args.steps, workdir).items()):
            log(f"{task}: {name}")
            r = train_and_score(name, config, corpora[task], task, workdir, i)
            results[task][name] = r
            log(f"  {100 * r['score']:.2f}, dev best {100 * r['best_dev']:.2f} at step "
                f"{r['best_step']} of {r['last_step']} ({r['train_s']:.0f} s)")
            rows.append(summary_row(TASKS[task]["title"], name, TASKS[task]["metric"], r["score"],
                                    r["train_s"], None, None, None, None,
                                    note=f"dev best at step {r['best_step']} of {r['last_step']}"
                                    + _weight_note(r["pool_weights"])))
    notes = [f"Every system: spaCy's efficiency config for the task (spacy init config "
             f"--optimize efficiency: CNN tok2vec of width 96, depth 4; Adam 0.001; words "
             f"batches compounding 100 to 1000), {args.steps} steps, dev evaluated every "
             f"{eval_frequency(args.steps)} steps, no early stopping; model-best scored on test from raw text "
             f"(spacy_crf.evaluate). NeuralCRF and spaCy's head listen to the same tok2vec "
             f"component; the features-only row has no tok2vec.",
             "'dev best at step S of T': where the dev score peaked; a peak well before T means "
             "the budget was long enough for that system.",
             "train s: the whole spacy train process, one system at a time per task (the "
             "two tasks may run side by side, one process each, on a 2-core machine)."]
    heads = " and ".join(TASKS[task]["head"] for task in args.tasks)
    summary = make_summary(f"The CRF head on a shared tok2vec against spaCy's {heads}",
                           f"python benchmarks/neural.py --ewt corpus/ewt --uner corpus/uner "
                           f"--tasks {' '.join(args.tasks)} --steps {args.steps} --name {args.name} "
                           f"--out benchmarks/results/{args.name}.json", rows, notes)
    write_json(args.out, {"benchmark": args.name, "environment": environment(), "steps": args.steps,
                          "systems": results, "summary": summary,
                          "benchmark_wall_s": time.perf_counter() - began})
    print_rows(rows, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
