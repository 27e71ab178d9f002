"""Benchmark: what one added run costs an incremental `lmaudit build`, against the build with nothing to do.

    python benchmarks/add_one_run.py --warehouse /tmp/bench1 [--scale 1.0] [--skip-write] [--rounds 2]
        [--memory-limit 6GB] [--propme-only] [--out add_one_run.json]

On a synthetic lake of `benchmarks/metrics_lake.py` (paper scale at 1.0: 20 runs, 200,000 generations, 20M
document rows): a first build if the warehouse has none, then per round a build with nothing changed (dbt's own
floor for this project: parse, compile, one query per node, the incremental models finding that nothing changed)
and a build after one more prefix run (10,000 generations at scale 1, ~250,000 spans, ~1M document rows, its
trace). Every build is the real command in a child process under `/usr/bin/time -v`: wall, CPU (user + sys),
peak RSS, the load average before and after. The peer is the no-change build of the same round; the figure is
added / floor (issue 32's goal: at most 2x). `--propme-only` builds the PropMe models and their inputs (with their
tests) in every build, as `metrics_lake.py --propme-only`: the project's other marts (provenance, audit, explore)
were not incremental and dominated a whole-project build on a big lake. `--classifier` also writes a scored
classifier (benchmarks/classifier_lake.py: 2,000 reference documents, a posterior for every generation, and for
the added run's), so the mixture models (posteriors, per-run bootstraps of 8 estimators) cost what they cost on a
scored lake.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))


# the PropMe marts and everything they read (benchmarks/metrics_lake.py --propme-only)
PROPME_SELECT = ["+fct_setting_metrics", "+fct_propensity", "+fct_run_differences", "+fct_duplication",
                 "+fct_cumulative_filters", "+fct_long_match_categories", "+fct_independent_run_differences",
                 "stg_corpora"]


def timed_build(home: Path, args: list[str] = (), memory_limit: str | None = None) -> dict:
    """`lmaudit build` in a child process under /usr/bin/time -v: wall, CPU, peak RSS (MB), load averages,
    dbt's slowest nodes."""
    cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "ingest.cli.main", "--warehouse", str(home), "build", *args]
    env = {**os.environ, "COLUMNS": "200"}
    if memory_limit:
        env["LMAUDIT_MEMORY_LIMIT"] = memory_limit
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    err = proc.stderr

    def field(name: str) -> float:
        m = re.search(rf"{re.escape(name)}: ([0-9.]+)", err)
        return float(m.group(1)) if m else float("nan")

    out = {"args": list(args), "exit": proc.returncode, "wall_s": round(wall, 1),
           "cpu_s": round(field("User time (seconds)") + field("System time (seconds)"), 1),
           "peak_rss_mb": round(field("Maximum resident set size (kbytes)") / 1024),
           "memory_limit": memory_limit or "default", "load_before": " ".join(load_before),
           "load_after": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
           "summary": next((ln for ln in (proc.stdout + err).splitlines() if "dbt build" in ln), "")}
    if proc.returncode != 0:
        out["tail"] = (proc.stdout + err)[-3000:]
    results = home / "dbt" / "target" / "run_results.json"
    if results.exists():
        res = json.loads(results.read_text())["results"]
        out["slowest"] = [(r["unique_id"].split(".")[-1], round(r["execution_time"], 2))
                          for r in sorted(res, key=lambda r: -r["execution_time"])[:12]]
    return out


def _words_compat(metrics_lake) -> None:
    """metrics_lake.words joins with a plain-string separator, which pyarrow 26 refuses for large_string lists
    (ArrowNotImplementedError: binary_join has no kernel...); the same join with a large_string separator gives
    the same texts from the same draws. metrics_lake.py belongs to another piece of work: patched here only."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    def words(rng: np.random.Generator, vocab: np.ndarray, n_words: np.ndarray) -> list[str]:
        flat = pa.array(vocab, pa.large_string()).take(pa.array(rng.integers(0, len(vocab), size=int(n_words.sum()))))
        offsets = pa.array(np.r_[0, np.cumsum(n_words)].astype(np.int64))
        return pc.binary_join(pa.LargeListArray.from_arrays(offsets, flat),
                              pa.scalar(" ", pa.large_string())).to_pylist()

    try:
        metrics_lake.words(np.random.default_rng(0), np.array(["a"]), np.array([1]))
    except NotImplementedError:
        metrics_lake.words = words


def main() -> None:
    import metrics_lake
    _words_compat(metrics_lake)
    from ingest.home import db_path
    from ingest.lake import Lake

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--skip-write", action="store_true", help="the warehouse already holds the lake")
    ap.add_argument("--rounds", type=int, default=1, help="(nothing to do, one added run) pairs")
    ap.add_argument("--memory-limit", default=None, help="$LMAUDIT_MEMORY_LIMIT for every build")
    ap.add_argument("--propme-only", action="store_true", help="build only the PropMe models (metrics_lake.py's set)")
    ap.add_argument("--classifier", action="store_true",
                    help="write a scored classifier too (benchmarks/classifier_lake.py), and score the added run")
    ap.add_argument("--out", default=None, help="append the results as one JSON line to this file")
    a = ap.parse_args()
    args = [x for sel in PROPME_SELECT for x in ("--select", sel)] if a.propme_only else []
    home = Path(a.warehouse).resolve()
    if not a.skip_write:
        t = time.perf_counter()
        totals = metrics_lake.write(home, a.scale)
        print(f"lake written in {time.perf_counter() - t:.1f}s: {json.dumps(totals)}", flush=True)
        if a.classifier:
            import classifier_lake

            t = time.perf_counter()
            classifier_lake.write_classifier(str(home))
            n = classifier_lake.score_runs(str(home))
            print(f"classifier written in {time.perf_counter() - t:.1f}s: {n} generation posteriors", flush=True)
    record = {"scale": a.scale, "propme_only": a.propme_only, "classifier": a.classifier, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rounds": []}
    if not db_path(home).exists():
        record["first_build"] = timed_build(home, args, memory_limit=a.memory_limit)
        print("first build:", json.dumps(record["first_build"]), flush=True)
    for _ in range(a.rounds):
        floor = timed_build(home, args, memory_limit=a.memory_limit)
        print("nothing to do:", json.dumps(floor), flush=True)
        existing = sum(1 for p in Lake(home).partitions("runs") if p.startswith("bench-extra"))
        run_id = metrics_lake.add_run(home, a.scale, seed=existing + 1)
        if a.classifier:
            import classifier_lake

            classifier_lake.score_runs(str(home), [run_id])
        added = timed_build(home, args, memory_limit=a.memory_limit)
        print("one added run:", json.dumps(added), flush=True)
        ratio = {"wall": round(added["wall_s"] / floor["wall_s"], 2), "cpu": round(added["cpu_s"] / floor["cpu_s"], 2)}
        record["rounds"].append({"nothing_to_do": floor, "one_added_run": added, "ratio": ratio})
        print(f"one added run / nothing to do: {ratio['wall']}x wall, {ratio['cpu']}x CPU "
              f"({added['wall_s']} s / {floor['wall_s']} s wall, {added['cpu_s']} / {floor['cpu_s']} CPU s)", flush=True)
    if a.out:
        with open(a.out, "a") as fh:
            fh.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
