"""Table-in, table-out functions behind the dbt Python models of the PropMe marts.

Each takes Arrow tables (what the models `ref`) and returns an Arrow table with a fixed schema, also when
the input is empty (`dbt build --empty` feeds zero rows). The math is in `ingest.metrics.bootstrap`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ingest.marts.common import finite, parallel
from ingest.metrics import bootstrap as bs


@dataclass(frozen=True)
class Params:
    n_resamples: int
    seed: int
    ci_level: float
    pm_metrics: tuple[str, ...]

    @classmethod
    def from_table(cls, params: pa.Table) -> Params | None:
        """The one row of `int_propme_params` (None when it has no row, as under `--empty`)."""
        if params.num_rows == 0:
            return None
        row = params.slice(0, 1).to_pylist()[0]
        return cls(int(row["bootstrap_resamples"]), int(row["bootstrap_seed"]), float(row["ci_level"]),
                   tuple(row["pm_metrics"] or ()))


SETTING_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("trace_id", pa.string()), ("metric", pa.string()),
    ("n_units_resampled", pa.int64()), ("n_units", pa.int64()), ("n_generations", pa.int64()),
    ("n_excluded", pa.int64()), ("numerator", pa.float64()), ("denominator", pa.float64()),
    ("value", pa.float64()), ("ci_low", pa.float64()), ("ci_high", pa.float64()),
    ("n_skipped_resamples", pa.int64()), ("n_resamples", pa.int64()), ("seed", pa.int64()),
    ("ci_level", pa.float64()), ("replicates", pa.list_(pa.float64())),
])

PROPENSITY_SCHEMA = pa.schema([
    ("propensity_run_id", pa.string()), ("capability_run_id", pa.string()), ("trace_id", pa.string()),
    ("metric", pa.string()), ("f_p", pa.float64()), ("f_c", pa.float64()), ("pm", pa.float64()),
    ("ci_low", pa.float64()), ("ci_high", pa.float64()), ("n_skipped_rounds", pa.int64()),
    ("diff", pa.float64()), ("diff_ci_low", pa.float64()), ("diff_ci_high", pa.float64()),
    ("n_skipped_diff_rounds", pa.int64()), ("n_resamples", pa.int64()), ("seed", pa.int64()),
    ("ci_level", pa.float64()),
])

DIFFERENCE_SCHEMA = pa.schema([
    ("run_a", pa.string()), ("run_b", pa.string()), ("trace_id", pa.string()), ("metric", pa.string()),
    ("n_shared_units", pa.int64()), ("value_a", pa.float64()), ("value_b", pa.float64()),
    ("diff", pa.float64()), ("ci_low", pa.float64()), ("ci_high", pa.float64()),
    ("n_skipped_resamples", pa.int64()), ("n_resamples", pa.int64()), ("seed", pa.int64()),
    ("ci_level", pa.float64()),
])


@dataclass
class UnitMatrix:
    """One run's (and tracing pass's) units x metrics numerators and denominators."""

    units: np.ndarray  # unit ids, sorted
    metrics: list[str]
    num: np.ndarray  # (n_units, n_metrics)
    den: np.ndarray
    n_generations: np.ndarray  # (n_units, n_metrics)
    n_eligible: np.ndarray


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Integer codes of a string column, numbered in sorted (code point) order of the values."""
    enc = pc.dictionary_encode(column).combine_chunks()
    labels = enc.dictionary.to_pylist()
    order = sorted(range(len(labels)), key=labels.__getitem__)
    rank = np.empty(len(labels), dtype=np.int64)
    rank[order] = np.arange(len(labels))
    return rank[enc.indices.to_numpy(zero_copy_only=False)], [labels[i] for i in order]


# The order the per-run Python models read their units in (`incremental_by_run(..., order=UNIT_ORDER)`): sorted
# rows take `unit_matrices`' lean path. DuckDB compares strings byte-wise (UTF-8), which is Python's code-point
# order; NULL trace ids first, as "\x00" sorts here.
UNIT_ORDER = "run_id, trace_id nulls first, unit_id, metric"


def _filled_trace(units: pa.Table) -> pa.ChunkedArray:
    return pc.if_else(pc.is_null(units.column("trace_id")), "\x00",
                      pc.fill_null(units.column("trace_id").cast(pa.string()), ""))


def _trace_key(units: pa.Table) -> pa.ChunkedArray:
    """The trace id as the grouping compares it (NULL as "\x00"), without a copy when there is no NULL."""
    trace = units.column("trace_id").cast(pa.string())
    return _filled_trace(units) if trace.null_count else trace


def _changed(column: pa.ChunkedArray) -> np.ndarray:
    """Row i differs from row i - 1 (row 0 always), as booleans."""
    n = len(column)
    if n <= 1:
        return np.ones(n, dtype=bool)
    diff = pc.not_equal(column.slice(1), column.slice(0, n - 1)).to_numpy()
    return np.r_[True, diff]


def _is_sorted(columns: list[pa.ChunkedArray]) -> bool:
    """Whether the rows are in strictly increasing order of these string columns, compared left to right."""
    n = len(columns[0])
    if n <= 1:
        return True
    undecided = np.ones(n - 1, dtype=bool)  # rows i-1 and i equal on every column so far
    for col in columns:
        a, b = col.slice(0, n - 1), col.slice(1)
        if (undecided & pc.greater(a, b).to_numpy()).any():
            return False
        undecided &= ~pc.less(a, b).to_numpy()
    return not undecided.any()  # an undecided pair is a duplicate row: the general path names it


def _unit_matrices_sorted(units: pa.Table, keys: list[pa.ChunkedArray]) -> dict[tuple[str, str | None], UnitMatrix]:
    """`unit_matrices` of rows already sorted by (run, pass, unit, metric): no sort, no per-row copies of the
    keys or the numbers, which go from Arrow's buffers straight into the matrices (a run of 16x paper scale,
    4.8M rows: ~220 MiB above its 387 MiB of Arrow rows instead of ~780 MiB, measured)."""
    run, trace, unit, metric = keys
    metric_codes, metric_labels = _codes(metric)
    new_group = _changed(run) | _changed(trace)
    new_unit = new_group | _changed(unit)
    starts = np.r_[np.flatnonzero(new_group), units.num_rows]
    out = {}
    for a, b in zip(starts[:-1].tolist(), starts[1:].tolist()):
        u_idx = np.cumsum(new_unit[a:b]) - 1
        m_present = np.unique(metric_codes[a:b])
        m_idx = np.searchsorted(m_present, metric_codes[a:b])
        shape = (int(u_idx[-1]) + 1, len(m_present))
        mats = {}
        for col in ("num", "den", "n_generations", "n_eligible"):
            mat = np.zeros(shape, dtype=np.float64)
            at = 0
            for chunk in units.column(col).slice(a, b - a).chunks:  # Arrow's buffers, not a copy of the column
                n = len(chunk)
                mat[u_idx[at:at + n], m_idx[at:at + n]] = chunk.to_numpy(zero_copy_only=False)
                at += n
            mats[col] = mat
        labels = np.array(unit.slice(a, b - a).filter(pa.array(new_unit[a:b])).to_pylist(), dtype=object)
        trace_label = trace[a].as_py()
        out[(run[a].as_py(), None if trace_label == "\x00" else trace_label)] = UnitMatrix(
            labels, [metric_labels[i] for i in m_present], mats["num"], mats["den"], mats["n_generations"],
            mats["n_eligible"])
    return dict(sorted(out.items(), key=lambda kv: (kv[0][0], "\x00" if kv[0][1] is None else kv[0][1])))


def unit_matrices(units: pa.Table | pd.DataFrame) -> dict[tuple[str, str | None], UnitMatrix]:
    """Group `int_metric_units` rows by (run_id, trace_id) into dense matrices (units in sorted order). Rows
    already in UNIT_ORDER (no duplicate) take a lean path; any other order the general one, same result."""
    out: dict[tuple[str, str | None], UnitMatrix] = {}
    if isinstance(units, pd.DataFrame):
        units = pa.Table.from_pandas(units, preserve_index=False)
    if units.num_rows == 0:
        return out
    keys = [units.column("run_id").cast(pa.string()), _trace_key(units), units.column("unit_id").cast(pa.string()),
            units.column("metric").cast(pa.string())]
    if _is_sorted(keys):
        return _unit_matrices_sorted(units, keys)
    del keys
    run_codes, run_labels = _codes(units.column("run_id").cast(pa.string()))
    trace_codes, trace_labels = _codes(_filled_trace(units))
    unit_codes, unit_labels = _codes(units.column("unit_id").cast(pa.string()))
    metric_codes, metric_labels = _codes(units.column("metric").cast(pa.string()))
    order = np.lexsort((metric_codes, unit_codes, trace_codes, run_codes))
    run_c, trace_c, unit_c, metric_c = run_codes[order], trace_codes[order], unit_codes[order], metric_codes[order]
    values = {c: units.column(c).to_numpy().astype(np.float64)[order]
              for c in ("num", "den", "n_generations", "n_eligible")}
    same = (run_c[1:] == run_c[:-1]) & (trace_c[1:] == trace_c[:-1]) & (unit_c[1:] == unit_c[:-1]) \
        & (metric_c[1:] == metric_c[:-1])
    if same.any():
        i = int(np.flatnonzero(same)[0])
        raise ValueError(f"int_metric_units has two rows for run {run_labels[run_c[i]]!r}, unit "
                         f"{unit_labels[unit_c[i]]!r}, metric {metric_labels[metric_c[i]]!r}")
    unit_labels_arr = np.array(unit_labels, dtype=object)
    starts = np.flatnonzero(np.r_[True, (run_c[1:] != run_c[:-1]) | (trace_c[1:] != trace_c[:-1]), True])
    for a, b in zip(starts[:-1], starts[1:]):
        u = unit_c[a:b]
        new_unit = np.r_[True, u[1:] != u[:-1]]
        u_idx = np.cumsum(new_unit) - 1
        m_present = np.unique(metric_c[a:b])
        m_idx = np.searchsorted(m_present, metric_c[a:b])
        shape = (int(u_idx[-1]) + 1, len(m_present))
        mats = {}
        for col, v in values.items():
            mat = np.zeros(shape, dtype=np.float64)
            mat[u_idx, m_idx] = v[a:b]
            mats[col] = mat
        trace_label = trace_labels[trace_c[a]]
        out[(run_labels[run_c[a]], None if trace_label == "\x00" else trace_label)] = UnitMatrix(
            unit_labels_arr[u[new_unit]], [metric_labels[i] for i in m_present], mats["num"], mats["den"],
            mats["n_generations"], mats["n_eligible"])
    return out


def setting_bootstrap(units: pa.Table, params: Params | None) -> pa.Table:
    """`int_setting_bootstrap`: value, percentile interval and the replicates of every (run, tracing pass,
    metric) of `int_metric_units` (kept for every metric: the PM metrics' are paired by
    `int_propensity_bootstrap`, any metric's by `int_independent_difference_bootstrap`, which would otherwise
    draw the same resamples again)."""
    if params is None or units.num_rows == 0:
        return SETTING_SCHEMA.empty_table()
    groups = unit_matrices(units)

    def one(item):
        (run_id, trace_id), m = item
        rng = bs.stream_rng(params.seed, "setting", run_id, trace_id or "")
        reps = bs.ratio_replicates(m.num, m.den, params.n_resamples, rng)
        values = bs.point_ratio(m.num, m.den)
        cols: dict[str, list] = {f.name: [] for f in SETTING_SCHEMA}
        for j, metric in enumerate(m.metrics):
            iv = bs.percentile_interval(reps[:, j], params.ci_level)
            n_gen = int(m.n_generations[:, j].sum())
            for name, v in (("run_id", run_id), ("trace_id", trace_id), ("metric", metric),
                            ("n_units_resampled", int(m.num.shape[0])), ("n_units", int((m.den[:, j] > 0).sum())),
                            ("n_generations", n_gen), ("n_excluded", n_gen - int(m.n_eligible[:, j].sum())),
                            ("numerator", float(m.num[:, j].sum())), ("denominator", float(m.den[:, j].sum())),
                            ("value", finite(values[j])), ("ci_low", finite(iv.low)), ("ci_high", finite(iv.high)),
                            ("n_skipped_resamples", iv.n_skipped), ("n_resamples", params.n_resamples),
                            ("seed", params.seed), ("ci_level", params.ci_level),
                            ("replicates", reps[:, j])):
                cols[name].append(v)
        return cols

    parts = parallel(one, list(groups.items()))
    arrays = []
    for f in SETTING_SCHEMA:
        values = [v for part in parts for v in part[f.name]]
        arrays.append(_list_array(values) if f.name == "replicates" else pa.array(values, type=f.type))
    return pa.Table.from_arrays(arrays, schema=SETTING_SCHEMA)


def _list_array(values: list[np.ndarray | None]) -> pa.Array:
    """list<double> from numpy vectors (None -> NULL) without going through Python floats."""
    lengths = np.array([0 if v is None else len(v) for v in values], dtype=np.int32)
    offsets = pa.array(np.r_[0, np.cumsum(lengths)].astype(np.int32))
    flat = np.concatenate([v for v in values if v is not None]) if lengths.sum() else np.zeros(0)
    mask = pa.array([v is None for v in values])
    return pa.ListArray.from_arrays(offsets, pa.array(flat, type=pa.float64()), mask=mask)


def _replicate_lookup(setting: pa.Table) -> dict[tuple[str, str | None, str], tuple[float | None, np.ndarray | None]]:
    out = {}
    keys = setting.select(["run_id", "trace_id", "metric", "value"]).to_pydict()
    reps = setting.column("replicates").combine_chunks()
    for i, (run_id, trace_id, metric, value) in enumerate(zip(keys["run_id"], keys["trace_id"], keys["metric"],
                                                               keys["value"])):
        r = reps[i]
        out[(run_id, trace_id, metric)] = (value, None if not r.is_valid else r.values.to_numpy(zero_copy_only=False))
    return out


def propensity_bootstrap(pairs: pa.Table, setting: pa.Table, params: Params | None) -> pa.Table:
    """`int_propensity_bootstrap`: PM = f_p / (f_p + f_c) per (pair, PM metric), with the percentile
    interval over independently resampled rounds (skipped rounds counted), and the difference f_p - f_c."""
    if params is None or pairs.num_rows == 0:
        return PROPENSITY_SCHEMA.empty_table()
    lookup = _replicate_lookup(setting)
    rows = []
    for pair in pairs.select(["propensity_run_id", "capability_run_id", "trace_id"]).to_pylist():
        p_run, c_run, trace = pair["propensity_run_id"], pair["capability_run_id"], pair["trace_id"]
        for metric in params.pm_metrics:
            f_p, rep_p = lookup.get((p_run, trace, metric), (None, None))
            f_c, rep_c = lookup.get((c_run, trace, metric), (None, None)) if c_run is not None else (None, None)
            row = {"propensity_run_id": p_run, "capability_run_id": c_run, "trace_id": trace, "metric": metric,
                   "f_p": f_p, "f_c": f_c, "pm": None, "ci_low": None, "ci_high": None, "n_skipped_rounds": None,
                   "diff": None, "diff_ci_low": None, "diff_ci_high": None, "n_skipped_diff_rounds": None,
                   "n_resamples": params.n_resamples, "seed": params.seed, "ci_level": params.ci_level}
            if f_p is not None and f_c is not None:
                row["pm"] = bs.propensity(f_p, f_c)
                row["diff"] = f_p - f_c
            if rep_p is not None and rep_c is not None:
                iv = bs.percentile_interval(bs.propensity_replicates(rep_p, rep_c), params.ci_level)
                row.update(ci_low=finite(iv.low), ci_high=finite(iv.high), n_skipped_rounds=iv.n_skipped)
                div = bs.percentile_interval(rep_p - rep_c, params.ci_level)
                row.update(diff_ci_low=finite(div.low), diff_ci_high=finite(div.high), n_skipped_diff_rounds=div.n_skipped)
            rows.append(row)
    return pa.Table.from_pylist(rows, schema=PROPENSITY_SCHEMA)


def _restrict(m: UnitMatrix, shared: np.ndarray, metrics: list[str]) -> tuple[np.ndarray, np.ndarray]:
    rows = np.searchsorted(m.units, shared)
    cols = [m.metrics.index(x) for x in metrics]
    return m.num[np.ix_(rows, cols)], m.den[np.ix_(rows, cols)]


def difference_bootstrap(pairs: pa.Table, units: pa.Table, params: Params | None) -> pa.Table:
    """`int_run_difference_bootstrap`: paired bootstrap of metric(run_a) - metric(run_b) over the units
    (prompts) both runs share."""
    if params is None or pairs.num_rows == 0 or units.num_rows == 0:
        return DIFFERENCE_SCHEMA.empty_table()
    groups = unit_matrices(units.to_pandas())
    items = pairs.select(["run_a", "run_b", "trace_id"]).to_pylist()

    def one(pair) -> list[dict]:
        a, b, trace = pair["run_a"], pair["run_b"], pair["trace_id"]
        ma, mb = groups.get((a, trace)), groups.get((b, trace))
        if ma is None or mb is None:
            return []
        shared = np.array(sorted(set(ma.units.tolist()) & set(mb.units.tolist())), dtype=object)
        metrics = sorted(set(ma.metrics) & set(mb.metrics))
        if shared.size == 0 or not metrics:
            return []
        num_a, den_a = _restrict(ma, shared, metrics)
        num_b, den_b = _restrict(mb, shared, metrics)
        rng = bs.stream_rng(params.seed, "difference", a, b, trace or "")
        reps = bs.paired_difference_replicates(num_a, den_a, num_b, den_b, params.n_resamples, rng)
        va, vb = bs.point_ratio(num_a, den_a), bs.point_ratio(num_b, den_b)
        rows = []
        for j, metric in enumerate(metrics):
            iv = bs.percentile_interval(reps[:, j], params.ci_level)
            rows.append({"run_a": a, "run_b": b, "trace_id": trace, "metric": metric,
                         "n_shared_units": int(shared.size), "value_a": finite(va[j]), "value_b": finite(vb[j]),
                         "diff": finite(va[j] - vb[j]), "ci_low": finite(iv.low), "ci_high": finite(iv.high),
                         "n_skipped_resamples": iv.n_skipped, "n_resamples": params.n_resamples,
                         "seed": params.seed, "ci_level": params.ci_level})
        return rows

    rows = [r for rs in parallel(one, items) for r in rs]
    return pa.Table.from_pylist(rows, schema=DIFFERENCE_SCHEMA)


def sql_in_list(values: list[str]) -> str:
    """Values as SQL string literals for an IN list (NULL when empty, so that nothing matches)."""
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values) or "null"
