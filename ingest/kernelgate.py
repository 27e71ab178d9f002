"""The one gate in front of every numba kernel module: load numba, compile, self-check once, fall back.

Why one place: eight modules (`ingest.index.sa_search`, `ingest.index.doc_windows`, `ingest.trace.nvkernel`,
`ingest.trace.tierkernel`, `ingest.trace.windowkernel`, `ingest.trace.keykernel`, `ingest.trace.spankernel`,
`ingest.trace.rngkernel`) each compile GIL-free kernels whose Python originals give the same answers. numba can be missing (a platform the pyproject marker leaves without it), fail to
compile, fail to write its cache, or (rarely) miscompile; then a module must answer with its Python code
and say so once, never fail on the first trace. The steps were copied five times (and two modules had no
self-check at all); they live here now.

The state stays in the kernel module's own globals (`njit`: the decorator or None once anything failed,
`_LOAD_ERROR`: why, `_checked`: whether the self-check ran), so tests and callers read and patch them on
the module as before. Usage, at the end of a kernel module:

    njit, _LOAD_ERROR = kernelgate.load_numba()          # near the top
    ...                                                  # the kernels, in plain Python
    kernelgate.compile_all(globals(), ("_helper", "kernel"))

    def available() -> bool:
        return kernelgate.checked(globals(), _self_check, "suffix-array searches")

`checked` runs `_self_check` (a tiny case with a known answer, raising or returning False when wrong) once
per process under a lock: a second thread waits for the first one's check (the first call may compile for
seconds) instead of running half-loaded kernels.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterable
from typing import Any

_LOCK = threading.RLock()  # one lock for every module's first check: they run once per process, briefly


def load_numba() -> tuple[Any, str | None]:
    """(numba's `njit`, None), or (None, the reason) when numba cannot be imported."""
    try:
        from numba import njit
    except Exception as e:  # ImportError, or a broken llvmlite  # pragma: no cover - platform dependent
        return None, f"{type(e).__name__}: {e}"
    return njit, None


def compile_all(ns: dict[str, Any], names: Iterable[str]) -> None:
    """Replace each `ns[name]` by its compiled form (`nogil`, cached on disk), in order; on any failure
    set `ns["njit"] = None` and the reason in `ns["_LOAD_ERROR"]`. Compilation itself is lazy (first call):
    the self-check is what proves the kernels run."""
    njit = ns.get("njit")
    if njit is None:
        return
    try:
        jit = njit(nogil=True, cache=True)
        for name in names:
            ns[name] = jit(ns[name])
    except Exception as e:  # pragma: no cover - platform dependent
        ns["njit"] = None
        ns["_LOAD_ERROR"] = f"{type(e).__name__}: {e}"


def checked(ns: dict[str, Any], check: Callable[[], bool | None], what: str) -> bool:
    """Whether the compiled kernels of the module whose globals are `ns` can be used: numba loaded, they
    compiled (or came from the cache) and `check()` passed; decided once per process. A failure (an
    exception, or `check()` returning False) switches the module to its Python code and warns once,
    naming `what` and the reason."""
    if ns.get("_checked"):
        return ns.get("njit") is not None
    with _LOCK:
        if not ns.get("_checked"):
            if ns.get("njit") is not None:
                try:
                    if check() is False:
                        raise RuntimeError(f"compiled {what} self-check gave a wrong answer")
                except Exception as e:  # noqa: BLE001 - any failure means: use the Python code
                    ns["njit"] = None
                    ns["_LOAD_ERROR"] = f"{type(e).__name__}: {e}"
                    warnings.warn(f"compiled {what} unavailable ({ns['_LOAD_ERROR']}); using the Python code "
                                  "(same answers, slower, holds the GIL)", RuntimeWarning, stacklevel=3)
            ns["_checked"] = True
    return ns.get("njit") is not None
