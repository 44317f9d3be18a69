"""A software prefetch of an array row, for gathers from tables larger than the cache.

The emission gathers read one row of a weight table per feature; at the
default 2^20 rows the table is tens of MB and most rows come from memory. The
CPU overlaps only the loads it has already reached, a few rows ahead; asking
for the rows of the next tokens while the current one is summed keeps more
of them in flight (``gather_sum`` over the EWT UPOS test set: 468 -> 211 ns a token). A prefetch is a
hint: it never faults and never changes a result.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

# llvm.prefetch(address, rw = 0 read, locality = 3 keep in every cache level, 1 data)
_READ, _KEEP, _DATA = 0, 3, 1


@intrinsic
def prefetch_row(typingctx, array, row):
    """Ask for the cache lines of the first and last item of ``array[row]``
    (a C-contiguous 2-d array; a row of up to 16 float32 or 8 float64 spans
    at most two lines, a longer one gets its ends fetched)."""
    if not isinstance(array, types.Array) or array.ndim != 2 or not isinstance(row, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        arr = context.make_array(array_type)(context, builder, args[0])
        shape = cgutils.unpack_tuple(builder, arr.shape)
        strides = cgutils.unpack_tuple(builder, arr.strides)
        row_index = context.cast(builder, args[1], signature.args[1], types.intp)
        last = builder.sub(shape[1], context.get_constant(types.intp, 1))
        byte_ptr = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        for column in (context.get_constant(types.intp, 0), last):
            ptr = cgutils.get_item_pointer2(context, builder, data=arr.data, shape=shape,
                                            strides=strides, layout=array_type.layout,
                                            inds=[row_index, column], wraparound=False)
            builder.call(fn, [builder.bitcast(ptr, byte_ptr), i32(_READ), i32(_KEEP), i32(_DATA)])
        return context.get_dummy_value()

    return types.void(array, row), codegen
