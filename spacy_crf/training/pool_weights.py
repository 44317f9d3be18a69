"""Fit the weights of a pool of experts on held-out data (the dev set).

``spacy-crf.NeuralCRF.v3`` trains each expert of its pool on its own likelihood
(``models/pooled_experts.py``), so no gradient ever reaches the weights between
them: ``neural_weight`` fixes them. A fixed weight does not bound an expert's
say, though. An expert that overfits (a tok2vec CRF on a small NER corpus)
grows sharper, its scores larger, and takes the pool over on new text while
the other expert is still improving; the pool's dev score then peaks early,
where the other expert is weak. Smith, Cohn and Osborne (2005) fit the weights
of a logarithmic opinion pool on held-out data; this does that for pools of
two experts.

The held-out negative log-likelihood of the pool is convex in the weight ``w``
of the second expert (the gold labelling's score is linear in ``w``, and log Z
is a log-sum-exp of scores linear in ``w``), so a golden-section search over
``[0, 1]`` finds its minimum. An end is a fit like any other: where dev says
one expert adds nothing (a tok2vec CRF beside the features on a small NER
corpus), its weight goes to 0 and the pool decodes as the other expert alone,
so a pool is never held below its better expert by a floor on the weights.
The experts' scores are computed once per fit; each step of the search only
pools, constrains and runs the likelihood kernel.

In ``spacy train`` the callback refits before every evaluation, on the
training config's own dev corpus (``[training] dev_corpus``, augmenters
included), so the dev score that picks model-best is the pool's under its
fitted weight, and model-best keeps that weight:

    [training.before_update]
    @callbacks = "spacy-crf.fit_pool_weights.v1"
    every = ${training.eval_frequency}

The components in ``[training] frozen_components`` are left as they are, as
spaCy promises for them: the callback reads that list from the pipeline's
config where it runs and fits the other pools only (E122 at step 0 where
every pool is frozen: the callback would change nothing).

The fit reads the current parameters; with ``use_averages`` in the optimizer,
spaCy evaluates the averaged ones, for which the fitted weight is close but
not refitted. After training, :func:`fit_pool_weights` does the same for a
loaded pipeline and any held-out examples (``skip`` names the components to
leave alone).
"""

import logging
import math
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from spacy.language import Language
from spacy.training import Example
from spacy.util import registry, resolve_dot_names

from .. import inference
from ..errors import Errors
from ..models.pooled_experts import WEIGHTS, pool_scores, pool_weights_node
from ..pipeline.crf_tagger import CRFTagger
from ..pipeline.inputs import run_components_before
from ..util import is_count

logger = logging.getLogger("spacy_crf")

#: the range searched for the second expert's weight: either expert may drop out
BOUNDS = (0.0, 1.0)
#: the search stops when the bracket is this narrow
TOLERANCE = 0.005

#: per batch: the experts' scores, the batch's layout and its gold ids
_HeldOut = List[Tuple[Sequence[Any], Any, np.ndarray]]


def pooled_crfs(nlp: Language, skip: Iterable[str] = ()) -> List[Tuple[str, CRFTagger]]:
    """The ``crf_tagger`` components of ``nlp`` whose model is a pool of experts,
    but those named in ``skip`` (e.g. ``[training] frozen_components``)."""
    skip = set(skip)
    return [(name, pipe) for name, pipe in nlp.pipeline
            if isinstance(pipe, CRFTagger) and pool_weights_node(pipe.model) is not None
            and name not in skip]


def frozen_components(nlp: Language) -> List[str]:
    """``[training] frozen_components`` of the pipeline's config: the components
    training leaves unchanged (as ``spacy train`` runs it, the config it trains)."""
    training = nlp.config.interpolate().get("training", {})
    return list(training.get("frozen_components") or [])


def fit_pool_weights(nlp: Language, examples: Iterable[Example], batch_size: int = 256,
                     skip: Iterable[str] = ()) -> Dict[str, List[float]]:
    """Set every pool's weights to those that maximise the likelihood of ``examples``.

    Parameters
    ----------
    nlp : Language
        The pipeline; the components before each pooled ``crf_tagger`` run on
        the examples' predicted docs first (a shared tok2vec, a parser).
    examples : iterable of Example
        Held-out examples (not the training data: on it an overfitting expert
        looks best).
    batch_size : int
        Docs per batch of the model's forward pass.
    skip : iterable of str
        Components to leave as they are, pooled or not: the callback of
        ``spacy train`` passes ``[training] frozen_components``.

    Returns
    -------
    dict
        Per pooled component fitted (not in ``skip``), the weights it now has
        (those it had where the examples carry none of its labels).
    """
    examples = [eg for eg in examples if len(eg.predicted)]
    fitted = {}
    for name, pipe in pooled_crfs(nlp, skip):
        node = pool_weights_node(pipe.model)
        if len(node.attrs[WEIGHTS]) != 2:
            raise ValueError(Errors.E122.format(
                why=f"'{name}' pools {len(node.attrs[WEIGHTS])} experts; the fit searches "
                    "the weight of a pool of two"))
        held_out = _held_out_scores(nlp, name, pipe, examples, batch_size)
        if held_out:
            weight = golden_section(lambda w: _pooled_nll(pipe, held_out, w), *BOUNDS, TOLERANCE)
            node.attrs[WEIGHTS] = [1.0 - weight, weight]
        fitted[name] = list(node.attrs[WEIGHTS])
    return fitted


def golden_section(func: Callable[[float], float], low: float, high: float,
                   tolerance: float) -> float:
    """The minimum of a unimodal ``func`` on ``[low, high]``, to ``tolerance``; an
    end of the interval where the minimum is there (the bracket only nears it)."""
    ends = ((func(low), low), (func(high), high))
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    left, right = high - ratio * (high - low), low + ratio * (high - low)
    f_left, f_right = func(left), func(right)
    while high - low > tolerance:
        if f_left <= f_right:
            high, right, f_right = right, left, f_left
            left = high - ratio * (high - low)
            f_left = func(left)
        else:
            low, left, f_left = left, right, f_right
            right = low + ratio * (high - low)
            f_right = func(right)
    middle = (low + high) / 2.0
    return min(((func(middle), middle),) + ends)[1]


def _held_out_scores(nlp: Language, name: str, pipe: CRFTagger, examples: List[Example],
                     batch_size: int) -> _HeldOut:
    """The experts' scores of every batch of ``examples``, with its layout and gold."""
    # the docs as the component meets them in nlp.pipe (enabled components only)
    docs = run_components_before(name, nlp.pipeline, [eg.predicted for eg in examples], batch_size)
    held_out = []
    pipe.use_prediction_weights()  # the weights it decodes with (averaged ones)
    for start in range(0, len(docs), batch_size):
        batch, batch_docs = examples[start:start + batch_size], docs[start:start + batch_size]
        pipe.check_inputs(batch_docs)
        read = pipe.read_batch(batch_docs)
        layout = read.layout
        scores = pipe.model.predict(read)
        gold = pipe.gold_label_ids(batch, pipe.constrain_scores(scores), layout)
        if (gold >= 0).any():
            held_out.append((scores.experts, layout, gold))
    return held_out


def _pooled_nll(pipe: CRFTagger, held_out: _HeldOut, weight: float) -> float:
    """Summed negative log-likelihood of the held-out gold under the pool with ``weight``."""
    total = 0.0
    for experts, layout, gold in held_out:
        pooled = pool_scores(experts, [1.0 - weight, weight]).replace(experts=None)
        nll, _ = inference.nll_and_gradient(pipe.constrain_scores(pooled), layout, gold)
        total += float(nll.sum())
    return total


@registry.callbacks("spacy-crf.fit_pool_weights.v1")
def create_fit_pool_weights(every: int = 200,
                            max_examples: Optional[int] = None) -> Callable[[Language, Dict], None]:
    """A ``[training.before_update]`` callback: refit every pool's weights on the dev
    corpus before each evaluation.

    The pools of ``[training] frozen_components`` (read from the config of the
    pipeline the callback runs on) keep their weights: a frozen component
    leaves training as it came in, as spaCy promises.

    Parameters
    ----------
    every : int
        Refit at every step that is a multiple of this: the training's
        ``eval_frequency`` (interpolate ``${training.eval_frequency}``).
    max_examples : int, optional
        Fit on the first this many dev examples only (all by default).

    Returns
    -------
    callable
        ``callback(nlp, {"step": ..., "epoch": ...})``; at step 0 a ValueError
        (E122) where no crf_tagger has a pool of experts, or every one that
        has is frozen.
    """
    for key, value in (("every", every), ("max_examples", max_examples)):
        if not is_count(value) and not (key == "max_examples" and value is None):
            raise ValueError(Errors.E122.format(why=f"{key} must be a positive integer "
                                                     f"(got {value!r})"))
    dev_corpus: List[Callable] = []

    def fit_before_evaluation(nlp: Language, info: Dict[str, Any]) -> None:
        step = info["step"]
        if step == 0:  # before any update: say now, not at the first evaluation, if it cannot work
            if not pooled_crfs(nlp):
                raise ValueError(Errors.E122.format(
                    why="no crf_tagger of the pipeline has a pool of experts "
                        "(spacy-crf.NeuralCRF.v3 with templates); remove "
                        "[training.before_update]"))
            frozen = frozen_components(nlp)
            if not pooled_crfs(nlp, frozen):
                raise ValueError(Errors.E122.format(
                    why=f"every crf_tagger with a pool of experts is in [training] "
                        f"frozen_components ({', '.join(frozen)}), and a frozen component "
                        "stays as it is; remove [training.before_update], or unfreeze "
                        "the component"))
            return
        if step % every:
            return
        if not dev_corpus:
            config = nlp.config.interpolate()  # nlp.config keeps ${paths.dev} as written
            dev_corpus.extend(resolve_dot_names(config, [config["training"]["dev_corpus"]]))
        examples = dev_corpus[0](nlp)
        if max_examples is not None:
            examples = (eg for _, eg in zip(range(max_examples), examples))
        # frozen components leave training as they came in, their pools too
        fitted = fit_pool_weights(nlp, examples, skip=frozen_components(nlp))
        for name, weights in fitted.items():
            logger.info("step %d: %s pool weights %s (fitted on dev)", step, name,
                        [round(w, 3) for w in weights])

    return fit_before_evaluation
