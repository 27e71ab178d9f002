"""Cost of the document-set bootstrap (ingest/audit/marts.py) on a rightsholder-sized set, against a peer in the same
run: the same function made to resample every document (what it did before the documents without a count were
copied from one stand-in).

Synthetic units: 2 runs (propensity, attack) x U units; a set of D documents of which A have counts. Prints CPU
seconds of each and their ratio, and checks that both variants give identical rows.

    python benchmarks/document_set_bootstrap.py [--units 1000] [--docs 10000] [--active 100] [--resamples 10000]
"""

from __future__ import annotations

import argparse
import random
import time

import pyarrow as pa

from ingest.audit import marts


def synthetic(units: int, docs: int, active: int, seed: int = 0):
    rng = random.Random(seed)
    counted = rng.sample(range(docs), active)
    rows = []
    for run in ("p", "c"):
        for u in range(units):
            uid = f"u{u:06d}"
            rows.append({"document_set": "s", "run_id": run, "trace_id": "t", "unit_id": uid, "doc_ix": None,
                         "n_ok": 10, "r20_hits": rng.randint(0, 2), "r50_hits": rng.randint(0, 1), "fmr_hits": 0,
                         "n_te": 10 if run == "c" else 0, "te_hits": rng.randint(0, 1) if run == "c" else 0})
            if rng.random() < 0.2:
                rows.append({"document_set": "s", "run_id": run, "trace_id": "t", "unit_id": uid,
                             "doc_ix": rng.choice(counted), "n_ok": None, "r20_hits": 1, "r50_hits": rng.randint(0, 1),
                             "fmr_hits": 0, "n_te": 0, "te_hits": 0})
    pairs = pa.Table.from_pylist([{"document_set": "s", "propensity_run_id": "p", "attack_run_id": "c",
                                   "trace_id": "t"}])
    sets = pa.Table.from_pylist([{"document_set": "s", "doc_ix": d} for d in range(docs)])
    return pa.Table.from_pylist(rows), pairs, sets


def cpu(fn):
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--units", type=int, default=1000)
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--active", type=int, default=100)
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--no-peer", action="store_true", help="time only document_set_bootstrap (the peer resamples "
                                                            "every document: minutes at 10,000 x 10,000)")
    a = ap.parse_args()
    units, pairs, sets = synthetic(a.units, a.docs, a.active)
    fast, t_fast = cpu(lambda: marts.document_set_bootstrap(units, pairs, sets, a.resamples, 42, 0.95))
    print(f"units {a.units} x 2 runs, set of {a.docs} documents ({a.active} with counts), {a.resamples} resamples")
    print(f"document_set_bootstrap (counted documents resampled): {t_fast:.2f} CPU s, {fast.num_rows} rows")
    if a.no_peer:
        return
    # the peer: every document resampled (a zero row per document makes each one "counted")
    every = pa.Table.from_pylist([*units.to_pylist(), *({"document_set": "s", "run_id": "p", "trace_id": "t",
                                                         "unit_id": "u000000", "doc_ix": d, "n_ok": None,
                                                         "r20_hits": 0, "r50_hits": 0, "fmr_hits": 0, "n_te": 0,
                                                         "te_hits": 0} for d in range(a.docs))])
    slow, t_slow = cpu(lambda: marts.document_set_bootstrap(every, pairs, sets, a.resamples, 42, 0.95))
    key = lambda r: (-2 if r["doc_ix"] is None else r["doc_ix"], r["metric"])  # noqa: E731
    same = sorted(fast.to_pylist(), key=key) == sorted(slow.to_pylist(), key=key)
    print(f"peer, every document resampled:                       {t_slow:.2f} CPU s ({t_slow / t_fast:.1f}x); "
          f"identical rows: {same}")


if __name__ == "__main__":
    main()
