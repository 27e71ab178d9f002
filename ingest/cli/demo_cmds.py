"""`lmaudit demo`: the main job on the embedded sandbox."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from ingest.cli.context import console, state


def _sample_generations() -> list[dict]:
    """A small, deterministic stand-in sample built from text every Python has (the Zen of Python)."""
    import ast
    import codecs
    import importlib.util
    from pathlib import Path

    # `import this` would print the poem; read its rot13 string from the module source instead.
    src = Path(importlib.util.find_spec("this").origin).read_text()
    literal = next(n.value for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Assign) and n.targets[0].id == "s")
    zen = codecs.decode(ast.literal_eval(literal), "rot13").splitlines()[2:]
    rows = []
    for p, line in enumerate(zen[:5]):
        for k in range(2):
            rows.append({"prompt_id": f"zen-{p}", "prompt": line.split(" ")[0], "sample_idx": k,
                         "text": " ".join(zen[p:p + 2 + k])})
    return rows


def demo(ctx: typer.Context) -> None:
    """Build a warehouse from a small sample and run every dbt model and test on it."""
    from ingest.build import build
    from ingest.importers.generations import import_generations

    st = state(ctx)
    st.lake.init()
    sample = st.home / "demo" / "sample_generations.jsonl"
    sample.parent.mkdir(parents=True, exist_ok=True)
    sample.write_text("".join(json.dumps(r) + "\n" for r in _sample_generations()))
    s = import_generations(st.lake, sample, run_id="demo-sample", model="demo", setting="generic")
    console.print(f"imported {s.n_generations} sample generations into {st.home}")
    result = build(st.home)
    console.print(result.summary())
    if not result.success:
        raise typer.Exit(1)
    console.print(f"try: lmaudit --warehouse {st.home} sql \"select run_id, count(*) from stg_generations group by 1\"")
