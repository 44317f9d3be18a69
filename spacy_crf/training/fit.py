"""Batch training of a FeatureCRF with L-BFGS (L2) or OWL-QN (L1 + L2), as CRFsuite trains.

:func:`fit` is the trainer behind ``python -m spacy_crf.fit`` (``spacy
crf-fit``, :mod:`spacy_crf.commands.fit`). It reads the config and corpora
as ``spacy train`` does, featurizes the training corpus once with the
component's own model, then minimises CRFsuite's objective ``-log-likelihood
+ c1 * ||w||_1 + c2 * ||w||^2`` over every weight (the hashed rows the corpus
uses, bias, transitions, start and end; pair and root scores of a tree) with
the full gradient, computed in numba on every core. It prints one line per
iteration, evaluates dev with ``nlp.evaluate`` every ``eval_frequency``
iterations and at the end, and writes ``DIR/model-best`` and
``DIR/model-last`` with the dev scores in ``meta.json``, as ``spacy train``
does. The ``[training]`` optimizer, batcher and epochs are not used.

``init_from`` warm-starts from the crf_tagger of a trained pipeline: its
weights are the first iterate and the corpus's labels it lacks are added (the
model grows, as ``add_label`` grows it); its settings replace the config's
(W048 names those not used, E259 refuses another target). ``n_workers``
evaluates the objective on a local Dask cluster of that many processes
instead of threads, one corpus shard each; ``address`` on a running cluster
(one shard per worker). The driver featurizes, scatters the shards once and runs the
optimizer; the weights equal the threaded fit's with as many shards.
"""

import os
import shutil
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

import numpy as np
import spacy
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example
from spacy.training.loop import (create_before_to_disk_callback, create_evaluation_callback,
                                 update_meta)
from spacy.util import load_config

from ..errors import Errors, Warnings, warn
from ..losses import get_loss, registered_losses
from ..pipeline.crf_tagger import CRFTagger
from ..targets import Target
from ..util import make_writable_dir
from .train_config import check_corpora, load_pipeline, training_corpora
from .corpus import (FEATURE_CRF, check_emissions, feature_layers, featurize_corpus,
                     holds_part_weights, not_a_feature_crf, read_corpus, read_weights,
                     release_memory, write_weights)
from .distributed import DaskObjective
from .objective import ShardedObjective
from .optimize import OPTIMIZERS, StoppingRule, minimize
from .owlqn import Iteration

DIR_MODEL_BEST = "model-best"
DIR_MODEL_LAST = "model-last"
#: model directories being written start with this
TEMP_PREFIX = ".tmp-"


def fit(
    config_path: Union[str, Path],
    output_dir: Optional[Union[str, Path]] = None,
    *,
    overrides: Optional[Dict[str, Any]] = None,
    c1: float = 0.0,
    c2: float = 1.0,
    max_iterations: int = 100,
    period: int = 10,
    delta: float = 1e-5,
    eval_frequency: int = 20,
    component: Optional[str] = None,
    n_threads: Optional[int] = None,
    n_workers: Optional[int] = None,
    address: Optional[str] = None,
    optimizer: str = "lbfgs",
    init_from: Optional[Union[str, Path]] = None,
    stdout: Optional[IO] = None,
) -> Language:
    """Train a config's FeatureCRF component with L-BFGS (``c1 = 0``) or OWL-QN (``c1 > 0``).

    Minimises CRFsuite's objective ``-log-likelihood + c1 * ||w||_1 + c2 *
    ||w||^2``: ``c1`` and ``c2`` mean what they mean to CRFsuite and
    sklearn-crfsuite (``c2=1`` here is ``c2=1`` there). Every weight is
    penalised: the hashed rows, the bias and the label-interaction scores.

    Parameters
    ----------
    config_path : str or Path
        A ``spacy train`` config with a ``crf_tagger`` whose model is
        ``spacy-crf.FeatureCRF``.
    output_dir : str or Path, optional
        Where ``model-best`` and ``model-last`` go (nothing is saved if None).
    overrides : dict, optional
        Config overrides, e.g. ``{"paths.train": "train.spacy"}``.
    c1 : float
        L1 coefficient (CRFsuite's default 0). Above 0, OWL-QN makes weights exactly zero.
    c2 : float
        L2 coefficient (CRFsuite's default 1).
    max_iterations : int
        Iterations at most (each is one or a few full-corpus gradients).
    period, delta : int, float
        CRFsuite's convergence test: stop when the objective improved by less
        than ``delta`` (relative) over the last ``period`` iterations.
    eval_frequency : int
        Evaluate dev every this many iterations (and after the last). A dev
        evaluation runs the whole pipeline and its scorer, which costs about
        as much as several iterations on CoNLL-2000.
    component : str, optional
        The component to train, if the pipeline has several crf_taggers.
    n_threads : int, optional
        Threads (and corpus shards) for the objective; default: the CPUs this
        process may use.
    n_workers : int, optional
        Evaluate the objective on a local Dask cluster of this many worker
        processes instead, one corpus shard each (data-parallel; needs the
        ``distributed`` extra). The weights equal the threaded fit's with as
        many shards.
    address : str, optional
        Use the running Dask cluster at this scheduler address instead (one
        shard per worker it has).
    optimizer : str
        ``lbfgs``: our L-BFGS (OWL-QN when ``c1 > 0``), CRFsuite's algorithm
        with a backtracking line search. ``scipy``: scipy's L-BFGS-B (``c1 =
        0`` only; its own overhead is about 2 s per iteration at CoNLL-2000's
        6.4 million weights).
    init_from : str or Path, optional
        A trained pipeline whose crf_tagger of the same name to start from
        (warm start): its weights are the first iterate, labels of the corpus
        it lacks are added (``initialize(keep_weights=True)``), and the hashed
        rows the corpus does not use keep their trained weights. Its settings
        (model, structure and the rest of its block) replace the config's
        component settings: W048 names those of the config that differ and
        are not used; a config whose target differs is refused (E259).
    stdout : file, optional
        Where the progress lines go (default ``sys.stdout``).

    Returns
    -------
    Language
        The pipeline with the weights of the last iteration (``model-last``).
    """
    _check_options(c1=c1, c2=c2, max_iterations=max_iterations, period=period, delta=delta,
                   eval_frequency=eval_frequency, n_threads=n_threads, n_workers=n_workers)
    if optimizer not in OPTIMIZERS or (optimizer == "scipy" and c1 > 0):
        raise ValueError(Errors.E032.format(name="optimizer", value=optimizer,
                                            what=f"one of {OPTIMIZERS} ('scipy' with c1 = 0)"))
    out = stdout or sys.stdout
    if output_dir is not None:
        _check_output(Path(output_dir))
    if n_threads is None:
        n_threads = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                     else os.cpu_count() or 1)
    begin = time.perf_counter()
    config = load_config(config_path, overrides=overrides or {}, interpolate=False)
    nlp = load_pipeline(config)
    T, train_corpus, dev_corpus = training_corpora(nlp)
    check_corpora(train=train_corpus, dev=dev_corpus)
    # (with --init-from the trained component's model and structure are fit's,
    # checked once it has replaced the config's)
    pipe = _component(nlp, component, T, check_model=init_from is None)
    if init_from is not None:
        pipe = _warm_start(nlp, pipe.name, Path(init_from), T)
    _check_dev(dev_corpus, nlp, pipe)
    train_examples = read_corpus(train_corpus, nlp)
    _initialize(nlp, T, train_examples, keep=pipe.name if init_from is not None else None)
    if pipe.crf_structure.batch_trainer_error:
        # order = null chose by the labels initialize found (a span target over 200 tags)
        raise _not_fittable(pipe)
    if output_dir is not None:  # (after the checks of the inputs: a bad one leaves no folder)
        _prepare_output(Path(output_dir))
    _annotate(nlp, pipe, T, train_examples)
    with _engine(n_workers, address) as client:
        # one shard per thread, or per Dask worker
        n_shards = n_threads if client is None else len(client.scheduler_info()["workers"])
        shards, buckets = featurize_corpus(pipe, train_examples, n_shards)
        layout = shards[0].layout
        start = np.zeros(layout.size)
        if init_from is not None:  # the trained weights: the first iterate, and the rows kept
            start = read_weights(pipe, layout, buckets)
            table = feature_layers(pipe.model)[1]
            trained = table.get_param("W").copy()
        check_emissions(pipe, train_examples, shards, buckets)  # (it zeroes the table)
        if init_from is not None:
            table.set_param("W", trained)
        # the shards hold all the optimizer needs: give the corpus's memory back
        # before the optimizer's vectors take theirs (CoNLL-2000: about 190 MB)
        del train_examples
        release_memory()
        dev_examples = read_corpus(dev_corpus, nlp)
        evaluate = create_evaluation_callback(nlp, lambda _: dev_examples, T["score_weights"])
        n_tokens = sum(shard.n_tokens for shard in shards)
        n_seqs = sum(int(shard.structure.lengths.shape[0]) for shard in shards)
        where = "" if client is None else f" on {n_shards} Dask worker(s)"
        _say(out, f"Fitting '{pipe.name}' ({pipe.cfg['structure']}, {layout.n_labels} labels) on "
                  f"{n_seqs} sequences, {n_tokens} tokens: {layout.n_rows} feature rows, "
                  f"{layout.size} weights, {len(shards)} shard(s){where}; "
                  f"{'OWL-QN' if c1 > 0 else 'L-BFGS'} ({optimizer}) c1={c1:g} c2={c2:g}; "
                  f"ready in {time.perf_counter() - begin:.1f} s")
        objective = (ShardedObjective(shards, c2=c2, n_threads=n_threads) if client is None
                     else DaskObjective(shards, client, c2=c2))
        progress = _Progress(out, pipe, layout, buckets, evaluate, eval_frequency, begin)
        try:
            theta, n_iterations, message = minimize(
                objective, start, c1=c1, max_iterations=max_iterations,
                rule=StoppingRule(period=period, delta=delta), report=progress,
                optimizer=optimizer)
            final = progress.finish(theta, n_iterations, objective)
        finally:
            objective.close()
    _say(out, f"{message}; {n_iterations} iterations, {objective.n_evaluations} evaluations "
              f"of the objective, {time.perf_counter() - begin:.1f} s")
    if output_dir is not None:
        _save(nlp, pipe, T, Path(output_dir), progress, final, out)
    return nlp


class _Progress:
    """The per-iteration report: one line each, dev scores every ``eval_frequency``.

    Keeps the weights of the best dev score so far (``model-best``).
    """

    def __init__(self, out: IO, pipe: CRFTagger, layout, buckets: np.ndarray,
                 evaluate: Callable[[], Tuple[float, Dict[str, Any]]],
                 eval_frequency: int, begin: float) -> None:
        self.out, self.pipe, self.layout, self.buckets = out, pipe, layout, buckets
        self.evaluate = evaluate
        self.eval_frequency = eval_frequency
        self.best: Optional[Tuple[float, np.ndarray, Dict[str, Any], float]] = None
        self.last: Optional[Tuple[int, float, Dict[str, Any]]] = None  # last evaluation
        self.reported: Tuple[int, float] = (0, float("nan"))  # last iteration and loss
        self.tick = time.perf_counter()
        self.begin = begin  # when fit() started: the last column is the wall time so far
        _say(out, f"{'it':>4} {'loss':>14} {'|grad|':>10} {'active':>9} {'score':>7} {'secs':>6} "
                  f"{'total':>7}")

    def __call__(self, info: Iteration, theta: np.ndarray) -> None:
        k, loss = info.k, info.loss
        if not np.isfinite(loss):
            raise ValueError(Errors.E034.format(value=loss, iteration=k))
        self.reported = (k, loss)
        score = ""
        if k % self.eval_frequency == 0:
            score = f"{self._evaluate(k, theta, loss):.4f}"
        now = time.perf_counter()
        _say(self.out, f"{k:>4} {loss:>14.4f} {info.gnorm:>10.4g} {info.active:>9} "
                       f"{score:>7} {now - self.tick:>6.2f} {now - self.begin:>7.1f}")
        self.tick = now

    def _evaluate(self, k: int, theta: np.ndarray, loss: float) -> float:
        write_weights(self.pipe, self.layout, self.buckets, theta, clear_others=False)
        score, scores = self.evaluate()
        self.last = (k, loss, scores)
        if self.best is None or score > self.best[0]:
            self.best = (score, theta.copy(), scores, loss)
        return score

    def finish(self, theta: np.ndarray, k: int, objective: ShardedObjective) -> Tuple:
        """Evaluate the final weights (unless just done); returns (theta, scores, loss)."""
        if self.last is None or self.last[0] != k:
            loss = self.reported[1] if self.reported[0] == k and k else objective(theta)[0]
            score = self._evaluate(k, theta, loss)
            _say(self.out, f"{k:>4} {'(final)':>14} {'':>10} {np.count_nonzero(theta):>9} "
                           f"{score:>7.4f}")
        write_weights(self.pipe, self.layout, self.buckets, theta, clear_others=False)
        return theta, self.last[2], self.last[1]


def _check_options(**values: Any) -> None:
    """E032 for an option out of range (``n_threads``, ``n_workers`` may be None).

    Every number must be finite: ``c2 = inf`` made the objective NaN at the
    first step, ``c1 = inf`` an all-zero model."""
    least = {"c1": 0, "c2": 0, "delta": 0, "max_iterations": 0, "period": 0,
             "eval_frequency": 1, "n_threads": 1, "n_workers": 1}
    for name, value in values.items():
        if name in ("n_threads", "n_workers") and value is None:
            continue
        whole = isinstance(least[name], int) and name not in ("c1", "c2", "delta")
        kinds = (int,) if whole else (int, float)
        if (isinstance(value, bool) or not isinstance(value, kinds)
                or not np.isfinite(value) or not value >= least[name]):
            what = f"a {'whole number' if whole else 'finite number'} >= {least[name]}"
            raise ValueError(Errors.E032.format(name=name, what=what, value=value))


@contextmanager
def _engine(n_workers: Optional[int], address: Optional[str]) -> Iterator[Any]:
    """A Dask client when the fit is distributed, else None (threads)."""
    if n_workers is None and address is None:
        yield None
        return
    from ..dask_client import dask_client

    with dask_client(n_workers=n_workers or 2, address=address) as client:
        yield client


def _check_dev(dev_corpus: Callable, nlp: Language, pipe: CRFTagger) -> None:
    """Refuse a dev corpus that cannot score ``pipe``: every evaluation would
    score 0.0 and model-best would be the first one.

    Parameters
    ----------
    dev_corpus : callable
        The config's dev corpus reader.
    nlp : Language
        The pipeline it reads with.
    pipe : CRFTagger
        The component to train, whose target reads the gold.

    Raises
    ------
    ValueError
        E142 for no documents (an empty .spacy file, or a path with no .spacy
        file); E257 for documents none of which carries the target's gold (an
        NER corpus for a POS model). Reading stops at the first annotated one.
    """
    n_docs = 0
    for eg in dev_corpus(nlp):
        if _has_gold(pipe.target, eg.reference):
            return
        n_docs += 1
    path = getattr(dev_corpus, "path", None)
    if not n_docs:
        raise ValueError(Errors.E142.format(path=path))
    raise ValueError(Errors.E257.format(path=path, target=pipe.target.name, name=pipe.name,
                                        n=n_docs))


def _has_gold(target: Target, doc: Doc) -> bool:
    """Whether a reference doc has a gold label of ``target`` on any token.

    The target's own reading of gold, as training's (W001) and initialize's
    (E008) are: ``missing_key`` marks an unannotated token. Its keys, not
    ``label_strings``, which some targets count for their label set."""
    return bool(np.any(target.reference_keys(doc) != target.missing_key))


def _check_output(output_dir: Path) -> None:
    """E143 when ``output_dir`` exists and is not a directory: found before training,
    not when saving."""
    if output_dir.exists() and not output_dir.is_dir():
        raise ValueError(Errors.E143.format(path=output_dir))


def _prepare_output(output_dir: Path) -> None:
    """Create ``output_dir`` and write a file there, removed at once: E258 when
    either fails (a read-only or missing parent, no permission), before
    training rather than when saving, which lost the run (annotate's E141 does
    the same for its OUTPUT)."""
    try:
        make_writable_dir(output_dir)  # (one that exists but refuses writes fails too)
    except OSError as err:
        why = f"{type(err).__name__}: {err.strerror or err}"
        raise ValueError(Errors.E258.format(path=output_dir, why=why)) from err


def _not_fittable(pipe: CRFTagger) -> ValueError:
    """The structure's own reason why the batch trainer cannot train it (e.g.
    segment features, two experts), else E031 for the component's model.

    A structure's reason that names a fix for fit (E211: order = 1) has an
    ``{also}`` slot, filled with what the component's model needs as well,
    so the message names every setting at once: ``factored = false`` where
    its table holds a weight per label part (E241 would come next)."""
    why = pipe.crf_structure.batch_trainer_error
    if not why:
        return not_a_feature_crf(pipe.model)
    return ValueError(why.replace("{also}", _model_needs(pipe)))


def _model_needs(pipe: CRFTagger) -> str:
    """What fit needs of ``pipe``'s model beside a structure it trains, as the
    end of a sentence that names that structure ("" where nothing)."""
    if pipe.model.name != FEATURE_CRF:
        return (f"; but its model, '{pipe.model.name}', is no spacy-crf.FeatureCRF, which fit "
                "needs as well (E031)")
    if holds_part_weights(pipe.model, pipe.target):
        return (f", and factored = false in the [components.{pipe.name}.model] block, as its "
                "table holds a weight per label part where fit trains a weight per label "
                "(E241; a model of other parameters, trained anew)")
    return ""


def _component(nlp: Language, name: Optional[str], T: Dict[str, Any],
               check_model: bool = True) -> CRFTagger:
    """The crf_tagger to train: ``name``, or the only FeatureCRF one (E030, E031, E033, E036);
    ``check_model=False``: not whether fit trains its model and structure (E031,
    E211: a warm start replaces them)."""
    pipeline = ", ".join(f"{n} ({type(p).__name__})" for n, p in nlp.pipeline) or "empty"
    if name is not None:
        if name not in nlp.pipe_names or not isinstance(nlp.get_pipe(name), CRFTagger):
            raise ValueError(Errors.E030.format(why=f"it has no crf_tagger named '{name}'",
                                                pipeline=pipeline))
        pipe = nlp.get_pipe(name)
        if check_model and pipe.model.name != FEATURE_CRF:
            raise _not_fittable(pipe)
    else:
        crfs = [p for _, p in nlp.pipeline if isinstance(p, CRFTagger)]
        featured = [p for p in crfs if p.model.name == FEATURE_CRF or not check_model]
        if len(crfs) == 1 and not featured:
            raise _not_fittable(crfs[0])
        if len(featured) != 1:
            why = ("it has none" if not featured else
                   f"it has several ({', '.join(p.name for p in featured)})")
            raise ValueError(Errors.E030.format(why=why, pipeline=pipeline))
        pipe = featured[0]
    if check_model and pipe.crf_structure.batch_trainer_error:
        raise _not_fittable(pipe)  # (a FeatureCRF whose structure fit cannot train)
    if check_model and holds_part_weights(pipe.model, pipe.target):
        # before the corpus is read and --output made (a warm start: E253 around it)
        raise ValueError(Errors.E241.format(name=pipe.name))
    loss = get_loss(pipe.cfg.get("loss", "nll"))
    if not loss.supports_batch_fit:  # the loss says whether the batch trainer can minimise it
        supported = [repr(name) for name, other in registered_losses().items()
                     if other.supports_batch_fit]
        raise ValueError(Errors.E036.format(name=pipe.name, loss=loss.name,
                                            supported=", ".join(supported)))
    frozen = set(T["frozen_components"])
    others = [n for n, p in nlp.pipeline
              if n != pipe.name and isinstance(p, TrainablePipe) and n not in frozen]
    if others:
        raise ValueError(Errors.E033.format(name=pipe.name, others=others))
    return pipe


def _initialize(nlp: Language, T: Dict[str, Any], examples: List[Example],
                keep: Optional[str] = None) -> None:
    """``nlp.initialize`` as ``spacy train`` calls it, on the corpus read once;
    the trained component ``keep`` (a warm start) keeps its weights and gets
    the corpus's new labels."""
    nlp._link_components()
    with nlp.select_pipes(disable=list(T["frozen_components"]) + ([keep] if keep else [])):
        nlp.initialize(lambda: examples)
    if keep:
        nlp.get_pipe(keep).initialize(lambda: examples, nlp=nlp, keep_weights=True)


def _warm_start(nlp: Language, name: str, path: Path, T: Dict[str, Any]) -> CRFTagger:
    """Replace the component ``name`` by the one of the trained pipeline at
    ``path`` (:func:`_source`) and return it, checked as :func:`_component`
    checks the config's.

    The trained component comes with its own settings: E259 where its target
    is not the config's (fit would train and save a model of another target),
    W048 naming the config's other settings it does not use.

    Raises
    ------
    ValueError
        E169 (no such pipeline or component), E259, or E253 with the reason why
        fit cannot train the trained component.
    """
    given = _component_settings(nlp, name)
    _source(nlp, name, path)
    used = _component_settings(nlp, name)
    if used.get("target") != given.get("target"):
        raise ValueError(Errors.E259.format(path=path, name=name, trained=used.get("target"),
                                            given=given.get("target")))
    try:  # the trained component replaced the config's, its structure and model too
        pipe = _component(nlp, name, T)
    except ValueError as err:
        raise ValueError(Errors.E253.format(path=path, name=name, why=err)) from err
    unused = _unused_settings(given, used)
    if unused:
        warn(Warnings.W048.format(path=path, name=name, settings="; ".join(unused)))
    return pipe


def _component_settings(nlp: Language, name: str) -> Dict[str, Any]:
    """The settings of the pipeline's ``[components.NAME]`` block, its
    sub-blocks flattened to dotted keys (``model.n_buckets``)."""
    return _flatten(nlp.config.interpolate()["components"][name])


def _flatten(block: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    flat: Dict[str, Any] = {}
    for key, value in block.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _unused_settings(given: Dict[str, Any], used: Dict[str, Any]) -> List[str]:
    """Each setting of ``given`` (the config's) that ``used`` (the trained
    component's) lacks or has another value of, as ``key = value (trained:
    value)``. Settings only the trained component has are not the config's."""
    unused = []
    for key, value in given.items():
        if key not in used:
            unused.append(f"{key} = {value!r} (the trained component has no such setting)")
        elif used[key] != value:
            unused.append(f"{key} = {value!r} (trained: {used[key]!r})")
    return unused


def _source(nlp: Language, name: str, path: Path) -> Language:
    """``nlp`` with its component ``name`` replaced by the one of the trained
    pipeline at ``path`` (E169 if it has none of that name)."""
    try:
        trained = spacy.load(path)
    except (OSError, ValueError) as err:
        raise ValueError(Errors.E169.format(path=path, name=name, why=err)) from err
    if name not in trained.pipe_names:
        raise ValueError(Errors.E169.format(path=path, name=name,
                                            why=f"its components are {trained.pipe_names}"))
    index = nlp.pipe_names.index(name)
    nlp.remove_pipe(name)
    nlp.add_pipe(name, source=trained, before=index if index < len(nlp.pipe_names) else None)
    return nlp


def _annotate(nlp: Language, pipe: CRFTagger, T: Dict[str, Any], examples: List[Example]) -> None:
    """Let the [training] annotating_components before ``pipe`` annotate the
    predicted docs, as they do in ``spacy train``."""
    annotating = set(T["annotating_components"])
    for name, proc in nlp.pipeline:
        if name == pipe.name:
            break
        if name in annotating:
            docs = list(proc.pipe(eg.predicted for eg in examples))
            for eg, doc in zip(examples, docs):
                eg.predicted = doc


def _save(nlp: Language, pipe: CRFTagger, T: Dict[str, Any], output_dir: Path,
          progress: _Progress, final: Tuple, out: IO) -> None:
    """model-best (best dev score) and model-last (final weights), with meta.json scores.

    Each is written beside its final name and renamed into place: a run killed
    while saving leaves the previous model-best and model-last whole (and
    perhaps a ``.tmp-`` directory, removed by the next save).
    """
    output_dir.mkdir(parents=True, exist_ok=True)
    _remove_stale(output_dir)
    before_to_disk = create_before_to_disk_callback(T["before_to_disk"])
    _, best_theta, best_scores, best_loss = progress.best
    last_theta, last_scores, last_loss = final
    for path, theta, scores, loss in ((output_dir / DIR_MODEL_BEST, best_theta, best_scores,
                                       best_loss),
                                      (output_dir / DIR_MODEL_LAST, last_theta, last_scores,
                                       last_loss)):
        # (rows the corpus does not use keep what they had: zero, or a warm start's)
        write_weights(pipe, progress.layout, progress.buckets, theta, clear_others=False)
        update_meta(T, nlp, {"other_scores": scores, "losses": {pipe.name: loss}})
        temp = path.with_name(f"{TEMP_PREFIX}{path.name}-{os.getpid()}")
        before_to_disk(nlp).to_disk(temp)
        _replace_dir(temp, path)
    _say(out, f"Saved {output_dir / DIR_MODEL_BEST} and {output_dir / DIR_MODEL_LAST}")


def _replace_dir(new: Path, path: Path) -> None:
    """Put the directory ``new`` at ``path``, replacing what is there.

    A directory cannot be renamed onto a non-empty one, so the old one is
    renamed aside first; ``path`` is missing only between two renames, and the
    old copy is deleted once the new one is in place.
    """
    old = path.with_name(f"{TEMP_PREFIX}{path.name}-old-{os.getpid()}")
    if path.exists():
        os.replace(path, old)
    os.replace(new, path)
    if old.exists():
        shutil.rmtree(old)


def _remove_stale(output_dir: Path) -> None:
    """Clear what a killed save left behind: a previous model renamed aside but not
    yet replaced goes back to its name; other ``.tmp-`` model directories go."""
    for name in (DIR_MODEL_BEST, DIR_MODEL_LAST):
        aside = sorted(output_dir.glob(f"{TEMP_PREFIX}{name}-old-*"))
        if aside and not (output_dir / name).exists():
            os.replace(aside[0], output_dir / name)
        for stale in output_dir.glob(f"{TEMP_PREFIX}{name}-*"):
            if stale.is_dir():
                shutil.rmtree(stale)


def _say(out: IO, line: str) -> None:
    out.write(line + "\n")
    out.flush()
