"""The demo's "what came back, and from where" table (ingest/report/memorized.py reads it)."""

from __future__ import annotations

from rich import box
from rich.table import Table

from ingest.cli.context import console
from ingest.report.memorized import LONG_SPAN_TOKENS, MemorizedSource
from ingest.sql_output import printable


def print_memorized(rows: list[MemorizedSource]) -> None:
    """One row per source domain; the canary is planted, licence text naturally duplicated."""
    if not rows:
        return
    t = Table(title="What the model reproduces, by source (longest span over all settings)", title_justify="left",
              box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for c in ("source", "origin", f"gens>={LONG_SPAN_TOKENS}", "longest", "copies"):
        t.add_column(c, no_wrap=True)
    t.add_column("longest span", overflow="fold")
    for r in rows:
        text = printable(" ".join(r.text.split()))
        t.add_row(r.domain, r.origin, str(r.n_long), str(r.longest), "-" if r.copies is None else str(r.copies),
                  (text[:57] + "...") if len(text) > 60 else text)
    console.print(t)
    console.print(f"  gens>={LONG_SPAN_TOKENS}: generations with a span of >= {LONG_SPAN_TOKENS} tokens from the source; "
                  "longest: tokens; copies: occurrences of that span in the training corpus. planted: the canary, "
                  "copied in on purpose (a known answer); natural copies: licence text that many packages ship.",
                  style="dim")
