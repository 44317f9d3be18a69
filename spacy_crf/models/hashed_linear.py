"""Layer: hashed feature ids -> emission scores, one weight row per bucket."""

import os
from typing import Callable, Optional, Sequence, Tuple

import numpy as np
from thinc.api import Model
from thinc.types import Floats2d

from .._kernels.emissions import feature_rows, gather_sum
from .._kernels.label_parts import compose_parts_backward
from ..errors import Errors, Warnings, warn
from .composed_emissions import ComposedEmissions, composition_deferred
from .grow import LABEL_AXES
from .label_parts import (FACTORED, LABEL_PARTS, PARTS, compose_labels, composition, factors,
                          width)
from .layer_attrs import HASHED_TABLE, LABEL_SIZED  # noqa: F401 (LABEL_SIZED: its importers')
from .sparse_table import ATTR, BOOST_UPDATES, UPDATES_DONE, SparseTable

InT = np.ndarray  # (N, K) uint64 feature ids
OutT = Floats2d  # (N, nO) emission scores

NAME = HASHED_TABLE
#: attrs key saying how ids map to rows: UNSIGNED (``id % n_buckets``) for
#: tables trained since the flag exists, SIGNED for tables saved before it
#: (``serialize.model_from_bytes`` marks those); thinc saves attrs with the model
BUCKETING = "crf_bucketing"
UNSIGNED = "unsigned"
SIGNED = "signed"
#: attrs keys of a table's own dropout stream: ``[seed..., table index]``, set
#: by the component at initialize (:func:`seed_dropout`), and the count of
#: training passes drawn from it (saved with the model, so resumed training
#: goes on with the stream)
DROPOUT_STREAM = "crf_dropout_stream"
DROPOUT_DRAWS = "crf_dropout_draws"
#: the largest weight table (bytes) a layer allocates: n_buckets x labels x 4
#: bytes grows with the labels (16 MiB per label at the default 2^20 buckets;
#: 1,000 entity types in BILUO would ask for 15.6 GiB), so a table above this is
#: refused with E161 before any memory is taken. The environment variable
#: SPACY_CRF_MAX_TABLE_BYTES overrides it.
MAX_TABLE_BYTES = 4 * 1024 ** 3


#: ``n_buckets = null``: the rows of a table sized by its width. 2^20 rows for
#: up to 64 columns (every atomic target of the factory's defaults: UPOS 17,
#: PTB tags 50, 4 entity types 17); a wider table gets the most rows whose
#: weights stay under TABLE_WEIGHTS (2^26, 256 MB of float32), a power of two
#: and at least MIN_ROWS. Training holds the table, its average and the
#: moments of the rows it touches, so this bounds the peak too. EWT's
#: morphology (80 parts) at 2^19 rows: UFeats 95.68 against 95.69 at 2^20,
#: training peak 0.98 against 1.35 GB (docs/component.md).
MAX_ROWS = 2 ** 20
MIN_ROWS = 2 ** 18
TABLE_WEIGHTS = 2 ** 26
#: a table too wide for MIN_ROWS within this many bytes (1,000 entity types:
#: 4,001 BILUO labels, 4.2 GB at 2^18 rows) gets fewer rows still, with W039
WIDE_TABLE_BYTES = 2 ** 30
#: attrs key: the table's rows follow its width (n_buckets = null), resolved
#: again at each initialize
AUTO_ROWS = "crf_auto_rows"
#: attrs key: columns that count with the table's own when its rows are sized
#: (n_buckets = null): those of the whole-label table beside a factored one
#: (``whole_label.py``), so the two together stay within TABLE_WEIGHTS
ROW_COLUMNS = "crf_row_columns"


def table_rows(n_columns: int) -> int:
    """The rows of a table of ``n_columns`` columns under ``n_buckets = null``
    (see :data:`TABLE_WEIGHTS` and :data:`WIDE_TABLE_BYTES`)."""
    n_columns = max(1, int(n_columns))
    fits = max(1, TABLE_WEIGHTS // n_columns)
    rows = min(MAX_ROWS, max(MIN_ROWS, 1 << (fits.bit_length() - 1)))
    while rows > 1 and rows * n_columns * 4 > WIDE_TABLE_BYTES:
        rows //= 2
    return int(rows)


def auto_rows(model: Model, n_columns: int) -> int:
    """Set and return the rows of ``model``'s table under ``n_buckets = null``
    (:func:`table_rows`), with W039 where they are below :data:`MIN_ROWS`."""
    rows = table_rows(n_columns)
    if rows < MIN_ROWS:
        warn(Warnings.W039.format(columns=n_columns, rows=rows,
                                  size=rows * n_columns * 4 / 2 ** 20))
    model.set_dim("nV", rows, force=True)
    return rows


def max_table_bytes() -> int:
    """The bound on a table's size in bytes (:data:`MAX_TABLE_BYTES`, or the
    environment variable ``SPACY_CRF_MAX_TABLE_BYTES`` where set)."""
    value = os.environ.get("SPACY_CRF_MAX_TABLE_BYTES")
    return int(value) if value else MAX_TABLE_BYTES


def check_table_size(n_buckets: int, n_labels: int, itemsize: int = 4,
                     layer: str = NAME) -> None:
    """E161 if a (n_buckets, n_labels) table is above :func:`max_table_bytes`.

    Raises
    ------
    ValueError
        With the n_buckets that would fit, so the fix is in the message.
    """
    bound = max_table_bytes()
    size = int(n_buckets) * int(n_labels) * int(itemsize)
    if size > bound:
        fits = max(1, bound // max(1, int(n_labels) * int(itemsize)))
        suggest = 1 << (fits.bit_length() - 1)  # a power of two, as the default
        raise ValueError(Errors.E161.format(layer=layer, n_buckets=n_buckets, n_labels=n_labels,
                                            size=size / 1024 ** 3, bound=bound / 1024 ** 3,
                                            suggest=suggest))


def hashed_linear(n_buckets: Optional[int], nO: Optional[int] = None,
                  factored: Optional[bool] = False) -> Model[InT, OutT]:
    """Sum one weight row per feature: a linear model over hashed sparse features.

    Parameters
    ----------
    n_buckets : int, optional
        Rows of the weight table; feature id ``f`` reads row ``f % n_buckets``.
        None: sized by the table's width at initialize (:func:`table_rows`).
    nO : int, optional
        Number of labels; set by the component at initialize when not given.
    factored : bool, optional
        A column per label part instead of per label, a label scoring the sum
        of its parts' (``label_parts.py``); None: where the target's labels
        are made of parts, decided at initialize.

    Notes
    -----
    In training, each (token, template) feature is dropped with probability
    ``attrs["dropout_rate"]`` (spaCy's ``[training] dropout``, set through
    thinc's ``set_dropout_rate``) and the kept ones are scaled by
    ``1 / (1 - rate)`` (inverted dropout), so a token's expected training
    emissions equal its prediction-time ones; only kept features get a
    gradient. Prediction never drops. The masks come from the table's own
    stream (:func:`seed_dropout`), not numpy's global one: what other layers
    or components draw (a tok2vec, a parser) does not change which features a
    CRF drops, so a CRF trains the same beside them as alone.
    """
    return Model(
        NAME,
        forward,
        init=init,
        dims={"nO": nO, "nV": n_buckets},
        params={"W": None, "b": None},
        # (no parts until the component gives them: a column per label)
        attrs={"dropout_rate": 0.0, BUCKETING: UNSIGNED, FACTORED: factored, PARTS: None,
               AUTO_ROWS: n_buckets is None,
               LABEL_PARTS: None,
               # one column per output (label, or label pair): grown by add_label
               LABEL_AXES: {"W": (None, "out"), "b": ("out",)}},
    )


def companion_table(of: Model, n_buckets: int, shared: Sequence[str]) -> Model:
    """A table of a weight per label (``n_buckets`` rows) trained as the table
    ``of`` is: it takes the attrs of ``of`` named in ``shared`` (learning-rate
    scale, head start, averaging, L1), its head start counted from its own
    first update. The tables that input-dependent transitions and whole-label
    weights add beside a model's own."""
    table = hashed_linear(n_buckets)
    for key in shared:
        if key in of.attrs:
            table.attrs[key] = of.attrs[key]
    if BOOST_UPDATES in table.attrs:
        table.attrs[UPDATES_DONE] = 0
    return table


def forward(model: Model[InT, OutT], features: InT, is_train: bool) -> Tuple[OutT, Callable]:
    W = model.get_param("W")
    b = model.get_param("b")
    rows = np.empty(features.shape, dtype=np.int64)
    feature_rows(np.ascontiguousarray(features, dtype=np.uint64), W.shape[0],
                 model.attrs.get(BUCKETING, UNSIGNED) == UNSIGNED, rows)
    rate = model.attrs.get("dropout_rate", 0.0) if is_train else 0.0
    scale = W.dtype.type(1.0)
    if rate:
        if not 0.0 < rate < 1.0:
            raise ValueError(Errors.E052.format(rate=rate))
        rows[~_kept(model, rows.shape, rate)] = -1
        scale = W.dtype.type(1.0 / (1.0 - rate))
    if factors(model):  # a weight per label part, a label's score its parts' sum
        starts, index = composition(model)
        part_scores = np.empty((features.shape[0], W.shape[1]), dtype=W.dtype)
        gather_sum(W, np.zeros(W.shape[1], dtype=W.dtype), rows, scale, part_scores)
        if not is_train and composition_deferred():
            # the component's structure composes the labels it reads (composed_emissions.py)
            scores = ComposedEmissions(part_scores, starts, index, b)
        else:
            scores = compose_labels(part_scores, starts, index, b)
    else:
        scores = np.empty((features.shape[0], W.shape[1]), dtype=W.dtype)
        gather_sum(W, b, rows, scale, scores)

    def backprop(d_scores: OutT) -> InT:
        d_scores = np.ascontiguousarray(d_scores, dtype=W.dtype)
        d_rows = d_scores
        if factors(model):
            d_rows = np.empty((d_scores.shape[0], W.shape[1]), dtype=W.dtype)
            compose_parts_backward(d_scores, starts, index, d_rows)
        # a batch touches few rows: keep them compact for a row-sparse step
        # (see sparse_table.py); a dense (n_buckets, nO) gradient per batch
        # would cost more than all the rest of training
        table = model.attrs.get(ATTR)
        if table is None:
            table = model.attrs[ATTR] = SparseTable(*W.shape)
        table.add(d_rows, rows, scale)
        model.inc_grad("b", d_scores.sum(axis=0))
        return features

    return scores, backprop


def seed_dropout(model: Model, seed: Sequence[int]) -> None:
    """Give every hashed table of ``model`` a dropout stream of its own.

    Parameters
    ----------
    model : Model
        A component's model; its tables are numbered in ``walk`` order.
    seed : sequence of int
        What the streams are drawn from (the component passes the config's
        ``[training] seed`` and its name); table ``i`` gets ``seed + [i]``.
    """
    tables = [node for node in model.walk() if node.name == NAME]
    for index, table in enumerate(tables):
        table.attrs[DROPOUT_STREAM] = [int(part) for part in seed] + [index]
        table.attrs[DROPOUT_DRAWS] = 0


def _kept(model: Model, shape: Tuple[int, ...], rate: float) -> np.ndarray:
    """(shape) bool: the features a training pass keeps, each with probability
    ``1 - rate``; the k-th pass of a seeded table draws from ``stream + [k]``."""
    stream = model.attrs.get(DROPOUT_STREAM)
    if stream is None:  # a table no component seeded (a bare layer, a model saved before)
        return model.ops.get_dropout_mask(shape, rate) != 0
    draws = model.attrs[DROPOUT_DRAWS] = int(model.attrs.get(DROPOUT_DRAWS, 0)) + 1
    return np.random.default_rng(list(stream) + [draws]).random(shape) >= rate


def init(model: Model[InT, OutT], X: Optional[InT] = None, Y: Optional[OutT] = None) -> None:
    nO = model.get_dim("nO")
    columns = width(model)  # a column per label, or per label part (label_parts.py)
    if model.attrs.get(AUTO_ROWS):
        auto_rows(model, columns + int(model.attrs.get(ROW_COLUMNS) or 0))
    nV = model.get_dim("nV")
    check_table_size(nV, columns)  # before the allocation, which may not fail cleanly
    model.set_param("W", model.ops.alloc2f(nV, columns))
    model.set_param("b", model.ops.alloc1f(nO))
    # a fresh table: whatever a loaded file said, it is filled with the unsigned mapping
    model.attrs[BUCKETING] = UNSIGNED
