"""Where the warehouse lives and where the dbt project is.

The warehouse folder holds the lake (raw Parquet), the DuckDB file that dbt builds, dbt's own target and
log folders, and exports. It is chosen by `--warehouse DIR`, else `$LMAUDIT_HOME`, else `./warehouse`.

A warehouse can be moved or copied (`mv`, `cp -r`): a path the lake records (a corpus's index folders, the
folders a trace read) is written relative to the warehouse when it lies inside it (`stored_path`) and read
back against wherever the warehouse is now (`from_stored`); a path outside it (a shared prebuilt index)
stays absolute, since it does not move with the warehouse.

Model paths follow the same rule (`stored_model`, `model_key`, `model_location`): a model folder inside the
warehouse (the sandbox's model and checkpoints) is recorded relative to it in `runs.model`, the documented
mixture's `model` and score and sweep rows, so the run and its documented mixture keep one key wherever the
warehouse lies, while a folder elsewhere is recorded by its absolute path (never a relative one, which would
name another folder from another working directory) and a hub name (`EleutherAI/pythia-70m`) as given.
"""

from __future__ import annotations

import os
import re
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


# a sandbox model folder (and the checkpoints kept under it) as lmaudit lays it out inside a warehouse: the only
# model folders it writes there, so an absolute path ending this way names the same model in any warehouse
# (the folder's name is the sandbox's size, knobs and seed). macros/model_key.sql applies the same pattern.
SANDBOX_MODEL = re.compile(r"^/(?:.*/)?(sandbox/[^/]+/model(?:/checkpoints/step-[0-9]+)?)/*$")


def stored_model(home: Path, model: str) -> str:
    """The model key a run, a score or a documented mixture records: a local model folder as `stored_path`
    records it, relative to the warehouse when inside it (a moved or copied warehouse keeps the key its runs
    pair on), else by its resolved absolute path (a relative path given from another working directory, e.g.
    `models/lm`, would otherwise share the key of the warehouse's own `models/lm`, another model); a hub name
    or a key already relative (not a folder from here), exactly as given."""
    folder = Path(model).expanduser()
    return stored_path(home, folder) if folder.is_dir() else model


def model_key(home: Path, recorded: str) -> str:
    """A recorded model as the marts compare it (the staging models apply macros/model_key.sql, the same rule).

    Rows written before model paths were relative hold absolute folders (as given, perhaps with a trailing
    slash): one under this warehouse (its current place) is read relative to it without trailing slashes, and a
    sandbox model's (`.../sandbox/<name>/model`, a checkpoint under it) as its tail, also when it names the place
    the warehouse was moved or copied from. Hub names, folders elsewhere and relative keys are kept as recorded."""
    prefix = str(Path(home).resolve()) + "/"
    if recorded.startswith(prefix):  # without trailing slashes, as a folder given `.../lm/` was recorded before
        return recorded[len(prefix):].rstrip("/")
    m = SANDBOX_MODEL.fullmatch(recorded)  # as RE2 reads `$`: not before a final newline
    return m.group(1) if m else recorded


def spelling_of(home: Path, model: str, recorded: str) -> bool:
    """Whether rows that record `recorded` hold `model` (as recorded now) under a spelling a rerun takes over:
    one the marts read as the same model (`model_key`) whose folder is this warehouse's or gone (the place the
    warehouse was moved from), never a folder still there outside it (another warehouse's sandbox model of the
    same name: another model, as generate's legacy fingerprint reads it)."""
    if model_key(home, recorded) != model_key(home, model):
        return False
    inside = recorded.startswith(str(Path(home).resolve()) + "/")
    return not os.path.isabs(recorded) or inside or not os.path.lexists(recorded)


def model_location(home: Path, recorded: str) -> str:
    """What to load for a recorded model: a key relative to the warehouse (or a legacy absolute one that
    `model_key` reads so) as the folder in this warehouse when it is there, so a moved or copied warehouse
    loads its own model and never the original place's (gone, or holding another by now); anything else,
    a hub name included, as recorded."""
    key = model_key(home, recorded)
    if not os.path.isabs(key) and (Path(home) / key).is_dir():
        return str(Path(home) / key)
    return recorded
