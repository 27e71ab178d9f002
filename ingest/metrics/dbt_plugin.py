"""dbt-duckdb plugin: registers the PropMe text checks as DuckDB functions on every dbt connection.

Listed in `profiles.yml` under `plugins:` (`module: ingest.metrics.dbt_plugin`). The functions are
vectorized (Arrow batches) and take every threshold as an argument, so the thresholds stay dbt vars:

    propme_is_degenerate(text, max_compression, max_letter_share)              -> boolean
    propme_is_code_like(text, min_lines, min_line_share, max_letter_share)     -> boolean
    propme_is_loop(text, min_share, max_period, min_repeats)                   -> boolean
    propme_targeted_hit(text, true_continuation)                               -> boolean
    propme_is_blank(text)                                                      -> boolean

A NULL text gives NULL. The definitions live in `ingest.metrics.text` (one each).
"""

from __future__ import annotations

from collections import defaultdict

import pyarrow as pa
from dbt.adapters.duckdb.plugins import BasePlugin

from ingest.metrics import text as T


def _grouped(values: list, params: list[tuple], fn) -> pa.Array:
    """Apply fn(list_of_values, *params) per distinct parameter tuple (normally exactly one)."""
    out: list = [None] * len(values)
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, p in enumerate(params):
        groups[p].append(i)
    for p, rows in groups.items():
        if any(x is None for x in p):
            continue  # a NULL threshold gives NULL
        res = fn([values[i] for i in rows], *p)
        for i, r in zip(rows, res):
            out[i] = r
    return pa.array(out, type=pa.bool_())


def _params(*arrays: pa.Array) -> list[tuple]:
    return list(zip(*(a.to_pylist() for a in arrays)))


def udf_is_degenerate(text: pa.Array, max_compression: pa.Array, max_letter_share: pa.Array) -> pa.Array:
    return _grouped(text.to_pylist(), _params(max_compression, max_letter_share),
                    lambda xs, c, s: [T.is_degenerate(x, c, s) for x in xs])


def udf_is_code_like(text: pa.Array, min_lines: pa.Array, min_line_share: pa.Array,
                     max_letter_share: pa.Array) -> pa.Array:
    return _grouped(text.to_pylist(), _params(min_lines, min_line_share, max_letter_share),
                    lambda xs, n, s, ls: [T.is_code_like(x, n, s, ls) for x in xs])


def udf_is_loop(text: pa.Array, min_share: pa.Array, max_period: pa.Array, min_repeats: pa.Array) -> pa.Array:
    return _grouped(text.to_pylist(), _params(min_share, max_period, min_repeats),
                    lambda xs, s, p, r: T.loop_flags(xs, s, p, r))


def udf_targeted_hit(text: pa.Array, true_continuation: pa.Array) -> pa.Array:
    return pa.array([T.targeted_hit(x, t) for x, t in zip(text.to_pylist(), true_continuation.to_pylist())],
                    type=pa.bool_())


def udf_is_blank(text: pa.Array) -> pa.Array:
    return pa.array([T.is_blank(x) for x in text.to_pylist()], type=pa.bool_())


def register(conn) -> None:
    """Register the functions on a DuckDB connection (also usable outside dbt, e.g. in notebooks)."""
    from duckdb.sqltypes import BOOLEAN, DOUBLE, INTEGER, VARCHAR

    specs = [
        ("propme_is_degenerate", udf_is_degenerate, [VARCHAR, DOUBLE, DOUBLE]),
        ("propme_is_code_like", udf_is_code_like, [VARCHAR, INTEGER, DOUBLE, DOUBLE]),
        ("propme_is_loop", udf_is_loop, [VARCHAR, DOUBLE, INTEGER, INTEGER]),
        ("propme_targeted_hit", udf_targeted_hit, [VARCHAR, VARCHAR]),
        ("propme_is_blank", udf_is_blank, [VARCHAR]),
    ]
    for name, fn, params in specs:
        try:
            conn.remove_function(name)
        except Exception:  # noqa: BLE001 - not registered yet
            pass
        conn.create_function(name, fn, params, BOOLEAN, type="arrow", null_handling="special",
                             side_effects=False)


class Plugin(BasePlugin):
    def configure_connection(self, conn) -> None:
        register(conn)
