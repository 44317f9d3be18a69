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
from typing import Any, Dict, List

import numpy as np
import srsly
from thinc.api import Model
from thinc.util import convert_recursive, is_xp_array

from .hashed_linear import BUCKETING, SIGNED, check_table_size, takes_saved_height
from .hashed_linear import NAME as TABLE_LAYER  # the layers whose ``W`` is a hashed table

#: the message key listing the compacted tables: {node index: {"rows", "n_rows"}}
KEY = "spacy_crf_sparse_rows"


class NonFiniteWeights(ValueError):
    """Saved weights hold NaN or inf (a diverged training run was saved)."""


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
        If a sparse table's row indices do not fit the table (a corrupt file),
        its height is not the model's n_buckets, or it is above the size bound
        (E161); :class:`NonFiniteWeights` if a weight is NaN or inf.
    """
    msg = srsly.msgpack_loads(data)
    _check_finite(msg)  # on the saved (compact) rows, before any table is expanded
    nodes = list(model.walk())  # to_dict numbers the nodes in walk order
    for i, node in enumerate(msg["nodes"]):
        if node["name"] == TABLE_LAYER and BUCKETING not in msg["attrs"][i]:
            # saved before the mapping was explicit: its rows were filled with
            # numba's signed modulo, so it keeps reading them that way
            msg["attrs"][i][BUCKETING] = srsly.msgpack_dumps(SIGNED)
        saved_rows = (node.get("dims") or {}).get("nV")
        if (node["name"] == TABLE_LAYER and saved_rows is not None and i < len(nodes)
                and nodes[i].name == TABLE_LAYER):
            takes_saved_height(nodes[i], int(saved_rows))  # a table its budget made smaller
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
        # the stored height is checked before the dense table is allocated
        _check_height(nodes, int(key), n_rows)
        check_table_size(n_rows, values.shape[1], values.dtype.itemsize)
        dense = np.zeros((n_rows, values.shape[1]), dtype=values.dtype)
        dense[rows] = values
        params["W"] = dense
    msg = convert_recursive(is_xp_array, model.ops.asarray, msg)
    return model.from_dict(msg)


def _check_height(nodes: List[Model], index: int, n_rows: int) -> None:
    """A saved table must have the model's n_buckets rows (a file of another
    config, or a corrupt one, must not allocate its own height first)."""
    node = nodes[index] if 0 <= index < len(nodes) else None
    if node is None or node.name != TABLE_LAYER:
        raise ValueError(f"the saved weight table {index} is not a hashed table of this model")
    n_buckets = node.get_dim("nV") if node.has_dim("nV") else None
    if not takes_saved_height(node, n_rows):
        raise ValueError(f"the saved weight table {index} has {n_rows} rows, but the model's "
                         f"n_buckets is {n_buckets}: load it with the config it was trained "
                         f"with (n_buckets = {n_rows})")


def _check_finite(msg: Dict[str, Any]) -> None:
    """Saved weights must be finite: a NaN or inf (a diverged training run) would
    give NaN scores and confidences without an error."""
    for i, params in enumerate(msg["params"]):
        for name, value in params.items():
            if is_xp_array(value) and value.dtype.kind == "f" and not np.isfinite(value).all():
                n_bad = int((~np.isfinite(value)).sum())
                raise NonFiniteWeights(f"parameter '{name}' of layer {i} "
                                       f"({msg['nodes'][i]['name']}) holds {n_bad} non-finite "
                                       f"value(s) (NaN or inf): training diverged before it "
                                       f"was saved")
