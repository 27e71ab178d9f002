"""The same model, the same generations, two indexes of the same corpus: one in the model's own tokenizer
(byte-level BPE, `Ġ` word starts) and one Llama-2 style (byte fallback, `▁` word starts), as PropMe traces
OLMo/Pythia against Llama-2-tokenized indexes.

    python benchmarks/two_index.py --warehouse /tmp/w2 [--size tiny]

Runs `lmaudit demo --size SIZE` (cached when the warehouse already has it), registers the llama-style index
of the same sandbox corpus, traces every PropMe run of the demo against it too, builds, and prints, per run and
metric, the value and bootstrap interval under each index, whether the intervals overlap, and whether the
sandbox's canary is traced at full length under each index. Lengths are in each index's own tokens, so span
lengths (ALS) differ by the tokenizers' lengths for the same text; FMR/FMR20/R20/R50 thresholds are also in
index tokens. A markdown table for BENCHMARKS.md, with the load average.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

METRICS = ("fmr", "fmr20", "fmr50", "r20", "r50", "nvr", "als")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warehouse", type=Path, required=True)
    ap.add_argument("--size", default="tiny")
    args = ap.parse_args()

    import duckdb

    from ingest.build import build
    from ingest.corpora import corpus_id_for, corpus_row
    from ingest.demo import run_demo
    from ingest.home import db_path
    from ingest.lake import Lake
    from ingest.lake.runs import run_texts
    from ingest.sandbox.register import build_and_register
    from ingest.trace.params import TraceParams
    from ingest.trace.run import TraceJob, trace_generations

    home = args.warehouse
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    out = run_demo(home, args.size, progress=False)
    lake = Lake(home)
    paths, llama = build_and_register(lake, home, args.size, progress=False, index_tokenizer="llama-style")
    job = TraceJob(tuple(corpus_row(lake, llama)["index_dirs"]), TraceParams())
    runs = [r for r in out["runs"] if not r.endswith("-neutral")]
    for rid in runs:
        trace_generations(lake, job, run_texts(lake, rid), f"run:{rid}", corpus_id=corpus_id_for(llama),
                          progress=False)
    res = build(home, progress=False)
    if not res.success:
        raise SystemExit(f"build failed: {res.failures[:3]}")
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0

    con = duckdb.connect(str(db_path(home)), read_only=True)
    rows = con.execute(f"""
        select m.run_id, m.metric, t.trace_corpus_id = '{corpus_id_for(llama)}' as llama,
               m.value, m.ci_low, m.ci_high
        from fct_setting_metrics as m
        inner join int_run_traces as t on m.run_id = t.run_id and m.trace_id = t.trace_id
        where m.metric in {METRICS} and m.run_id in {tuple(runs)}
    """).fetchall()
    canary = paths.canary_text.strip()
    # generations that reproduce canary text (their whole text lies inside the canary), and among them those
    # traced at full length: one span covering the whole generation
    full = {k: (n, f) for k, n, f in con.execute(f"""
        with canary_gens as (
            select g.generation_id, g.run_id, trim(g.text) as text
            from stg_generations as g
            where g.run_id in {tuple(runs)} and length(trim(g.text)) >= 50 and contains(?, trim(g.text))
        )
        select t.trace_corpus_id = '{corpus_id_for(llama)}', count(distinct c.generation_id),
               count(distinct c.generation_id) filter (where trim(s.text) = c.text)
        from canary_gens as c
        inner join int_run_traces as t on c.run_id = t.run_id
        left join stg_spans as s on s.generation_id = c.generation_id and s.trace_id = t.trace_id
        group by 1
    """, [canary]).fetchall()}
    toks = con.execute(f"""
        select t.trace_corpus_id = '{corpus_id_for(llama)}', max(s.length)
        from stg_spans as s inner join int_run_traces as t on s.trace_id = t.trace_id
        where t.run_id in {tuple(runs)} group by 1
    """).fetchall()
    con.close()

    by = {}
    for run, metric, is_llama, v, lo, hi in rows:
        by.setdefault((run, metric), {})[bool(is_llama)] = (v, lo, hi)
    fmt = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
    print(f"two indexes, one model ({args.size} sandbox); {wall:.0f} s wall, {cpu:.0f} CPU-s in this process; "
          f"load average {os.getloadavg()[0]:.1f}")
    print("\n| run | metric | model-tokenizer index [95% CI] | llama-style index [95% CI] | intervals overlap |")
    print("|---|---|---|---|---|")
    n_overlap = n = 0
    for (run, metric), d in sorted(by.items()):
        if True not in d or False not in d:
            continue
        (a, alo, ahi), (b, blo, bhi) = d[False], d[True]
        ok = None if None in (alo, ahi, blo, bhi) else not (ahi < blo or bhi < alo)
        n += ok is not None
        n_overlap += bool(ok)
        print(f"| {run} | {metric} | {fmt(a)} [{fmt(alo)}, {fmt(ahi)}] | {fmt(b)} [{fmt(blo)}, {fmt(bhi)}] | "
              f"{'yes' if ok else 'NO' if ok is not None else '-'} |")
    print(f"\nintervals overlap in {n_overlap} of {n} (run, metric) pairs")
    for k, label in ((False, "model-tokenizer"), (True, "llama-style")):
        n_c, n_f = full.get(k, (0, 0))
        print(f"{label} index: {n_f} of {n_c} generations that reproduce canary text are traced at full length "
              "(one span = the whole generation)")
    print("longest span (index tokens): " + ", ".join(f"{'llama-style' if k else 'model-tokenizer'} {v}"
                                                      for k, v in toks))


if __name__ == "__main__":
    main()
