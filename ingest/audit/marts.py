"""The Python behind `int_document_set_bootstrap`: f_p, f_c and PM of a document set and of each of its
documents, with PropMe's percentile bootstrap (ingest/metrics/bootstrap.py, the protocol the per-run marts use).

Units are those of the per-run metrics (a prompt with all its samples, or a generation in prompt-free
settings). A run's metric restricted to a document d is sum(num_d) / sum(den) over units: num_d counts the
unit's non-degenerate generations that reproduce a span of >= 20 / >= 50 tokens from d (r20, r50) or match d
in full (fmr); den is the unit's non-degenerate generations, as for the run's own R20 / R50 / FMR. Targeted
extraction (te) of a document counts the attack prompts drawn from it. The set's row (doc_ix NULL) counts a
generation once whichever of the set's documents it reproduces.

Each (document set, run, tracing pass) has its own stream ("document_set", set, run, trace): every document
of the set is resampled with the same draws (one stream, re-created per chunk of documents), and the
propensity run and its attack run are resampled independently, as `int_propensity_bootstrap` pairs runs.
PM = f_p / (f_p + f_c), its interval over rounds with f_p + f_c > 0 (skipped rounds counted).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ingest.marts.common import finite
from ingest.metrics import bootstrap as bs

PM_METRICS = ("r20", "r50", "fmr")
DOC_CHUNK = 64  # documents per resampling pass: the replicates of a chunk are resamples x 256 doubles (20 MB at 10,000)
NO_DOC = -1  # a document number no set holds: its counts are all zero

SCHEMA = pa.schema([
    ("document_set", pa.string()), ("doc_ix", pa.int64()), ("propensity_run_id", pa.string()),
    ("attack_run_id", pa.string()), ("trace_id", pa.string()), ("metric", pa.string()),
    ("n_units_p", pa.int64()), ("hits_p", pa.float64()), ("n_generations_p", pa.float64()),
    ("f_p", pa.float64()), ("f_p_ci_low", pa.float64()), ("f_p_ci_high", pa.float64()),
    ("n_units_c", pa.int64()), ("hits_c", pa.float64()), ("n_generations_c", pa.float64()),
    ("f_c", pa.float64()), ("f_c_ci_low", pa.float64()), ("f_c_ci_high", pa.float64()),
    ("pm", pa.float64()), ("pm_ci_low", pa.float64()), ("pm_ci_high", pa.float64()),
    ("n_skipped_rounds", pa.int64()),
    ("te_generations", pa.float64()), ("te_hits", pa.float64()), ("te", pa.float64()),
    ("te_ci_low", pa.float64()), ("te_ci_high", pa.float64()),
    ("n_resamples", pa.int64()), ("seed", pa.int64()), ("ci_level", pa.float64()),
])

COUNTS = ("n_ok", "r20_hits", "r50_hits", "fmr_hits", "n_te", "te_hits")


@dataclass
class RunUnits:
    """One (set, run, pass): the set-level counts (units x COUNTS) and each document's (docs -> units x COUNTS)."""

    units: list[str]
    set_counts: np.ndarray
    doc_counts: dict[int, np.ndarray]


def run_units(units: pa.Table) -> dict[tuple[str, str, str | None], RunUnits]:
    """Group `int_document_set_units` by (document_set, run_id, trace_id); units in sorted id order."""
    rows = units.to_pylist()
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["document_set"], r["run_id"], r["trace_id"]), []).append(r)
    out = {}
    for key, rs in groups.items():
        ids = sorted({r["unit_id"] for r in rs})
        pos = {u: i for i, u in enumerate(ids)}
        set_counts = np.zeros((len(ids), len(COUNTS)))
        docs: dict[int, np.ndarray] = {}
        for r in rs:
            vec = [float(r[c] or 0) for c in COUNTS]
            if r["doc_ix"] is None:
                set_counts[pos[r["unit_id"]]] = vec
            else:
                docs.setdefault(int(r["doc_ix"]), np.zeros((len(ids), len(COUNTS))))[pos[r["unit_id"]]] = vec
        out[key] = RunUnits(ids, set_counts, docs)
    return out


def _columns(ru: RunUnits, doc_ixs: list[int | None]) -> tuple[np.ndarray, np.ndarray]:
    """Numerators and denominators (units x 4 per document: r20, r50, fmr, te); r20 / r50 / fmr of a document
    share the unit's non-degenerate generations as denominator (the set's n_ok)."""
    n = len(ru.units)
    nums, dens = [], []
    zero = np.zeros((n, len(COUNTS)))
    for d in doc_ixs:
        c = ru.set_counts if d is None else ru.doc_counts.get(d, zero)
        nums += [c[:, 1], c[:, 2], c[:, 3], c[:, 5]]
        dens += [ru.set_counts[:, 0]] * 3 + [c[:, 4]]
    return np.column_stack(nums), np.column_stack(dens)


def _replicates(ru: RunUnits | None, key: tuple, doc_ixs: list[int | None], n_resamples: int, seed: int):
    """(point values, replicates (B x 4 per doc), sums of num, sums of den, n_units) of a run over `doc_ixs`."""
    if ru is None:
        return None
    num, den = _columns(ru, doc_ixs)
    document_set, run_id, trace_id = key
    rng = bs.stream_rng(seed, "document_set", document_set, run_id, trace_id or "")
    reps = bs.ratio_replicates(num, den, n_resamples, rng)
    return bs.point_ratio(num, den), reps, num.sum(axis=0), den.sum(axis=0), len(ru.units)


def document_set_bootstrap(units: pa.Table, pairs: pa.Table, sets: pa.Table, n_resamples: int, seed: int,
                           ci_level: float) -> pa.Table:
    """One row per (set, document or NULL for the set, propensity run, attack run, pass, metric of PM_METRICS)."""
    if pairs.num_rows == 0:
        return SCHEMA.empty_table()
    groups = run_units(units)
    members: dict[str, list[int]] = {}
    for r in sets.select(["document_set", "doc_ix"]).to_pylist():
        members.setdefault(r["document_set"], []).append(int(r["doc_ix"]))
    rows = []
    for pair in pairs.select(["document_set", "propensity_run_id", "attack_run_id", "trace_id"]).to_pylist():
        s, p_run, c_run, trace = pair["document_set"], pair["propensity_run_id"], pair["attack_run_id"], pair["trace_id"]
        p_units = groups.get((s, p_run, trace))
        c_units = groups.get((s, c_run, trace)) if c_run is not None else None
        # only documents with a count in either run need resampling: every other one has all-zero columns, whose
        # results are those of one stand-in zero document (NO_DOC), computed once and copied
        counted = {d for u in (p_units, c_units) if u is not None for d in u.doc_counts}
        docs = sorted(set(members.get(s, [])))
        active: list[int | None] = [None, NO_DOC, *(d for d in docs if d in counted)]
        zero_rows: list[dict] = []
        for start in range(0, len(active), DOC_CHUNK):
            chunk = active[start:start + DOC_CHUNK]
            p = _replicates(p_units, (s, p_run, trace), chunk, n_resamples, seed)
            c = _replicates(c_units, (s, c_run, trace), chunk, n_resamples, seed) if c_run is not None else None
            for i, d in enumerate(chunk):
                out = _rows(s, d, p_run, c_run, trace, i, p, c, n_resamples, seed, ci_level)
                if d == NO_DOC:
                    zero_rows = out
                else:
                    rows += out
        rows += [{**r, "doc_ix": d} for d in docs if d not in counted for r in zero_rows]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _side(res, j: int, level: float):
    """(value, ci_low, ci_high, hits, generations, n_units, replicates) of column j, or Nones without a run."""
    if res is None:
        return None, None, None, None, None, None, None
    values, reps, nums, dens, n_units = res
    iv = bs.percentile_interval(reps[:, j], level)
    return finite(values[j]), finite(iv.low), finite(iv.high), float(nums[j]), float(dens[j]), n_units, reps[:, j]


def _rows(s, d, p_run, c_run, trace, i, p, c, n_resamples, seed, level) -> list[dict]:
    te = _side(c, 4 * i + 3, level)
    out = []
    for k, metric in enumerate(PM_METRICS):
        fp = _side(p, 4 * i + k, level)
        fc = _side(c, 4 * i + k, level)
        pm = pm_low = pm_high = skipped = None
        if fp[0] is not None and fc[0] is not None:
            pm = finite(bs.propensity(fp[0], fc[0]))
            iv = bs.percentile_interval(bs.propensity_replicates(fp[6], fc[6]), level)
            pm_low, pm_high, skipped = finite(iv.low), finite(iv.high), iv.n_skipped
        out.append({"document_set": s, "doc_ix": d, "propensity_run_id": p_run, "attack_run_id": c_run,
                    "trace_id": trace, "metric": metric, "n_units_p": fp[5], "hits_p": fp[3],
                    "n_generations_p": fp[4], "f_p": fp[0], "f_p_ci_low": fp[1], "f_p_ci_high": fp[2],
                    "n_units_c": fc[5], "hits_c": fc[3], "n_generations_c": fc[4], "f_c": fc[0],
                    "f_c_ci_low": fc[1], "f_c_ci_high": fc[2], "pm": pm, "pm_ci_low": pm_low, "pm_ci_high": pm_high,
                    "n_skipped_rounds": skipped, "te_generations": te[4], "te_hits": te[3], "te": te[0],
                    "te_ci_low": te[1], "te_ci_high": te[2], "n_resamples": n_resamples, "seed": seed,
                    "ci_level": level})
    return out
