"""Model bytes with the hashed weight table stored sparsely.

A hashed table has ``n_buckets`` rows, but training only ever writes the rows
its features hash to (a third of 2^20 on CoNLL-2000, fewer on smaller data):
the rest stay exactly zero. thinc would save every row. Here the table's
nonzero rows are saved with their indices, and expanded back to the dense
table on load, so a saved model is as big as what it learned, and the weights
after a round trip are bit-identical.

The format is thinc's own ``Model.to_bytes`` message (msgpack of ``to_dict``)
with, for each compacted table, ``W`` holding the nonzero rows only and an
entry under :data:`KEY` giving their indices and the table's full height.
Bytes without that key (dense, as saved by spacy-crf 0.1.0 before this
module) load as they are. A table saved without the ``crf_bucketing`` attr
(see ``hashed_linear.py``) keeps the signed id-to-row mapping it was trained
with.
"""

from functools import partial
from typing import Any, Dict

import numpy as np
import srsly
from thinc.api import Model
from thinc.util import convert_recursive, is_xp_array

from .hashed_linear import BUCKETING, SIGNED
from .hashed_linear import NAME as TABLE_LAYER  # the layers whose ``W`` is a hashed table

#: the message key listing the compacted tables: {node index: {"rows", "n_rows"}}
KEY = "spacy_crf_sparse_rows"


def model_to_bytes(model: Model) -> bytes:
    """``model.to_bytes()``, with every hashed table's zero rows left out.

    Parameters
    ----------
    model : Model
        The component's thinc model.

    Returns
    -------
    bytes
        A msgpack message that :func:`model_from_bytes` (and nothing else)
        reads back; the model itself is not changed.
    """
    msg = model.to_dict()
    sparse: Dict[str, Dict[str, Any]] = {}
    for i, node in enumerate(msg["nodes"]):
        W = msg["params"][i].get("W") if node["name"] == TABLE_LAYER else None
        if W is None:
            continue
        # compact before the byte-order conversion below, which copies every
        # array: a copy of the dense table is what a save in training peaked on
        rows = np.flatnonzero(np.any(W != 0, axis=1))
        msg["params"][i]["W"] = np.ascontiguousarray(W[rows])
        sparse[str(i)] = {"rows": rows.astype("<i8"), "n_rows": int(W.shape[0])}
    msg = convert_recursive(is_xp_array, partial(model.ops.to_numpy, byte_order="<"), msg)
    if sparse:
        msg[KEY] = sparse
    return srsly.msgpack_dumps(msg)


def model_from_bytes(model: Model, data: bytes) -> Model:
    """Load bytes of :func:`model_to_bytes` (or of plain ``model.to_bytes()``).

    Parameters
    ----------
    model : Model
        The model to load into (built from the same config).
    data : bytes
        The saved bytes.

    Returns
    -------
    Model
        ``model``, loaded.

    Raises
    ------
    ValueError
        If a sparse table's row indices do not fit the table (a corrupt file).
    """
    msg = srsly.msgpack_loads(data)
    for i, node in enumerate(msg["nodes"]):
        if node["name"] == TABLE_LAYER and BUCKETING not in msg["attrs"][i]:
            # saved before the mapping was explicit: its rows were filled with
            # numba's signed modulo, so it keeps reading them that way
            msg["attrs"][i][BUCKETING] = srsly.msgpack_dumps(SIGNED)
    for key, entry in (msg.pop(KEY, None) or {}).items():
        params = msg["params"][int(key)]
        values = np.asarray(params["W"])
        rows = np.asarray(entry["rows"], dtype=np.int64)
        n_rows = int(entry["n_rows"])
        if (rows.ndim != 1 or values.ndim != 2 or rows.shape[0] != values.shape[0]
                or (rows.size and (rows[0] < 0 or rows[-1] >= n_rows
                                   or np.any(np.diff(rows) <= 0)))):
            raise ValueError(f"the sparse weight table of layer {key} is inconsistent: "
                             f"{rows.shape[0]} row indices for {values.shape[0]} rows of a "
                             f"{n_rows}-row table")
        dense = np.zeros((n_rows, values.shape[1]), dtype=values.dtype)
        dense[rows] = values
        params["W"] = dense
    msg = convert_recursive(is_xp_array, model.ops.asarray, msg)
    return model.from_dict(msg)
