"""Why a mixture interval misses the documented share: the estimator, or the model? (issue 28)

    python benchmarks/mixture_interval_coverage.py --warehouse W [--run sandbox-default-neutral] [--n N]
        [--classifier sandbox-tfidf] [--seed 0]

On a warehouse where `lmaudit demo` ran: next to the demo's neutral run (the model's own samples), import a
*training sample*: N documents drawn uniformly from the sandbox's training corpus (so their expected domain
shares are the documented mixture, share of documents), each cut to the length of a randomly chosen generation
of the run, as a `mixture` run of the same model. Both runs are scored by the same classifier and estimated by
the same estimators with the same bootstrap (`lmaudit build`). If the intervals cover the documented shares on
the training sample but not on the generations, the estimators and their intervals are sound and the miss is
the model: its samples are not distributed like its training data (a label shift the classifier cannot see, or
text unlike any reference document) -- a bias that no resampling of generations and references measures.
Prints a markdown table for BENCHMARKS.md. Uses only the `lmaudit` command and the built marts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np


def lmaudit(warehouse: Path, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "ingest.cli.main", "--warehouse", str(warehouse), *args], check=True,
                   stdout=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warehouse", type=Path, required=True)
    ap.add_argument("--run", help="the neutral run (default: the only run whose id ends in -neutral)")
    ap.add_argument("--n", type=int, help="documents in the training sample (default: the run's size)")
    ap.add_argument("--classifier", default="sandbox-tfidf")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    db = a.warehouse / "lmaudit.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        runs = [r[0] for r in con.execute("select run_id from stg_runs where run_id like '%-neutral'").fetchall()]
        run = a.run or (runs[0] if len(runs) == 1 else sys.exit(f"give --run: neutral runs {runs}"))
        model, corpus_id = con.execute("select model, corpus_id from stg_runs where run_id = ?", [run]).fetchone()
        lengths = [len(t) for (t,) in con.execute("select text from stg_generations where run_id = ?",
                                                  [run]).fetchall()]
    corpus_file = Path(model).parent / "corpus" / "corpus.jsonl"
    docs = [json.loads(line) for line in corpus_file.read_text().splitlines()]
    rng = np.random.default_rng(a.seed)
    n = a.n or len(lengths)
    pick = rng.choice(len(docs), size=n, replace=False)
    cut = rng.choice(lengths, size=n, replace=True)
    sample = a.warehouse / f"{run}-training-sample.jsonl"
    with sample.open("w") as f:
        for i, c in zip(pick, cut):
            f.write(json.dumps({"text": docs[i]["text"][: max(int(c), 1)]}) + "\n")
    sample_run = f"{run}-training-sample"
    t0 = time.perf_counter()
    lmaudit(a.warehouse, "import", "generations", str(sample), "--run-id", sample_run, "--model", model,
            "--setting", "unconditional", "--purpose", "mixture")
    lmaudit(a.warehouse, "classify", "score", "--run", sample_run, "--classifier", a.classifier)
    lmaudit(a.warehouse, "build", "--select", "+fct_mixture_evaluation +fct_mixture_estimates")
    seconds = time.perf_counter() - t0
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("""
            select e.run_id, e.estimator,
                   count(*) filter (where d.weight between e.ci_low - 1e-9 and e.ci_high + 1e-9) as covered,
                   count(d.weight) as known, avg(e.ci_high - e.ci_low) as width, max(v.overlap_accuracy) as oa
            from fct_mixture_estimates e
            join stg_runs r on e.run_id = r.run_id
            left join int_mixtures_documented d on r.model = d.model and lower(e.domain) = lower(d.domain)
            left join fct_mixture_evaluation v
                on e.run_id = v.run_id and e.estimator = v.estimator and e.classifier_id = v.classifier_id
            where e.run_id in (?, ?) and e.ci_low is not null
            group by e.run_id, e.estimator order by e.estimator, e.run_id""", [run, sample_run]).fetchall()
    load = os.getloadavg()
    print(f"\n{run} ({len(lengths)} generations) vs {sample_run} ({n} training documents cut to generation "
          f"lengths); classifier {a.classifier}; load average {load[0]:.1f} {load[1]:.1f}; "
          f"import+score+build {seconds:.0f} s\n")
    print("| estimator | input | overlap accuracy % | intervals covering the documented share | mean width (points) |")
    print("|---|---|---|---|---|")
    for run_id, est, covered, known, width, oa in rows:
        what = "model's samples" if run_id == run else "training sample"
        print(f"| {est} | {what} | {'' if oa is None else f'{100 * oa:.1f}'} | {covered} of {known} | "
              f"{100 * width:.1f} |")


if __name__ == "__main__":
    main()
