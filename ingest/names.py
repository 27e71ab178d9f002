"""Names users give things (runs, corpora, classifiers), checked once, in one place.

A name becomes part of a key and sometimes of a path (`<warehouse>/classifiers/<name>`): `.` once made
`classify train` replace the whole classifiers folder, `..` pointed outside it. A valid name is 1-200
characters, no leading or trailing whitespace, no path separator, no control character, and not `.` or
`..`. `inside` checks that a path built from a name stays under its base folder.
"""

from __future__ import annotations

from pathlib import Path

from ingest.errors import UserError

MAX_LEN = 200


def check_name(kind: str, name: str | None) -> str:
    """`name` if it is a valid `kind` name (e.g. "run id", "corpus name"), else a one-line UserError."""
    if name is None or not str(name).strip():
        raise UserError(f"the {kind} must not be empty")
    name = str(name)
    problem = None
    if name != name.strip():
        problem = "starts or ends with whitespace"
    elif name in (".", ".."):
        problem = "is a path of its own"
    elif "/" in name or "\\" in name:
        problem = "contains a path separator"
    elif any(ord(c) < 32 or ord(c) == 127 for c in name):
        problem = "contains a control character"
    elif len(name) > MAX_LEN:
        problem = f"is longer than {MAX_LEN} characters"
    if problem:
        raise UserError(f"the {kind} {name!r} {problem}; use letters, digits, '-', '_' or '.' "
                        "(e.g. olmo-7b-unconditional)")
    return name


def inside(base: Path, path: Path) -> Path:
    """`path`, after checking that it resolves to a place strictly inside `base`."""
    b, p = Path(base).resolve(), Path(path).resolve()
    if p == b or b not in p.parents:
        raise UserError(f"{path} is not inside {base}; refusing to write there")
    return path


def output_dir(path: Path, option: str = "--out") -> Path:
    """Create the folder a command writes its files to (`report --out`, `export --out`, `docs --out`); a
    folder that cannot be made (under a file, in /proc, no permission, full disk) is one line naming it."""
    import os

    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        why = os.strerror(e.errno) if e.errno else str(e)
        raise UserError(f"{option} {path}: cannot create this folder ({why}); choose a writable folder") from None
    return path
