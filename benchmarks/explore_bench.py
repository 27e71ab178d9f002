"""Benchmark: the trace explorer on a paper-scale warehouse (200,000 generations).

    python benchmarks/metrics_lake.py --warehouse /tmp/bench --propme-only --vars '{propme_bootstrap_resamples: 200}'
    python benchmarks/explore_bench.py --warehouse /tmp/bench [--static-run RUN]
    python benchmarks/explore_bench.py --warehouse /tmp/bench --startup-only --old SRC [--rounds 5]

Times, through the real server on 127.0.0.1 (JSON encoding and HTTP included): start-up (the per-generation
summary), the runs list, pages of the generations table under each sort and filter (first and last page),
generation pages and span documents of randomly chosen generations; then the static export of one run
(`--out`), whose time and size scale with the number of generations. Prints medians and sizes.

`--startup-only --old SRC`: only the start-up (`Explorer(home)`), of this code and of another checkout
(e.g. `git worktree add /tmp/old <commit>`: before issue 32 the start-up aggregated every retrieved
document's domain), each in a fresh child process, alternating, `--rounds` times; wall and CPU seconds and
peak RSS of each (the warehouse must hold what both read: build it with this code).
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


def _startup_child(src: str, home: str) -> None:
    """Time `Explorer(home)` with `ingest` imported from `src`; one JSON line."""
    for m in [m for m in sys.modules if m == "ingest" or m.startswith("ingest.")]:
        del sys.modules[m]
    sys.path.insert(0, src)
    from ingest.explore.queries import Explorer as E

    t, c = time.perf_counter(), time.process_time()
    ex = E(Path(home))
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    (n,) = ex.con.execute("select count(*) from explore_generations").fetchone()
    digest = ex.con.execute("select md5(string_agg(concat_ws('|', ordinal, generation_id, run_id, model, setting, "
                            "trace_id, is_traced, n_tokens, n_spans, longest_span, nv_recall, full_match, "
                            "full_match_raw, is_blank, domain, preview), '\n' order by ordinal)) "
                            "from explore_generations").fetchone()[0]
    ex.close()
    print(json.dumps({"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "rows": n, "digest": digest,
                      "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}))


def startup_ab(home: Path, old: Path, rounds: int) -> None:
    import subprocess

    trees = {"old": str(old.resolve()), "new": str(REPO)}
    res: dict = {"old": [], "new": []}
    loads = [os.getloadavg()]
    for r in range(rounds):
        for which in (("old", "new") if r % 2 == 0 else ("new", "old")):
            p = subprocess.run([sys.executable, __file__, "--startup-child", trees[which], str(home)],
                               capture_output=True, text=True)
            if p.returncode:
                raise SystemExit(f"{which} failed: {p.stderr[-2000:]}")
            res[which].append(json.loads(p.stdout.strip().splitlines()[-1]))
        loads.append(os.getloadavg())
    for which, rs in res.items():
        print(f"{which}: start-up median {statistics.median(x['wall_s'] for x in rs):.2f}s wall "
              f"(all: {', '.join(str(x['wall_s']) for x in rs)}), {statistics.median(x['cpu_s'] for x in rs):.2f}s CPU, "
              f"peak RSS {statistics.median(x['max_rss_mb'] for x in rs):.0f} MB, {rs[0]['rows']} rows, "
              f"digest {rs[0]['digest'][:12]}")
    same = {x["digest"] for rs in res.values() for x in rs}
    print(f"same rows: {len(same) == 1}; load averages {[[round(v, 2) for v in lo] for lo in loads]}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--startup-child":
        _startup_child(sys.argv[2], sys.argv[3])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--static-run", default=None, help="run for the static export (default: the first)")
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--startup-only", action="store_true", help="only start-up, this code vs --old")
    ap.add_argument("--old", type=Path, help="--startup-only: a checkout of the code to compare with")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    home = Path(args.warehouse).resolve()
    if args.startup_only:
        if not args.old:
            ap.error("--startup-only needs --old")
        startup_ab(home, args.old, args.rounds)
        return
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
