"""The files the sandbox corpus may read: those of the dependencies pinned with ``==`` in pyproject.toml.

Why: a corpus read from whatever the machine has (the interpreter's stdlib, unpinned transitive packages,
``/usr/include``, pydoc topics) is another corpus on another machine or after an apt/pip change, and so
another model and other demo numbers (unconditional R50 0.62 -> 0.29 between two days on one machine).
A pinned wheel's files are the same wherever that wheel installs, so a corpus drawn only from them is the
same on every machine of a platform.

Rules:

* the pins are lmaudit's own ``Requires-Dist`` entries with exactly ``==`` (read from the installed
  metadata, or from ``pyproject.toml`` in a bare source checkout); extras are not read;
* a pin with an environment marker (numba) is left out: it is not installed on every platform, and a
  corpus that has it on one platform and not on another would differ for no reason a user sees;
* only each distribution's own files, as its ``RECORD`` lists them and below site-packages (no scripts,
  no data files elsewhere), in sorted order;
* a pin that is missing, or installed at another version (a local label such as ``+cpu`` is ignored), is a
  user error: the corpus would silently be another one.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROJECT_DISTRIBUTION = "lmaudit"


@dataclass(frozen=True)
class PinnedDistribution:
    """One pinned dependency as installed: ``version`` is the pin, ``installed`` what pip installed."""

    name: str  # normalized (lower case, '-')
    version: str
    installed: str
    dist: Any = field(compare=False, repr=False)  # importlib.metadata.Distribution


@dataclass(frozen=True)
class SourceFile:
    """A file of a pinned distribution: ``rel`` is its RECORD path (relative to site-packages)."""

    dist: str
    version: str
    rel: str
    path: Path

    @property
    def key(self) -> str:
        """The RECORD path without the version in a ``*.dist-info`` folder's name (``torch-2.13.0+cpu.dist-info``
        -> ``torch.dist-info``): the CPU and the CUDA build of a pin, or a pin bump, keep their licence files'
        document ids (and so the corpus's hash order)."""
        head, sep, tail = self.rel.partition("/")
        if sep and head.endswith(".dist-info"):
            head = head[: -len(".dist-info")].split("-", 1)[0] + ".dist-info"
        return head + sep + tail


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def platform_tag() -> str:
    """The platform the wheels were built for, e.g. ``linux-x86_64`` (part of the expected-hash key)."""
    return sysconfig.get_platform()


def python_minor() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _requirement_lines() -> list[str]:
    from importlib import metadata

    try:
        return list(metadata.distribution(PROJECT_DISTRIBUTION).requires or [])
    except metadata.PackageNotFoundError:
        pass
    import tomllib

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    if not pyproject.is_file():
        from ingest.errors import UserError

        raise UserError("the sandbox corpus reads the pinned dependencies of lmaudit, but lmaudit is not "
                        "installed and no pyproject.toml is beside the package: run `pip install -e .`")
    return list(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"])


def pins() -> list[tuple[str, str]]:
    """(normalized name, version) of every ``==`` pin without a marker, sorted by name."""
    from packaging.requirements import InvalidRequirement, Requirement

    out: dict[str, str] = {}
    for line in _requirement_lines():
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None:
            continue  # an extra (marker `extra == ...`) or a platform-dependent pin: not on every machine
        specs = list(req.specifier)
        if len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version:
            out[normalize(req.name)] = specs[0].version
    return sorted(out.items())


@functools.lru_cache(maxsize=1)
def pinned_distributions() -> tuple[PinnedDistribution, ...]:
    """The installed pinned distributions, sorted by name; a missing or differently versioned one is an error."""
    from importlib import metadata

    from packaging.version import Version

    from ingest.errors import UserError

    out = []
    for name, version in pins():
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise UserError(f"the sandbox corpus reads the files of the pinned {name}=={version}, which is not "
                            "installed: run `pip install -e .`") from None
        installed = dist.version
        if Version(installed).public != Version(version).public:
            raise UserError(f"the sandbox corpus reads the files of {name}=={version}, but {installed} is "
                            f"installed (another corpus, model and numbers): run `pip install -e .` to restore "
                            "the pins")
        out.append(PinnedDistribution(name, version, installed, dist))
    return tuple(out)


@functools.lru_cache(maxsize=1)
def pinned_files() -> tuple[SourceFile, ...]:
    """Every file of the pinned distributions below site-packages, sorted by RECORD path (first owner wins)."""
    out: dict[str, SourceFile] = {}
    for d in pinned_distributions():
        for f in d.dist.files or []:
            rel = f.as_posix() if hasattr(f, "as_posix") else str(f)
            if rel.startswith(("..", "/")) or "__pycache__" in rel.split("/"):
                continue  # scripts and data installed outside site-packages; bytecode
            if rel not in out:
                out[rel] = SourceFile(d.name, d.version, rel, Path(d.dist.locate_file(f)))
    return tuple(out[k] for k in sorted(out))


def source_fingerprint() -> str:
    """A cheap fingerprint of what the corpus reads (part of the corpus stage's cache key).

    Hashing every file would cost seconds; the platform, the Python minor version (the docstring reader
    uses its `tokenize`) and the installed pins (local labels included: a CUDA and a CPU torch build of
    one version ship different files) catch any change short of someone editing site-packages by hand,
    which the content hash in mixture.json then shows.
    """
    h = hashlib.sha256()
    h.update(f"{platform_tag()} {python_minor()}\n".encode())
    for d in pinned_distributions():
        h.update(f"{d.name}=={d.installed}\n".encode())
    return h.hexdigest()[:16]


def distribution_list() -> list[str]:
    """``name==installed`` of every distribution the corpus reads (recorded in mixture.json)."""
    return [f"{d.name}=={d.installed}" for d in pinned_distributions()]
