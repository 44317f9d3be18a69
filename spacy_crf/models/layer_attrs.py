"""The attrs keys that mark what a layer is, read by modules that must not
import the layers themselves (growth, factoring, averaging and the
row-sparse step each read a few of another's): one place for the names
keeps those modules free of import cycles."""

#: the name of the hashed weight table layer (``hashed_linear.py``)
HASHED_TABLE = "crf_hashed_linear"
#: a layer whose output has one column per label (the component sets its
#: ``nO`` to the number of labels, ``architectures.set_n_labels``)
LABEL_SIZED = "crf_label_sized"
#: a layer whose output has one column per label pair (nO = L * L)
LABEL_PAIR_SIZED = "crf_label_pair_sized"
#: a hashed table's pending row-sparse gradient and optimizer bookkeeping
#: (``sparse_table.SparseTable``)
SPARSE_TABLE = "sparse_table"
#: a layer whose parameters its component averages (``weight_average.py``)
AVERAGE_WEIGHTS = "crf_average_weights"
#: the part names of a layer factored over label parts, one per column of a
#: table (``label_parts.py``), or the parts of a potentials layer's factored
#: transitions (``part_transitions.py``); None: not factored
PARTS = "crf_parts"
#: {"starts": [K + 1 ints], "index": [part ids]}: label k's parts are
#: ``index[starts[k]:starts[k + 1]]`` (a CSR row per label)
LABEL_PARTS = "crf_label_parts"
#: a potentials layer's factored transitions (``part_transitions.py``):
#: (parts, parts) float32, row the earlier token's part
PART_TRANSITIONS = "part_transitions"
#: their axes as ``grow.LABEL_AXES`` declares them: both grow with the parts
PART_AXES = ("part", "part")
