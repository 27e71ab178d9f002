"""`lmaudit docs`: dbt's documentation site (every model's lineage and column descriptions) for the warehouse.

`dbt docs generate --static` runs with the warehouse's own profile and target folder (as `lmaudit build`) and
writes one self-contained `static_index.html` (manifest and catalog inlined), which is copied out as
`index.html` next to `manifest.json` and `catalog.json`. The catalog reads the DuckDB file, so it takes the
build lock: docs are never generated while a build writes.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from ingest.errors import StepFailed, UserError
from ingest.home import db_path

FILES = ("manifest.json", "catalog.json")
MARKER = ".lmaudit-docs"  # left in every folder `lmaudit docs` writes: a later run may replace its files


def claim_docs_folder(out: Path) -> None:
    """Write the site only into a new or empty folder, one an earlier `lmaudit docs` wrote (its marker), or one
    holding nothing but the site's own files (a site written before the marker existed): a user's folder with an
    `index.html` of its own is never overwritten."""
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is a file; give a folder for the documentation site")
    ours = {"index.html", MARKER, *FILES}
    if out.is_dir() and not (out / MARKER).exists() and any(p.name not in ours for p in out.iterdir()):
        raise UserError(f"{out} is not empty and was not written by `lmaudit docs`; give a new or empty folder "
                        "(nothing in it was changed)")


@dataclass(frozen=True)
class DocsSite:
    folder: Path
    index: Path
    n_models: int


def generate_docs(home: Path, out: Path) -> DocsSite:
    import json

    from ingest.build import build_lock, run_dbt

    from ingest.warehouse_db import require_database

    require_database(home)
    out = out.resolve()
    claim_docs_folder(out)  # before dbt runs: a refused folder costs nothing
    with build_lock(home):
        res = run_dbt(home, ["docs", "generate", "--static"])
    if res.exception is not None and "lock" in str(res.exception).lower():
        raise UserError(f"{db_path(home)} is open in another process (an `lmaudit explore --serve`, a notebook?); "
                        "dbt needs it to itself for the catalog: stop that process and run `lmaudit docs` again")
    if res.exception is not None:
        raise UserError(f"dbt could not run: {str(res.exception).splitlines()[0]}; see {home / 'dbt' / 'logs'}")
    if not res.success:
        raise StepFailed(f"dbt docs generate failed; details in {home / 'dbt' / 'logs' / 'dbt.log'}")
    target = home / "dbt" / "target"
    static = target / "static_index.html"
    if not static.exists():
        raise StepFailed(f"dbt docs generate wrote no {static}; details in {home / 'dbt' / 'logs' / 'dbt.log'}")
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("site written by lmaudit docs; a later run replaces index.html, manifest.json and "
                              "catalog.json here\n")
    shutil.copyfile(static, out / "index.html")
    for name in FILES:
        shutil.copyfile(target / name, out / name)
    manifest = json.loads((out / "manifest.json").read_text())
    n_models = sum(1 for n in manifest.get("nodes", {}).values() if n.get("resource_type") == "model")
    return DocsSite(out, out / "index.html", n_models)


def serve_folder(folder: Path, port: int):
    """A static file server for `folder` on 127.0.0.1:`port` (0: any free port), answering only requests
    addressed to this machine's loopback names (`ingest.explore.loopback`)."""
    import functools
    from http.server import SimpleHTTPRequestHandler

    from ingest.explore.loopback import LoopbackServer, refuse_foreign_host

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if not refuse_foreign_host(self):
                super().do_GET()

        def do_HEAD(self) -> None:  # noqa: N802
            if not refuse_foreign_host(self):
                super().do_HEAD()

    try:
        return LoopbackServer(("127.0.0.1", port), functools.partial(Quiet, directory=str(folder)))
    except OSError as e:
        raise UserError(f"cannot listen on 127.0.0.1:{port} ({e.strerror or e}); choose another --port "
                        "(0 picks a free one)") from None
