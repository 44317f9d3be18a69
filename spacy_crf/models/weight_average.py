"""Averaged weights: what a model trained by updates predicts with.

Stochastic updates leave a sparse CRF's weights moving around the optimum
with the noise of the last batches; the average of the recent iterates
(Polyak-Ruppert averaging, the averaged perceptron's trick) sits closer to it.
thinc keeps such averages when the optimizer has ``use_averages``, and
``spacy train`` then evaluates and saves them; but spaCy's default optimizer
has ``use_averages = false``, and a plain ``nlp.update`` loop never swaps
averages in. So a layer with :data:`AVERAGE_WEIGHTS` in its attrs (the
feature CRF's tables and potentials, ``FeatureCRF(average_weights=True)``,
the default) has its parameters averaged by its component when the optimizer
keeps none: thinc's exponential moving average, stepped with the weights
(``sparse_table.step_model``), the hashed tables lazily row by row.

Measured on the factory defaults, 5 epochs of ``nlp.update`` in batches of 32
(``benchmarks/word_features.py``'s loop): UNER dev F1 68.59 -> 69.81, EWT
UPOS dev 95.29 -> 95.22 (one run each). Through ``spacy train`` with a
filled config the best dev scores move by -0.1 (README, "Defaults").

:class:`WeightAverages` holds the averages and knows which set the model
holds now: the component shows the averages to everything that reads the
model as a predictor (``predict``, saving, pickling) and the training iterate
to everything that trains it. Swapping is by reference (no copy), and the
averages are brought up to date only when updates have happened since.
"""

import threading
from typing import Dict, Optional, Tuple

import numpy as np
from thinc.api import Model, Optimizer

from .layer_attrs import AVERAGE_WEIGHTS
from .sparse_table import ATTR as SPARSE_TABLE
from .sparse_table import settle_tables, sync_averages, waive_arrears


Key = Tuple[int, str]


def average_weights(*layers: Model) -> None:
    """Mark ``layers``: their component averages their parameters."""
    for layer in layers:
        layer.attrs[AVERAGE_WEIGHTS] = True


def _swap(model: Model, params: Dict[Key, np.ndarray]) -> Dict[Key, np.ndarray]:
    """Give ``model``'s parameters the arrays ``params`` has for them (by
    reference); returns the arrays they had."""
    before = {}
    for node in model.walk():
        for name in node.param_names:
            key = (node.id, name)
            if key in params and node.has_param(name):
                before[key] = node.get_param(name)
                node.set_param(name, params[key])
    return before


class WeightAverages:
    """A component's own averages of its model's parameters (thinc's layout:
    ``{(layer id, param name): array}``), and which set the model holds."""

    def __init__(self) -> None:
        self.averages: Dict[Key, np.ndarray] = {}
        # the training iterate while the model holds the averages, else None
        self._iterate: Optional[Dict[Key, np.ndarray]] = None
        # the model holds parameters from elsewhere (the optimizer's averages,
        # swapped in by the component's use_params): neither set is shown
        self.lent = False
        # threads predicting with one pipeline swap once, not into each other
        self._lock = threading.Lock()
        # the iterate was stepped where the averages could not follow
        # (restart_at_iterate): they restart from it at their next use
        self._behind = False

    def for_step(self, model: Model, sgd: Optimizer) -> Optional[Dict[Key, np.ndarray]]:
        """The averages an optimizer step of ``model`` should update (for the
        layers that ask, ``sparse_table.step_model``): these, or None where
        ``sgd`` keeps averages of its own (``use_averages``: spaCy swaps those
        in). The model gets its iterate back first: a step moves the iterate."""
        self.show_iterate(model)
        self._catch_up(model)
        return None if sgd.averages is not None else self.averages

    def step_elsewhere(self, model: Model) -> None:
        """The iterate ``model`` holds is about to be stepped where the
        averages cannot follow: by the collector of ``nlp.rehearse``, which
        steps the gradients a component hands it after every component has
        rehearsed. The averages are made exact now, before the weights move,
        and take that step, one step of the moving average as every update
        gives them, at their next use (:meth:`_catch_up`)."""
        if self.averages:
            sync_averages(model, self.averages)
            self._behind = True

    def _catch_up(self, model: Model) -> None:
        """One step of the moving average toward the iterate ``model`` holds,
        if it was stepped elsewhere since the averages were synced."""
        if not self._behind:
            return
        tables = [node.attrs[SPARSE_TABLE] for node in model.walk()
                  if node.attrs.get(SPARSE_TABLE) is not None]
        # thinc's decay at the update count the averages have reached (the
        # tables count them; the rows stay synced: this step moved each one)
        step = 1 + max((table.n_steps for table in tables), default=0)
        decay = min((1.0 + step) / (10.0 + step), 0.9999)
        for node in model.walk():
            for name in node.param_names:
                key = (node.id, name)
                if key in self.averages and node.has_param(name):
                    average = self.averages[key]
                    average += (1.0 - decay) * (node.get_param(name) - average)
        self._behind = False

    def show_averages(self, model: Model) -> None:
        """Make ``model`` hold the averaged parameters (up to date), keeping its iterate."""

        with self._lock:
            if self._iterate is not None or self.lent:
                return
            self._catch_up(model)
            if not self.averages:
                # the iterate predicts: it takes the L1 penalty its rows owe
                # (averages catch up without it: sync_averages)
                settle_tables(model)
                return
            sync_averages(model, self.averages)
            self._iterate = _swap(model, self.averages)

    def show_iterate(self, model: Model) -> None:
        """Give ``model`` its training iterate back (a no-op if it holds it)."""
        with self._lock:
            if self._iterate is None:
                return
            _swap(model, self._iterate)
            self._iterate = None

    def commit(self, model: Model) -> None:
        """Keep the averages as ``model``'s weights and start averaging afresh
        (before its parameters change shape, e.g. new labels)."""

        self.show_averages(model)
        if self._iterate is not None:
            # the averages are the weights from now on: the L1 penalty the
            # dropped iterate owed is not theirs (the next prediction would
            # settle it on them, which a saved and loaded model never does)
            waive_arrears(model)
        self.clear()

    def clear(self) -> None:
        """Forget the averages (the model keeps what it holds now)."""
        self.averages = {}
        self._iterate = None
        self._behind = False
