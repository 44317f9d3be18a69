"""A software prefetch of an array row, for gathers from tables larger than the cache.

The emission gathers read one row of a weight table per feature; at the
default 2^20 rows the table is tens of MB and most rows come from memory. The
CPU overlaps only the loads it has already reached, a few rows ahead; asking
for the rows of the next tokens while the current one is summed keeps more
of them in flight (``gather_sum`` over the EWT UPOS test set: 468 -> 211 ns a token). A prefetch is a
hint: it never faults and never changes a result.
"""

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

# llvm.prefetch(address, rw = 0 read, locality = 3 keep in every cache level, 1 data)
_READ, _KEEP, _DATA = 0, 3, 1


#: bytes of a cache line: a row is asked for a line at a time
LINE = 64


def _row_prefetch(every_line: bool):
    """The codegen of a prefetch of ``array[row]``: its first and last items,
    and with ``every_line`` each line between them."""

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        arr = context.make_array(array_type)(context, builder, args[0])
        shape = cgutils.unpack_tuple(builder, arr.shape)
        strides = cgutils.unpack_tuple(builder, arr.strides)
        row_index = context.cast(builder, args[1], signature.args[1], types.intp)
        last = builder.sub(shape[1], context.get_constant(types.intp, 1))
        byte_ptr = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        intp = context.get_value_type(types.intp)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32]),
            "llvm.prefetch.p0i8")

        def item(column):
            ptr = cgutils.get_item_pointer2(context, builder, data=arr.data, shape=shape,
                                            strides=strides, layout=array_type.layout,
                                            inds=[row_index, column], wraparound=False)
            return builder.bitcast(ptr, byte_ptr)

        def fetch(ptr):
            builder.call(fn, [ptr, i32(_READ), i32(_KEEP), i32(_DATA)])

        first, end = item(context.get_constant(types.intp, 0)), item(last)
        fetch(first)
        fetch(end)
        if every_line:
            span = builder.sub(builder.ptrtoint(end, intp), builder.ptrtoint(first, intp))
            with cgutils.for_range_slice(builder, ir.Constant(intp, LINE), span,
                                         ir.Constant(intp, LINE), intp=intp) as (offset, _):
                fetch(builder.gep(first, [offset]))
        return context.get_dummy_value()

    return codegen


def _is_row_of_table(array, row) -> bool:
    return isinstance(array, types.Array) and array.ndim == 2 and isinstance(row, types.Integer)


@intrinsic
def prefetch_row(typingctx, array, row):
    """Ask for the cache lines of the first and last item of ``array[row]``
    (a C-contiguous 2-d array; a row of up to 16 float32 or 8 float64 spans
    at most two lines, a longer one gets its ends fetched)."""
    if not _is_row_of_table(array, row):
        return None
    return types.void(array, row), _row_prefetch(every_line=False)


@intrinsic
def prefetch_lines(typingctx, array, row):
    """Ask for every cache line of ``array[row]`` (a C-contiguous 2-d array):
    its first and last items, and each line between (a row need not start
    on a line). A factored table's row of 80 parts (320 bytes) takes six
    requests, where asking for its two ends alone (:func:`prefetch_row`) left
    the middle lines to be fetched a load at a time (``gather_sum`` on EWT's
    morphology: 13.0 -> 7.3 ms for 25k tokens). For a row of two lines or
    fewer the loop is pure cost (+10% on UPOS's 17 columns): see
    :func:`prefetch_row`."""
    if not _is_row_of_table(array, row):
        return None
    return types.void(array, row), _row_prefetch(every_line=True)


@njit(cache=True, inline="always")
def prefetch_table_row(table, row):
    """Ask for ``table[row]``: line by line where it spans more than two cache
    lines (:func:`prefetch_lines`), by its ends otherwise (:func:`prefetch_row`).
    A gather over many rows of one table hoists this choice out of its loop
    instead (``emissions._prefetch_rows``)."""
    if table.shape[1] * table.itemsize > 2 * LINE:
        prefetch_lines(table, row)
    else:
        prefetch_row(table, row)
