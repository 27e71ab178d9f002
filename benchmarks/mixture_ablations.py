"""LLMSurgeon's ablations on the sandbox, as the documented commands run them (issue 26 items 4-5).

    python benchmarks/mixture_ablations.py --warehouse DIR [--size tiny] [--domain headers]
        [--shares 0,0.05,0.1,0.2] [--model PATH --corpus C]

1. Table 9: `lmaudit mixture inject` (one tiny model per share of the injected domain, one frozen TF-IDF
   classifier), then checks that the estimated share of the injected domain rises with the true share for
   pacc and direct (the paper's claim: "a monotonically increasing estimate"). Too slow for the test suite
   (one 1200-step model per share: 3-4 minutes each on 2 busy cores), so it is checked here; exit status 1
   when it is not monotonic (every study in the warehouse is checked).
2. With --model and --corpus, Tables 3 and 4 on that model: `lmaudit mixture sweep --axis backend=tfidf,
   transformer --axis reference=25,50,100`.

Prints markdown tables for BENCHMARKS.md ("Mixture ablations as commands") from fct_mixture_sweeps.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb


def lmaudit(home: Path, *args: str) -> float:
    t = time.perf_counter()
    env = dict(os.environ, LMAUDIT_HOME=str(home))
    subprocess.run([sys.executable, "-m", "ingest.cli.main", *args], check=True, env=env)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warehouse", type=Path, required=True)
    ap.add_argument("--size", default="tiny")
    ap.add_argument("--domain", default="boilerplate")
    ap.add_argument("--shares", default="0,0.05,0.1,0.2")
    ap.add_argument("--model")
    ap.add_argument("--corpus")
    a = ap.parse_args()
    home = a.warehouse.resolve()
    timings = {"inject": lmaudit(home, "mixture", "inject", "--domain", a.domain, "--shares", a.shares,
                                 "--size", a.size)}
    if a.model:
        timings["sweep"] = lmaudit(home, "mixture", "sweep", "--model", a.model, "--corpus", a.corpus,
                                   "--axis", "backend=tfidf,transformer", "--axis", "reference=25,50,100")
    timings["build"] = lmaudit(home, "build", "--select", "stg_mixture_sweeps", "--select", "fct_mixture_sweeps")
    from ingest.home import db_path

    ok = True
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        rows = con.execute("select study, estimator, value_num, target_truth, target_estimate, target_accuracy, "
                           "overlap_accuracy from fct_mixture_sweeps where axis = 'inject' "
                           "order by study, estimator, value_num").fetchall()
        for study in sorted({r[0] for r in rows}):
            rs_study = [r[1:] for r in rows if r[0] == study]
            shares = sorted({r[1] for r in rs_study})
            print(f"\nTable 9, study {study} (true share of documents -> estimate, accuracy 100 - |diff|, "
                  "overall overlap accuracy):\n")
            print("| estimator | " + " | ".join(f"{100 * v:g} %" for v in shares) + " | monotonic |")
            print("|---|" + "---|" * (len(shares) + 1))
            for est in sorted({r[0] for r in rs_study}):
                rs = [r for r in rs_study if r[0] == est]
                mono = all(y[3] >= x[3] - 1e-9 for x, y in zip(rs, rs[1:]))
                ok &= mono or est not in ("pacc", "direct")
                print(f"| {est} | " + " | ".join(f"{100 * r[2]:.1f} -> {100 * r[3]:.1f} ({100 * r[4]:.1f}; OA "
                                                 f"{100 * r[5]:.1f})" for r in rs) + f" | {'yes' if mono else 'no'} |")
        for axis in ("backend", "reference"):
            got = con.execute("select value, value_num, estimator, overlap_accuracy, oof_accuracy, seconds "
                              "from fct_mixture_sweeps where axis = ? and estimator in ('pacc', 'direct', 'emq') "
                              "order by value_num, value, estimator", [axis]).fetchall()
            if got:
                print(f"\n{axis}: value | estimator | OA % | classifier out-of-fold accuracy | seconds")
                for v, _n, e, oa, acc, s in got:
                    print(f"| {v} | {e} | {100 * oa:.1f} | {acc:.3f} | {s:.0f} |")
    print("\ntimings (s): " + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()))
    if not ok:
        raise SystemExit("the estimate of the injected share is not monotonic in the true share (pacc or direct)")


if __name__ == "__main__":
    main()
