"""`lmaudit sql @FILE`: the query file, from the working directory or, for `sql/NAME.sql`, from the project.

The README's examples (`lmaudit sql @sql/run_overview.sql`) and the demo's last hint name the project's own
ready queries; from any folder other than the repository root they were "not found". A file that exists
where it is given (relative to the working directory, or absolute) is read as given; otherwise a path
starting with `sql/` is looked for in the installed project's `sql/` folder."""

from __future__ import annotations

from pathlib import Path

from ingest.errors import UserError


def project_sql_dir() -> Path | None:
    """The project's `sql/` folder (beside dbt_project.yml), or None when the project cannot be found."""
    from ingest.home import project_dir

    try:
        folder = project_dir() / "sql"
    except UserError:
        return None
    return folder if folder.is_dir() else None


def read_query_file(name: str) -> str:
    """The text of query file `name` (what follows `@`); one line naming where it was looked for if none."""
    given = Path(name).expanduser()
    if given.is_file():
        return given.read_text()
    parts = Path(name).parts
    project = project_sql_dir() if not given.is_absolute() and len(parts) > 1 and parts[0] == "sql" else None
    if project is not None:
        candidate = project.joinpath(*parts[1:])
        if candidate.is_file():
            return candidate.read_text()
        ready = ", ".join(sorted(p.name for p in project.glob("*.sql")))
        raise UserError(f"query file {name} not found here nor in the project's {project} ({ready})")
    raise UserError(f"query file {name} not found")
