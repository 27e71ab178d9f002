"""`lmaudit demo`: the main job on the embedded sandbox."""

from __future__ import annotations

from typing import Annotated

import typer

from ingest.cli.context import console, state


def demo(
    ctx: typer.Context,
    size: Annotated[str, typer.Option(help="tiny (used by the tests: ~2 min on 2 idle cores), small, or default (~6.5 min on 2 idle cores, ~5 with --threads 2; several times longer on busy ones; BENCHMARKS.md).")] = "default",
    index_tokenizer: Annotated[str, typer.Option(
        help="model, or llama-style: trace against a Llama-2-style index of the same corpus while the model keeps "
             "its own tokenizer (runs sandbox-<size>-llama-*).")] = "model",
    threads: Annotated[int, typer.Option(
        help="torch threads for training and generation. 1: the same weights on every machine, and no "
             "slowdown when other work shares the cores; 2 on an idle 2-core machine: ~1.7x faster training "
             "(different weights: changing it retrains the sandbox model).", min=1)] = 1,
) -> None:
    """Build the sandbox, generate in all five settings, trace, build the warehouse, print the headline table."""
    from ingest.demo import PLANS, run_demo
    from ingest.errors import UserError

    if size not in PLANS:
        raise UserError(f"unknown size {size!r}; choose one of {', '.join(PLANS)}")
    st = state(ctx)
    from ingest.sandbox.register import INDEX_TOKENIZERS

    if index_tokenizer not in INDEX_TOKENIZERS:
        raise UserError(f"unknown index tokenizer {index_tokenizer!r}; choose one of {', '.join(INDEX_TOKENIZERS)}")
    out = run_demo(st.home, size, console, index_tokenizer=index_tokenizer, threads=threads)
    if not out["build"].success:
        from ingest.cli.warehouse_cmds import fail_build

        fail_build(out["build"], st.home)
    _headline(st.home, out["runs"])
    total = sum(out["timings"].values())
    console.print("timings: " + ", ".join(f"{k} {v:.0f}s" for k, v in out["timings"].items()) + f"; total {total:.0f}s")
    console.print("run sandbox-*-neutral: unconditional samples at temperature 1.0 (top-p 1.0) for the mixture "
                  "estimate; the PropMe runs sample at 0.7, which over-produces the model's most likely kind of "
                  "document (docs/footguns.md)")
    for line in next_steps(st.home):
        console.print(line, highlight=False, soft_wrap=True)


def next_steps(home) -> list[str]:
    """The demo's last lines: what to run next on its warehouse (from any folder: `@sql/...` is found in the
    project's sql/ folder when the working directory has none)."""
    return [f"query:   lmaudit --warehouse {home} sql @sql/run_overview.sql    (one row per run)",
            f"explore: lmaudit --warehouse {home} explore    (runs, generations, spans and their training documents)"]


def _headline(home, run_ids: list[str]) -> None:
    """The demo's own runs: PropMe per setting, propensity against the prefix attack, the mixture estimate."""
    from ingest.cli.headline_tables import print_mixture, print_propensity, print_settings
    from ingest.cli.memorized_table import print_memorized
    from ingest.home import db_path
    from ingest.report.headline import mixture_headline, propensity_headlines, setting_headlines
    from ingest.report.memorized import memorized_by_source
    from ingest.sql_guard import open_read_only

    propme = [r for r in run_ids if not r.endswith("-neutral")]
    mixture = [r for r in run_ids if r.endswith("-neutral")]
    con = open_read_only(db_path(home), home)
    try:
        print_settings(setting_headlines(con, propme))
        print_propensity(propensity_headlines(con, propme))
        print_memorized(memorized_by_source(con, propme))  # canary (planted) vs licence text (natural copies)
        for run_id in mixture:
            print_mixture(mixture_headline(con, run_id))
    finally:
        con.close()
