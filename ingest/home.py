"""Where the warehouse lives and where the dbt project is.

The warehouse folder holds the lake (raw Parquet), the DuckDB file that dbt builds, dbt's own target and
log folders, and exports. It is chosen by `--warehouse DIR`, else `$LMAUDIT_HOME`, else `./warehouse`.
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
