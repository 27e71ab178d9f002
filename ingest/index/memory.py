"""How much memory the index maps of this process hold, and how much they may hold.

Why: the engine and our own maps touch pages of files that can be hundreds of GB. Every touched page stays
resident (file-backed RSS) and costs a page-table entry until the map is closed; neither shrinks on its own,
so a long tracing run grows until the machine or the container's memory limit gives out. A count of
queries or generations is a poor proxy (a query can touch 1 page or 100 000), so the engine measures the
process instead and reopens its maps when the measure passes a budget. Reopening changes no answer: the
files are the same, and the pages stay in the OS page cache, so the next touches are cheap minor faults.
"""

from __future__ import annotations

import os

DEFAULT_FRACTION = 0.25  # of physical memory
DEFAULT_CAP = 8 << 30
DEFAULT_FLOOR = 256 << 20
ENV_BUDGET = "LMAUDIT_ENGINE_MEMORY"  # bytes, or with a K/M/G suffix


def mapped_bytes() -> int | None:
    """File-backed resident memory plus page tables of this process (Linux: RssFile + VmPTE from
    /proc/self/status; else the shared pages of /proc/self/statm; else psutil's `shared`); None if nothing
    can tell (then the engine never reopens on its own)."""
    try:
        fields = {}
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("RssFile", "VmPTE"):
                    fields[key] = int(rest.split()[0]) * 1024  # reported in kB
        if "RssFile" in fields:
            return fields["RssFile"] + fields.get("VmPTE", 0)
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[2]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil  # optional; not a dependency

        return int(getattr(psutil.Process().memory_info(), "shared", 0)) or None
    except Exception:  # not installed, or no such field on this platform
        return None


def parse_bytes(text: str) -> int:
    """'4G', '512M', '1048576' -> bytes (ValueError otherwise)."""
    t = text.strip().upper().removesuffix("B")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
    value = float(t[:-1] if mult > 1 else t)
    if value < 0:
        raise ValueError(text)
    return int(value * mult)


def default_budget() -> int:
    """$LMAUDIT_ENGINE_MEMORY if set, else a quarter of physical memory, between 256 MiB and 8 GiB: enough
    that a small index never reopens, small enough that a worker per core leaves the machine room."""
    env = os.environ.get(ENV_BUDGET)
    if env:
        from ingest.errors import UserError

        try:
            return parse_bytes(env)
        except ValueError:
            raise UserError(f"${ENV_BUDGET}={env!r} is not a size; use bytes or e.g. 4G, 512M") from None
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        physical = 8 << 30
    return max(DEFAULT_FLOOR, min(DEFAULT_CAP, int(physical * DEFAULT_FRACTION)))
