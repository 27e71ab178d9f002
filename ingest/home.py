"""Where the warehouse lives and where the dbt project is.

The warehouse folder holds the lake (raw Parquet), the DuckDB file that dbt builds, dbt's own target and
log folders, and exports. It is chosen by `--warehouse DIR`, else `$LMAUDIT_HOME`, else `./warehouse`.

A warehouse can be moved or copied (`mv`, `cp -r`): a path the lake records (a corpus's index folders, the
folders a trace read) is written relative to the warehouse when it lies inside it (`stored_path`) and read
back against wherever the warehouse is now (`from_stored`); a path outside it (a shared prebuilt index)
stays absolute, since it does not move with the warehouse.
"""

from __future__ import annotations

import os
from pathlib import Path

from ingest.errors import UserError

ENV_HOME = "LMAUDIT_HOME"
ENV_PROJECT = "LMAUDIT_PROJECT_DIR"
DB_FILE = "lmaudit.duckdb"


def resolve_home(explicit: str | os.PathLike | None = None) -> Path:
    raw = explicit or os.environ.get(ENV_HOME) or "warehouse"
    home = Path(raw).expanduser().resolve()
    if home.exists() and not home.is_dir():
        raise UserError(f"warehouse location {home} is a file, not a folder; pass --warehouse DIR or set {ENV_HOME}")
    above = next((p for p in home.parents if p.exists()), None)
    if above is not None and not above.is_dir():
        raise UserError(f"warehouse location {home} is under {above}, which is a file; pass --warehouse DIR or set "
                        f"{ENV_HOME}")
    return home


def db_path(home: Path) -> Path:
    return home / DB_FILE


def project_dir() -> Path:
    """The dbt project (repository root). An editable install finds it beside the `ingest` package."""
    explicit = os.environ.get(ENV_PROJECT)
    candidates = [Path(explicit)] if explicit else []
    candidates.append(Path(__file__).resolve().parent.parent)
    for c in candidates:
        if (c / "dbt_project.yml").exists():
            return c.resolve()
    raise UserError(
        "cannot find the dbt project (dbt_project.yml); install lmaudit from its repository with "
        f"`pip install -e .` or set {ENV_PROJECT} to the repository root")


def stored_path(home: Path, path: str | os.PathLike) -> str:
    """`path` as the lake records it: relative to the warehouse (POSIX separators) when it lies inside it, so
    that a moved or copied warehouse reads its own files, never the original's; absolute otherwise."""
    absolute = Path(path).resolve()
    try:
        return absolute.relative_to(Path(home).resolve()).as_posix() or "."
    except ValueError:
        return str(absolute)


def from_stored(home: Path, stored: str) -> Path:
    """A recorded path as it lies now: a relative one under the current warehouse, an absolute one as is."""
    return Path(stored) if os.path.isabs(stored) else Path(home) / stored
