"""Benchmark: the trace explorer on a paper-scale warehouse (200,000 generations).

    python benchmarks/metrics_lake.py --warehouse /tmp/bench --propme-only --vars '{propme_bootstrap_resamples: 200}'
    python benchmarks/explore_bench.py --warehouse /tmp/bench [--static-run RUN]

Times, through the real server on 127.0.0.1 (JSON encoding and HTTP included): start-up (the per-generation
summary), the runs list, pages of the generations table under each sort and filter (first and last page),
generation pages and span documents of randomly chosen generations; then the static export of one run
(`--out`), whose time and size scale with the number of generations. Prints medians and sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ingest.explore.queries import Explorer  # noqa: E402
from ingest.explore.server import make_server  # noqa: E402
from ingest.explore.static import write_static  # noqa: E402


def timed_get(url: str, as_json: bool = True) -> tuple[float, int, dict | None]:
    t = time.perf_counter()
    with urllib.request.urlopen(url) as r:
        body = r.read()
    return time.perf_counter() - t, len(body), json.loads(body) if as_json else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--static-run", default=None, help="run for the static export (default: the first)")
    ap.add_argument("--samples", type=int, default=20)
    args = ap.parse_args()
    home = Path(args.warehouse).resolve()
    print(f"load average {os.getloadavg()[0]:.1f}")
    t = time.perf_counter()
    ex = Explorer(home)
    print(f"start-up (summary of every generation): {time.perf_counter() - t:.2f}s, "
          f"max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    server = make_server(ex, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    dt, n, runs = timed_get(base + "api/runs")
    print(f"runs: {len(runs['runs'])} runs, {sum(r['n_generations'] for r in runs['runs'])} generations "
          f"({dt * 1000:.0f} ms, {n} bytes; computed once at start)")
    dt, n, _ = timed_get(base, as_json=False)
    print(f"page: {n} bytes")
    run0 = runs["runs"][0]["run_id"]
    queries = {
        "longest span, first page": "sort=longest_span&desc=1&page=0",
        "longest span, last page": "sort=longest_span&desc=1&page=3999",
        "nv-recall, first page": "sort=nv_recall&desc=1",
        "position, page 2000": "sort=position&desc=0&page=2000",
        "one run, by longest": f"run={run0}&sort=longest_span",
        "setting prefix + full match": "setting=prefix&full=yes",
        "longest >= 50 and nv-recall >= 0.5": "min_longest=50&min_nvr=0.5",
    }
    for name, q in queries.items():
        times, size, total = [], 0, 0
        for _ in range(5):
            dt, size, body = timed_get(base + "api/generations?" + q)
            times.append(dt)
            total = body["total"]
        print(f"generations [{name}]: median {statistics.median(times) * 1000:.0f} ms, {size} bytes, "
              f"{total} matching")
    rng = random.Random(0)
    ids = [r[0] for r in ex.con.execute("select generation_id from explore_generations "
                                        "using sample reservoir(200 rows) repeatable (1)").fetchall()]
    gen_t, span_t, sizes = [], [], []
    for gid in rng.sample(ids, min(args.samples, len(ids))):
        dt, n, g = timed_get(base + "api/generation?id=" + gid)
        gen_t.append(dt)
        sizes.append(n)
        with_docs = [s for s in g["spans"] if s["n_docs"]]
        if with_docs:
            dt, _, _ = timed_get(base + "api/span?id=" + rng.choice(with_docs)["span_id"])
            span_t.append(dt)
    print(f"generation page: median {statistics.median(gen_t) * 1000:.0f} ms (max {max(gen_t) * 1000:.0f}), "
          f"median {statistics.median(sizes)} bytes; span documents: median {statistics.median(span_t) * 1000:.0f} ms "
          f"(max {max(span_t) * 1000:.0f}) over {len(span_t)} spans")
    server.shutdown()
    ex.close()
    run = args.static_run or run0
    ex = Explorer(home, (run,))
    with tempfile.TemporaryDirectory() as tmp:
        res = write_static(ex, Path(tmp) / "site")
    ex.close()
    print(f"static export of {run}: {res.n_generations} generations, {res.n_files} files, "
          f"{res.n_bytes / 1e6:.1f} MB, {res.seconds:.1f}s "
          f"({res.seconds / max(1, res.n_generations) * 1e3:.2f} ms per generation)")
    print(f"max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB, "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
