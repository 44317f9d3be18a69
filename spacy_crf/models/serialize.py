"""Model bytes with the hashed weight table stored sparsely.

A hashed table has ``n_buckets`` rows, but training only ever writes the rows
its features hash to (a third of 2^20 on CoNLL-2000, fewer on smaller data):
the rest stay exactly zero. thinc would save every row. Here the table's
nonzero rows are saved with their indices, and expanded back to the dense
table on load, so a saved model is as big as what it learned, and the weights
after a round trip are bit-identical.

A row can itself be mostly zeros: a table factored over label parts (the
morphology's 80 parts on EWT) learns only the parts of the labels a
feature's tokens kept in their lattice, 26% of a written row's entries. Where
it is smaller, a table's nonzero *entries* are saved instead: the values in
row-major order and a bit mask per written row (114 -> 33 MB for EWT's
morphology). A table with dense rows (a column per label, every label
trained on every token) keeps the row form, which the mask would only grow.

The format is thinc's own ``Model.to_bytes`` message (msgpack of ``to_dict``)
with, for each compacted table, ``W`` holding the nonzero rows only and an
entry under :data:`KEY` giving their indices and the table's full height.
Bytes without that key (dense, as saved by spacy-crf 0.1.0 before this
module) load as they are. A table saved without the ``crf_bucketing`` attr
(see ``hashed_linear.py``) keeps the signed id-to-row mapping it was trained
with, and a featurize layer saved without the ``crf_whitespace`` attr keeps
reading whitespace tokens as written (``features/whitespace.py``).
"""

from functools import partial
from typing import Any, Dict, List, Tuple

import numpy as np
import srsly
from thinc.api import Model
from thinc.util import convert_recursive, is_xp_array

from ..features.whitespace import AS_WRITTEN, FOLDED, WHITESPACE
from .hashed_linear import BUCKETING, SIGNED, UNSIGNED, check_table_size
from .hashed_linear import NAME as TABLE_LAYER  # the layers whose ``W`` is a hashed table
from .whole_label import fit_saved_layout

#: the message key listing the compacted tables: {node index: {"rows", "n_rows"}},
#: and ``"mask"`` (packed bits, a row per written row) where ``W`` holds the
#: nonzero entries alone
KEY = "spacy_crf_sparse_rows"
#: rows compacted at a time: the temporary masks stay a few MB whatever the table
CHUNK_ROWS = 65536


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
        msg["params"][i]["W"], sparse[str(i)] = compact_table(np.asarray(W))
    msg = convert_recursive(is_xp_array, partial(model.ops.to_numpy, byte_order="<"), msg)
    if sparse:
        msg[KEY] = sparse
    return srsly.msgpack_dumps(msg)


def compact_table(W: np.ndarray) -> Tuple[np.ndarray, Dict[str, Any]]:
    """The stored form of a table: its nonzero rows, or its nonzero entries
    and their mask where that is smaller, with the entry of :data:`KEY`.
    

    Parameters
    ----------
    W : numpy.ndarray
        (n_rows, n_columns) weights.

    Returns
    -------
    tuple
        The values to store as ``W`` ((R, n_columns) rows, or 1-d entries)
        and the table's entry: ``rows`` (R,), ``n_rows``, and ``mask`` ((R,
        ceil(n_columns / 8)) packed bits) and ``n_columns`` where entries are
        stored.
    """
    n_columns = W.shape[1]
    rows, n_entries = [], 0
    for begin in range(0, W.shape[0], CHUNK_ROWS):
        nonzero = W[begin:begin + CHUNK_ROWS] != 0
        rows.append(np.flatnonzero(nonzero.any(axis=1)) + begin)
        n_entries += int(np.count_nonzero(nonzero))
    row_index = np.concatenate(rows).astype("<i8")
    entry: Dict[str, Any] = {"rows": row_index, "n_rows": int(W.shape[0])}
    mask_bytes = row_index.size * ((n_columns + 7) // 8)
    if n_entries * W.itemsize + mask_bytes >= row_index.size * n_columns * W.itemsize:
        return W[row_index], entry
    masks, entries = [], []
    for begin in range(0, row_index.size, CHUNK_ROWS):
        block = W[row_index[begin:begin + CHUNK_ROWS]]
        nonzero = block != 0
        masks.append(np.packbits(nonzero, axis=1))
        entries.append(block[nonzero])  # row-major: the order the mask unpacks in
    entry["mask"] = np.concatenate(masks) if masks else np.zeros((0, (n_columns + 7) // 8),
                                                                 dtype=np.uint8)
    entry["n_columns"] = int(n_columns)
    return np.concatenate(entries) if entries else np.zeros(0, dtype=W.dtype), entry


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
        ``model``, loaded: the same object (in place), but where the bytes were
        saved before whole-label weights existed, its whole-label layer is
        taken out first (``whole_label.fit_saved_layout``).

    Raises
    ------
    ValueError
        If a sparse table's row indices do not fit the table (a corrupt file),
        its height is not the model's n_buckets, or it is above the size bound
        (E161); :class:`NonFiniteWeights` if a weight is NaN or inf.
    """
    msg = srsly.msgpack_loads(data)
    # saved before whole-label weights: the model loads without them
    model = fit_saved_layout(model, [node["name"] for node in msg.get("nodes", [])])
    _check_finite(msg)  # on the saved (compact) rows, before any table is expanded
    nodes = list(model.walk())  # to_dict numbers the nodes in walk order
    for i, node in enumerate(msg["nodes"]):
        if node["name"] == TABLE_LAYER and BUCKETING not in msg["attrs"][i]:
            # saved before the mapping was explicit: its rows were filled with
            # numba's signed modulo, so it keeps reading them that way
            msg["attrs"][i][BUCKETING] = srsly.msgpack_dumps(SIGNED)
        if WHITESPACE in nodes[i].attrs and WHITESPACE not in msg["attrs"][i]:
            # saved before whitespace tokens were folded: it keeps reading each
            # variant as written, as it was trained (features/whitespace.py)
            msg["attrs"][i][WHITESPACE] = srsly.msgpack_dumps(AS_WRITTEN)
        _check_modes(i, msg["attrs"][i])
    for key, entry in (msg.pop(KEY, None) or {}).items():
        params = msg["params"][int(key)]
        # the stored height is checked before the dense table is allocated
        n_rows = int(entry["n_rows"])
        _check_height(nodes, int(key), n_rows)
        params["W"] = expand_table(key, np.asarray(params["W"]), entry)
    msg = convert_recursive(is_xp_array, model.ops.asarray, msg)
    return model.from_dict(msg)


#: the modes a layer's attrs can name: what each mode changes is how the
#: weights are read, so a mode this version does not know (a newer release's
#: file) must not be read as one it does
KNOWN_MODES = {BUCKETING: (UNSIGNED, SIGNED), WHITESPACE: (FOLDED, AS_WRITTEN)}


def _check_modes(index: int, attrs: Dict[str, bytes]) -> None:
    """ValueError where layer ``index``'s saved attrs name a mode this version lacks."""
    for attr, known in KNOWN_MODES.items():
        if attr in attrs:
            value = srsly.msgpack_loads(attrs[attr])
            if value not in known:
                raise ValueError(f"layer {index} has {attr} = {value!r}, which this version of "
                                 f"spacy-crf does not know (it knows {', '.join(known)}): a "
                                 "file written by a newer version? Load it with that version")


def expand_table(key: str, values: np.ndarray, entry: Dict[str, Any]) -> np.ndarray:
    """The dense table of a stored one (:func:`compact_table`), after checking
    that its parts agree (a corrupt file raises ``ValueError``, nothing
    allocated before the size bound is checked)."""
    rows = np.asarray(entry["rows"], dtype=np.int64)
    n_rows = int(entry["n_rows"])
    mask = entry.get("mask")
    if mask is not None:
        mask = np.asarray(mask, dtype=np.uint8)
        n_columns = entry.get("n_columns")
        consistent = (isinstance(n_columns, int) and n_columns > 0 and values.ndim == 1
                      and mask.ndim == 2
                      and mask.shape == (rows.shape[0], (n_columns + 7) // 8))
    else:
        consistent = values.ndim == 2 and rows.shape[0] == values.shape[0]
        n_columns = values.shape[1] if values.ndim == 2 else 0
    if (rows.ndim != 1 or not consistent
            or (rows.size and (rows[0] < 0 or rows[-1] >= n_rows
                               or np.any(np.diff(rows) <= 0)))):
        raise ValueError(f"the sparse weight table of layer {key} is inconsistent: "
                         f"{rows.shape[0]} row indices for {values.shape[0]} stored values of a "
                         f"{n_rows}-row table")
    check_table_size(n_rows, n_columns, values.dtype.itemsize)
    dense = np.zeros((n_rows, n_columns), dtype=values.dtype)
    if mask is None:
        dense[rows] = values
        return dense
    done, empty_row = 0, False
    for begin in range(0, rows.shape[0], CHUNK_ROWS):
        written = np.unpackbits(mask[begin:begin + CHUNK_ROWS], axis=1,
                                count=n_columns).astype(bool)
        count = int(np.count_nonzero(written))
        empty_row = empty_row or not written.any(axis=1).all()
        if done + count > values.shape[0] or empty_row:
            break
        block = np.zeros(written.shape, dtype=values.dtype)
        block[written] = values[done:done + count]
        dense[rows[begin:begin + CHUNK_ROWS]] = block
        done += count
    if done != values.shape[0] or empty_row:
        raise ValueError(f"the sparse weight table of layer {key} is inconsistent: its mask "
                         f"marks other than the {values.shape[0]} entries stored, or a "
                         f"written row without any")
    return dense


def _check_height(nodes: List[Model], index: int, n_rows: int) -> None:
    """A saved table must have the model's n_buckets rows (a file of another
    config, or a corrupt one, must not allocate its own height first)."""
    node = nodes[index] if 0 <= index < len(nodes) else None
    if node is None or node.name != TABLE_LAYER:
        raise ValueError(f"the saved weight table {index} is not a hashed table of this model")
    n_buckets = node.get_dim("nV") if node.has_dim("nV") else None
    if n_buckets is not None and n_buckets != n_rows:
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
