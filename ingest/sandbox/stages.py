"""Cached, atomic build stages of the sandbox, shared by every module that builds into a sandbox folder.

A stage is a folder whose ``done.json`` holds a hash (``key``) of everything it depends on; it is built in a
hidden temp folder beside its final place and renamed into place with the stamp already inside, so an
interrupted build never leaves a half stage that looks finished. Concurrent builds into one folder serialize
on an ``fcntl`` lock (``.lock``). Used by ingest/sandbox/build.py (corpus, tokenizer, index, model) and
ingest/sandbox/llama_style.py (the second tokenizer and its index).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

STAMP = "done.json"


def stamp_key(stage_dir: Path) -> str | None:
    try:
        return json.loads((stage_dir / STAMP).read_text(encoding="utf-8")).get("key")
    except (OSError, ValueError):
        return None


@contextmanager
def locked(root: Path) -> Iterator[None]:
    """Serialize builds into `root` on an fcntl lock and clear leftovers of interrupted ones."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            # leftovers of interrupted builds (safe: we hold the lock)
            for p in root.iterdir():
                if p.name.startswith(".") and (".tmp-" in p.name or ".old-" in p.name) and p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def run_stage(root: Path, name: str, key: str, meta: dict, build: Callable[[Path], Any]) -> bool:
    """Build stage `name` unless its stamp already holds `key`. Returns True if it was (re)built."""
    final = root / name
    if stamp_key(final) == key:
        return False
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=root))
    try:
        build(tmp)
        normalize_modes(tmp)
        stamp = {"stage": name, "key": key, **meta}  # deterministic: no timestamps
        (tmp / STAMP).write_text(json.dumps(stamp, indent=2, sort_keys=True, default=str) + "\n")
        if final.exists():
            old = root / f".{name}.old-{uuid.uuid4().hex[:8]}"
            os.rename(final, old)
            os.rename(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return True


def normalize_modes(stage_dir: Path) -> None:
    """mkdtemp makes 0700 dirs (and safetensors writes 0600 files): give the stage the umask's modes."""
    umask = os.umask(0)
    os.umask(umask)
    for dirpath, dirnames, filenames in os.walk(stage_dir):
        os.chmod(dirpath, 0o777 & ~umask)
        for fn in filenames:
            p = os.path.join(dirpath, fn)
            if not os.path.islink(p):
                os.chmod(p, 0o666 & ~umask)
