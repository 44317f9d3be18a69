"""EWT UPOS: the tree CRF and the chain with tree features trained on jackknifed parses.

Behind a parser trained on the same sentences, the CRF trains on trees better
than the ones it meets at test (the parser has seen those sentences), and
learns to trust them too much (``benchmarks/after_parser.py``: the tree CRF
and the tree features fall below the chain without a parser). Jackknifing, as
parsers' users do for stacked taggers: split train into K folds, parse each
fold with a parser trained on the other folds, and train the CRF on those
parses, whose errors are the kind a test sentence gets. At test the pipeline
is the parser trained on all of train, then the CRF, on raw text.

    python benchmarks/jackknife.py --parser training/ewt_parser/model-best \\
        --corpus corpus/ewt --out benchmarks/results/jackknife.json

Each fold's parser is ``configs/ewt_parser.cfg`` with ``--parser-steps`` steps
(default 2000, half the full parser's 4000 for half the data at K = 2).
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
FILES = ("en_ewt-ud-train.spacy", "en_ewt-ud-dev.spacy", "en_ewt-ud-test.spacy")


def run(args: List[Any]) -> None:
    proc = subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{args}\n{proc.stderr[-3000:]}")


def split_folds(train: Path, k: int, workdir: Path) -> List[Path]:
    """``train`` as ``k`` contiguous folds of about equal size, each a .spacy file."""
    import spacy
    from spacy.tokens import DocBin

    vocab = spacy.blank("en").vocab
    docs = list(DocBin().from_disk(train).get_docs(vocab))
    paths = []
    for i in range(k):
        path = workdir / f"fold{i}.spacy"
        DocBin(docs=docs[i * len(docs) // k:(i + 1) * len(docs) // k], store_user_data=True
               ).to_disk(path)
        paths.append(path)
    return paths


def merge(paths: List[Path], out: Path) -> Path:
    import spacy
    from spacy.tokens import DocBin

    vocab = spacy.blank("en").vocab
    docs = [doc for path in paths for doc in DocBin().from_disk(path).get_docs(vocab)]
    DocBin(docs=docs, store_user_data=True).to_disk(out)
    return out


def with_predicted_trees(parser: Path, gold: Path, out: Path) -> Dict[str, float]:
    """``gold``'s docs (words, POS) with the trees ``parser`` predicts over their
    tokens instead of the treebank's; returns the parser's UAS on them."""
    import spacy
    from spacy.tokens import DocBin

    from spacy_crf.util import tokens_only

    nlp = spacy.load(parser)
    refs = list(DocBin().from_disk(gold).get_docs(nlp.vocab))
    inputs = [tokens_only(d, nlp.vocab) for d in refs]
    docs, right, total = [], 0, 0
    for ref, parsed in zip(refs, nlp.pipe(inputs, batch_size=256)):
        heads = [t.head.i for t in parsed]
        right += sum(h == t.head.i for h, t in zip(heads, ref) if not t.is_punct)
        total += sum(not t.is_punct for t in ref)
        docs.append(tokens_only(ref, nlp.vocab, pos=[t.pos_ for t in ref], heads=heads,
                                deps=[t.dep_ for t in parsed]))
    DocBin(docs=docs).to_disk(out)
    return {"uas": right / max(total, 1)}


def train_crf(config: Path, structure: str, train: Path, dev: Path, out: Path) -> float:
    """spacy train of ``config`` (its augmenter copies the trees) at ``structure``; seconds."""
    start = time.perf_counter()
    run(["-m", "spacy", "train", config, "--output", out, "--paths.train", train,
         "--paths.dev", dev, "--components.crf_tagger.structure", structure])
    return time.perf_counter() - start


def no_parser_baseline(train: Path, dev: Path, test: Path, out: Path) -> Dict[str, Any]:
    """The chain with the same token features and no parser (configs/ewt_upos.cfg),
    scored on raw test text as the rows behind the parser are."""
    from spacy_crf.evaluation import evaluate

    start = time.perf_counter()
    run(["-m", "spacy", "train", CONFIGS / "ewt_upos.cfg", "--output", out, "--paths.train", train,
         "--paths.dev", dev])
    train_s = time.perf_counter() - start
    scores = evaluate(str(out / "model-best"), test, [])
    return {"score": scores["pos_acc"], "train_s": train_s, "evaluate": scores}


def behind_parser(parser: Path, crf: Path, out: Path) -> Path:
    """The full parser's pipeline with the trained crf_tagger added behind it."""
    import spacy

    nlp = spacy.load(parser)
    nlp.add_pipe("crf_tagger", source=spacy.load(crf))
    nlp.to_disk(out)
    return out


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parser", type=Path, required=True,
                        help="the parser trained on all of train (the test-time parser)")
    parser.add_argument("--corpus", type=Path, required=True,
                        help="directory with en_ewt-ud-{train,dev,test}.spacy")
    parser.add_argument("--folds", type=int, default=2)
    parser.add_argument("--parser-steps", type=int, default=2000)
    parser.add_argument("--name", default="jackknife",
                        help="the report's benchmark name")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="jackknife_"))
    workdir.mkdir(parents=True, exist_ok=True)
    train, dev, test = (args.corpus / name for name in FILES)
    folds = split_folds(train, args.folds, workdir)
    parsed_folds, fold_uas, parser_s = [], [], 0.0
    for i, fold in enumerate(folds):
        rest = merge([f for j, f in enumerate(folds) if j != i], workdir / f"rest{i}.spacy")
        log(f"fold {i}: parser on the other folds ({args.parser_steps} steps)")
        start = time.perf_counter()
        run(["-m", "spacy", "train", CONFIGS / "ewt_parser.cfg", "--output",
             workdir / f"parser{i}", "--paths.train", rest, "--paths.dev", dev,
             "--training.max_steps", args.parser_steps])
        parser_s += time.perf_counter() - start
        out = workdir / f"parsed{i}.spacy"
        fold_uas.append(with_predicted_trees(workdir / f"parser{i}" / "model-best", fold, out)["uas"])
        log(f"  UAS on the held-out fold {100 * fold_uas[-1]:.2f}")
        parsed_folds.append(out)
    jack_train = merge(parsed_folds, workdir / "train_jackknifed.spacy")
    # the full parser's trees: over train (what training behind it sees) and dev
    self_train = workdir / "train_self_parsed.spacy"
    train_uas = with_predicted_trees(args.parser, train, self_train)["uas"]
    parsed_dev = workdir / "dev_parsed.spacy"
    dev_uas = with_predicted_trees(args.parser, dev, parsed_dev)["uas"]
    log(f"full parser UAS: train {100 * train_uas:.2f}, dev {100 * dev_uas:.2f}; "
        f"jackknifed train {100 * sum(fold_uas) / len(fold_uas):.2f}")
    from spacy_crf.evaluation import evaluate

    systems = {
        "tree over jackknifed parses": ("tree", jack_train),
        "chain + tree features over jackknifed parses": ("chain", jack_train),
        "tree over the full parser's own parses of train": ("tree", self_train),
        "chain + tree features over the full parser's own parses of train": ("chain", self_train),
    }
    results: Dict[str, Dict[str, Any]] = {}
    log("chain, no parser")
    results["chain, no parser"] = no_parser_baseline(train, dev, test, workdir / "no_parser")
    log(f"  {100 * results['chain, no parser']['score']:.2f}")
    for name, (structure, train_file) in systems.items():
        log(name)
        out = workdir / name.replace(" ", "_").replace("'", "")
        train_s = train_crf(CONFIGS / "ewt_upos_tree.cfg", structure, train_file, parsed_dev, out)
        pipeline = behind_parser(args.parser, out / "model-best", workdir / f"{out.name}_pipeline")
        scores = evaluate(str(pipeline), test, [])
        results[name] = {"score": scores["pos_acc"], "train_s": train_s, "evaluate": scores}
        log(f"  {100 * scores['pos_acc']:.2f} ({train_s:.1f} s)")
    rows = [summary_row("UD English EWT UPOS", name, "acc", r["score"], r["train_s"], None, None,
                        None, None) for name, r in results.items()]
    notes = [f"Jackknifed parses: EWT train in {args.folds} contiguous folds, each parsed by "
             f"configs/ewt_parser.cfg trained on the other folds ({args.parser_steps} steps); "
             f"their UAS on the held-out folds {', '.join(f'{100 * u:.2f}' for u in fold_uas)}. "
             f"The full parser's UAS on its own training sentences {100 * train_uas:.2f}, on "
             f"dev {100 * dev_uas:.2f}.",
             "The CRF (configs/ewt_upos_tree.cfg, the structure as named) trains on gold "
             "tokens carrying the predicted trees (copied by its augmenter), dev parsed by the "
             "full parser; at test it runs behind the full parser on raw text (nothing copied), "
             "scored by spacy_crf.evaluate. train s is the CRF's spacy train alone (the parses "
             f"are made before; the fold parsers took {parser_s:.0f} s).",
             "chain, no parser: configs/ewt_upos.cfg (the same token features, no tree), "
             "trained on train and scored on the same raw test text. The rows over the full "
             "parser's own parses are the control: what training behind the parser gives "
             "(benchmarks/results/after_parser.json trains them with the parser in the "
             "pipeline)."]
    summary = make_summary(f"EWT UPOS behind a parser, trained on jackknifed parses ({args.folds} folds)",
                           f"python benchmarks/jackknife.py --parser PARSER --corpus corpus/ewt "
                           f"--folds {args.folds} --parser-steps {args.parser_steps} --out "
                           f"benchmarks/results/{args.name}.json", rows, notes)
    write_json(args.out, {"benchmark": args.name, "environment": environment(),
                          "fold_uas": fold_uas, "train_uas": train_uas, "dev_uas": dev_uas,
                          "parser_s": parser_s, "systems": results, "summary": summary,
                          "benchmark_wall_s": time.perf_counter() - began})
    print_rows(rows, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
