"""The earlier trace partitions that a trace of a generations file replaces, found by the ids they hold.

A file has no name in the lake: every file is the same source (`ingest/cli/trace_cmds.py`), so its batches
are named by their content alone (the pass, and each batch's generation ids and text hashes). The same
content traced from any path finds its batches done; an edited file gets new names for the batches it
changed only. What its earlier version wrote must still go: within one tracing pass a generation id can
have one set of rows only (its traced-generation id and span ids hash the pass and the id, so a second set
is a duplicate key and `lmaudit build` fails). So every partition of the pass not in the new plan that holds
one of the file's ids is replaced, with the other generations of its batch (the batch is the unit the lake
writes and deletes); other files' batches (other ids) stay. That also removes the partitions written before
files were keyed by content (named from the file's path).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from ingest.errors import UserError
from ingest.lake import Lake

# the source of every generations file (`trace_generations` names a source's partitions from it)
FILE_SOURCE = "file"

# deleted in this order, like the trace's own stale batches: the batch-done marker (`span_counts`) first
TABLES = ("span_counts", "traced_generations", "span_documents", "spans")


def superseded(lake: Lake, pass_prefix: str, keep: Collection[str],
               generation_ids: Iterable[str]) -> list[tuple[str, str]]:
    """(table, partition) of every partition named `pass_prefix...`, not in `keep` (the new plan), whose
    generations include one of `generation_ids`. Which generations a partition holds is read from
    `traced_generations`, or from `spans` for a batch written before `traced_generations` existed."""
    ids, keep = set(generation_ids), set(keep)
    parts = {t: {p for p in lake.partitions(t) if p.startswith(pass_prefix) and p not in keep}
             for t in TABLES}
    out: list[tuple[str, str]] = []
    for part in sorted(set().union(*parts.values())):
        table = next((t for t in ("traced_generations", "spans") if part in parts[t]), None)
        if table is None:  # counts or documents without their spans: nothing to say whose they are
            continue
        held = _generation_ids(lake, table, part)
        if ids.intersection(held):
            out += [(t, part) for t in TABLES if part in parts[t]]
    return out


def _generation_ids(lake: Lake, table: str, part: str) -> list[str]:
    """One column of one partition: a file trace reads every other batch of its pass, so not whole rows
    (about 1 ms a partition where `Lake.read` takes 2 ms)."""
    path = lake.partition_path(table, part)
    try:
        return pq.read_table(path, columns=["generation_id"]).column(0).to_pylist()
    except (pa.ArrowInvalid, OSError) as e:
        raise UserError(f"lake partition {path} is unreadable ({str(e).splitlines()[0]}); move it away and "
                        "re-run the step that wrote it (or restore it from a backup)") from None
