"""The SIGBUS handler of `ingest.index.sigbus` as machine code: print $LMAUDIT_SIGBUS_MESSAGE, exit 2.

Imported only by `ingest.index.sigbus.install` (it needs numba). A signal handler may call only
async-signal-safe functions: `write` and `_exit` are; `getenv` and `strlen` only read memory.
"""

from __future__ import annotations

from llvmlite import ir
from numba import cfunc, types
from numba.core import cgutils
from numba.extending import intrinsic

from ingest.index.sigbus_message import ENV_VAR


@intrinsic
def _report_and_exit(typingctx):
    def codegen(context, builder, signature, args):
        mod = builder.module
        i8p = ir.IntType(8).as_pointer()
        i64, i32 = ir.IntType(64), ir.IntType(32)
        getenv = cgutils.get_or_insert_function(mod, ir.FunctionType(i8p, [i8p]), "getenv")
        strlen = cgutils.get_or_insert_function(mod, ir.FunctionType(i64, [i8p]), "strlen")
        write = cgutils.get_or_insert_function(mod, ir.FunctionType(i64, [i32, i8p, i64]), "write")
        exit_ = cgutils.get_or_insert_function(mod, ir.FunctionType(ir.VoidType(), [i32]), "_exit")
        msg = builder.call(getenv, [context.insert_const_string(mod, ENV_VAR)])
        with builder.if_then(cgutils.is_not_null(builder, msg)):
            builder.call(write, [i32(2), msg, builder.call(strlen, [msg])])
            builder.call(write, [i32(2), context.insert_const_string(mod, "\n"), i64(1)])
        builder.call(exit_, [i32(2)])
        return context.get_dummy_value()
    return types.void(), codegen


@cfunc(types.void(types.int32), cache=True)
def handler(sig):  # pragma: no cover - runs as machine code inside the signal
    _report_and_exit()
