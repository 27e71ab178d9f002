"""One line instead of a silent death when a memory-mapped index file shrinks under a running process.

Why: the engine and our searches read the index through memory maps. When a file is truncated or replaced
while it is mapped (an index rebuilt in place, a copy still being written, a full disk on a network share),
reading a page past its new end raises SIGBUS, and the process ends with no message (`Bus error`, exit
-7). Python cannot catch it: a Python-level signal handler only runs after the faulting C instruction,
which faults again forever. So the handler here is machine code compiled with numba (`cfunc`, no Python,
no GIL): it writes the message found in the environment variable LMAUDIT_SIGBUS_MESSAGE to stderr and
exits with status 2 (`ingest.index.sigbus_handler`). It calls libc by symbol name (not by address), so
numba caches it on disk like the compiled searches (`ingest.index.sa_search`); `install` is called where
those load, so it adds no start-up time. Without numba nothing is installed and a truncated file still ends the process with
SIGBUS; the next open then refuses the index (its sizes no longer match the manifest).
"""

from __future__ import annotations

import os
import signal
import sys

from ingest.index.sigbus_message import ENV_VAR

_installed = False


def set_message(message: str) -> None:
    """The line the handler prints (the latest opened index names itself); cheap, no compilation."""
    os.environ[ENV_VAR] = " ".join(message.split())


_HANDLER = None  # kept alive: the OS holds its address


def install() -> bool:
    """Route SIGBUS to the compiled handler (once per process). True when it is installed."""
    global _installed, _HANDLER
    if _installed:
        return True
    if not hasattr(signal, "SIGBUS") or sys.platform == "win32":
        return False
    try:
        import ctypes

        from ingest.index.sigbus_handler import handler

        _HANDLER = handler
        libc = ctypes.CDLL(None)
        libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
        libc.signal.restype = ctypes.c_void_p
        if libc.signal(int(signal.SIGBUS), ctypes.c_void_p(_HANDLER.address)) == ctypes.c_void_p(-1).value:
            return False
    except Exception:  # noqa: BLE001 - no numba, or an unusual platform: keep the default behaviour
        return False
    _installed = True
    return True
