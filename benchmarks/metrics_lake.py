"""Benchmark: `lmaudit build` of the PropMe marts on a synthetic paper-scale lake.

    python benchmarks/metrics_lake.py --warehouse /tmp/bench [--scale 1.0] [--skip-write] [--select ...]

Writes a lake shaped like the paper's (scale 1.0): 4 model-corpus pairs x 5 settings = 20 runs,
10,000 generations per run (prompt-free: 10,000 generations; prompted: 1,000 prompts x 10 samples), so
200,000 generations; ~25 maximal spans per generation (~5M spans, mostly 4-15 tokens, a heavy tail of
long spans, some repetition loops); ~13 kept spans per generation with up to 10 documents each (~20M
document rows); first-50 / whole counts for spans >= 50 tokens. Two models share the prefix and generic
prompts of their corpus (so paired differences have work to do). Then it times `lmaudit build` (the real
command, in a subprocess) and prints the per-model timings dbt recorded.

Not the real lake: document windows (`window_text`) and metadata are left NULL (20M windows of up to 5L
tokens would be ~100 GB; no model reads them), texts are random words.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ingest.lake import TABLES, Lake, text_hash  # noqa: E402

PAIRS = [("comma", "common_pile"), ("dfm", "common_pile"), ("dfm", "dynaword"), ("olmo3", "dolma3")]
SETTINGS = ["unconditional", "minimal_cue", "generic", "specific", "prefix"]
PROMPT_FREE = {"unconditional", "minimal_cue"}
CODE = "import os\nfrom x import y\ndef f(a):\n    return a + 1\nvalue = f(2);\n"
LOOP = "I'm sorry. "


def ids(prefix: str, start: int, n: int) -> pa.Array:
    """n distinct 32-character ids (vectorized)."""
    nums = pc.cast(pa.array(np.arange(start, start + n, dtype=np.int64)), pa.string())
    return pc.binary_join_element_wise(prefix, pc.utf8_lpad(nums, 31 - len(prefix) + 1, "0"), "")


def complete(table: str, t: pa.Table) -> pa.Table:
    """Add the contract's other columns as NULLs."""
    n = t.num_rows
    cols = {f.name: (t.column(f.name) if f.name in t.column_names else pa.nulls(n, f.type))
            for f in TABLES[table].schema}
    return pa.table(cols)


def words(rng: np.random.Generator, vocab: np.ndarray, n_words: np.ndarray) -> list[str]:
    """len(n_words) texts of n_words[i] random vocabulary words joined by spaces (joined in Arrow: the Python
    loop this replaced took most of an 8x lake's write time; the same draws give the same texts)."""
    # large_string: one 16x run's span texts pass 2 GB, past a plain utf8 array's 32-bit offsets
    flat = pa.array(vocab, pa.large_string()).take(pa.array(rng.integers(0, len(vocab), size=int(n_words.sum()))))
    offsets = pa.array(np.r_[0, np.cumsum(n_words)].astype(np.int64))
    return pc.binary_join(pa.LargeListArray.from_arrays(offsets, flat), pa.scalar(" ", pa.large_string())).to_pylist()


def write_run(lake: Lake, rng: np.random.Generator, vocab: np.ndarray, run_id: str, c: str, setting: str,
              n_gen_run: int, n_prompts: int, g0: int, s0: int, d0: int) -> tuple[int, int, int, int]:
    """One run's generations, spans, documents, counts and traced texts; returns (generations, spans,
    documents, counts) written."""
    n = n_gen_run
    if setting == "unconditional":
        prompt_ids = [None] * n
    elif setting == "minimal_cue":
        prompt_ids = [f"cue_{c}_{k % n_prompts:06d}" for k in range(n)]
    else:
        prompt_ids = [f"{setting}_{c}_{k // 10:06d}" for k in range(n)]
    gen_ids = ids("g", g0, n)
    n_words = rng.integers(120, 220, size=n)
    texts = words(rng, vocab, n_words)
    kind = rng.random(n)
    for i in np.flatnonzero(kind < 0.10):
        texts[i] = CODE * 4
    for i in np.flatnonzero(kind > 0.995):
        texts[i] = "|\n" * 300
    for i in np.flatnonzero((kind > 0.9) & (kind <= 0.9 + 0.02 * (setting == "prefix"))):
        texts[i] = "zz qq " + texts[i]
    n_tok = np.full(n, 256, dtype=np.int32)
    short = rng.random(n) < 0.1
    n_tok[short] = rng.integers(5, 256, size=int(short.sum()))
    lake.write("generations", run_id, complete("generations", pa.table({
        "generation_id": gen_ids, "run_id": pa.array([run_id] * n),
        "prompt_id": pa.array(prompt_ids, pa.string()),
        "sample_idx": pa.array(np.arange(n) % 10, pa.int32()), "seed": pa.array(42 + np.arange(n) % 10),
        "text": pa.array(texts), "n_tokens": pa.array(n_tok), "finish_reason": pa.array(["length"] * n)})))
    # spans: ~25 per generation, lengths mostly short, the longest drawn from a heavy tail
    per_gen = rng.poisson(25, size=n).clip(1, 60)
    total = int(per_gen.sum())
    gen_of = np.repeat(np.arange(n), per_gen)
    lengths = rng.integers(4, 16, size=total)
    first = np.concatenate([[0], np.cumsum(per_gen)[:-1]])
    tail = rng.random(n)
    longest = np.where(tail < 0.55, rng.integers(10, 20, n),
                       np.where(tail < 0.85, rng.integers(20, 50, n), rng.integers(50, 257, n)))
    lengths[first] = longest
    second = first[per_gen > 1] + 1
    lengths[second] = np.where(rng.random(second.size) < 0.3, rng.integers(20, 60, second.size),
                               lengths[second])
    is_full = np.zeros(total, dtype=bool)
    full_gen = rng.random(n) < 0.03
    is_full[first[full_gen]] = True
    lengths[first[full_gen]] = n_tok[full_gen]
    starts = np.minimum(np.arange(total) - np.repeat(first, per_gen), 200).astype(np.int32)
    span_ids = ids("s", s0, total)
    long_mask = lengths >= 20
    span_text = np.empty(total, dtype=object)
    span_text[~long_mask] = words(rng, vocab, np.maximum(lengths[~long_mask] // 2, 1))
    span_text[long_mask] = words(rng, vocab, (lengths[long_mask] * 0.8).astype(int))
    loops = np.flatnonzero(long_mask & (rng.random(total) < 0.03))
    span_text[loops] = [LOOP * max(3, int(x) // 4) for x in lengths[loops]]
    kept = np.zeros(total, dtype=bool)
    kept[rng.random(total) < 13 / 25] = True
    kept[first] = True
    lake.write("spans", run_id, complete("spans", pa.table({
        "span_id": span_ids, "trace_id": pa.array([f"trace_{c}"] * total),
        "generation_id": pc.take(gen_ids, pa.array(gen_of)), "start_tok": pa.array(starts),
        "end_tok": pa.array(starts + lengths.astype(np.int32)), "length": pa.array(lengths.astype(np.int32)),
        "count": pa.array(rng.integers(1, 1000, total)), "unigram_logprob": pa.array(-rng.random(total) * 50),
        "kept": pa.array(kept), "merged": pa.array(np.zeros(total, dtype=bool)), "is_full": pa.array(is_full),
        "text": pa.array(span_text.tolist(), pa.string())})))
    # documents: kept spans get 1-10 documents (~100 per generation)
    kept_idx = np.flatnonzero(kept)
    n_docs = rng.integers(5, 11, size=kept_idx.size)
    span_of_doc = np.repeat(kept_idx, n_docs)
    nd = span_of_doc.size
    tier = np.where(is_full[span_of_doc], "exact_full_raw", "partial")
    lake.write("span_documents", run_id, complete("span_documents", pa.table({
        "span_document_id": ids("d", d0, nd), "span_id": pc.take(span_ids, pa.array(span_of_doc)),
        "shard": pa.array(np.zeros(nd, dtype=np.int32)), "doc_ix": pa.array(rng.integers(0, 10**9, nd)),
        "match_tier": pa.array(tier), "nv_recall": pa.array(rng.random(nd) * (rng.random(nd) < 0.3))})))
    long_idx = np.flatnonzero(lengths >= 50)
    counts = rng.geometric(0.2, size=long_idx.size)
    lake.write("span_counts", run_id, complete("span_counts", pa.table({
        "span_id": pc.take(span_ids, pa.array(long_idx)), "first50_count": pa.array(counts),
        "whole_count": pa.array(np.maximum(1, counts // 2)),
        "trim_start": pa.array(np.zeros(long_idx.size, np.int32)),
        "trim_end": pa.array(np.zeros(long_idx.size, np.int32))})))
    # which texts the pass traced (their md5, as DuckDB computes it) and their index-token lengths
    lake.write("traced_generations", run_id, complete("traced_generations", pa.table({
        "traced_generation_id": ids("tg", g0, n), "trace_id": pa.array([f"trace_{c}"] * n),
        "generation_id": gen_ids, "text_hash": pa.array([text_hash(t) for t in texts]),
        "n_index_tokens": pa.array(n_tok)})))
    return n, total, nd, long_idx.size


def _vocab(rng: np.random.Generator) -> np.ndarray:
    return np.array(["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), size=rng.integers(2, 9)))
                     for _ in range(5000)])


def write(home: Path, scale: float, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    lake = Lake(home)
    lake.init()
    vocab = _vocab(rng)
    n_gen_run = max(10, int(10_000 * scale))
    n_prompts = max(1, n_gen_run // 10)
    corpora = sorted({c for _, c in PAIRS})
    lake.write("corpora", "bench", [{"corpus_id": c, "name": c} for c in corpora])
    lake.write("trace_runs", "bench", [{"trace_id": f"trace_{c}", "corpus_id": c, "mode": "mixed"} for c in corpora])
    prompts, runs = [], []
    for c in corpora:
        for s in ("generic", "specific", "prefix"):
            for k in range(n_prompts):
                prompts.append({"prompt_id": f"{s}_{c}_{k:06d}", "setting": s, "text": f"{s} {c} {k}",
                                "corpus_id": c, "true_continuation": "zz qq" if s == "prefix" else None})
        for k in range(n_prompts):
            prompts.append({"prompt_id": f"cue_{c}_{k:06d}", "setting": "minimal_cue", "text": f"Cue{k}",
                            "corpus_id": c})
    lake.write("prompts", "bench", prompts)
    totals = {"generations": 0, "spans": 0, "span_documents": 0, "span_counts": 0}
    g0 = s0 = d0 = 0
    for m, c in PAIRS:
        for setting in SETTINGS:
            run_id = f"{m}__{c}__{setting}"
            runs.append({"run_id": run_id, "model": m, "corpus_id": c, "setting": setting, "n_samples": 10})
            n, total, nd, n_counts = write_run(lake, rng, vocab, run_id, c, setting, n_gen_run, n_prompts,
                                               g0, s0, d0)
            g0, s0, d0 = g0 + n, s0 + total, d0 + nd
            totals["generations"] += n
            totals["spans"] += total
            totals["span_documents"] += nd
            totals["span_counts"] += n_counts
            print(f"  {run_id}: {n} generations, {total} spans, {nd} documents", flush=True)
    lake.write("runs", "bench", runs)
    # comma and dfm on common_pile share their prompted settings' prompts (prompt ids depend on setting and
    # corpus only): fct_run_differences pairs them
    return totals


# the id columns of a doubled lake's copy: the first character of a generated id ("g", "s", "d", "tg") is
# upper-cased (same length, never an original id); prompt ids get a suffix
_COPY_IDS = {"generations": ("generation_id",), "spans": ("span_id", "generation_id"),
             "span_documents": ("span_document_id", "span_id"), "span_counts": ("span_id",),
             "traced_generations": ("traced_generation_id", "generation_id")}
PER_RUN = tuple(_COPY_IDS)


def _copy_ids(table: str, t: pa.Table) -> pa.Table:
    for col in _COPY_IDS.get(table, ()):
        c = t.column(col)
        t = t.set_column(t.column_names.index(col), col,
                         pc.binary_join_element_wise(pc.utf8_upper(pc.utf8_slice_codeunits(c, 0, 1)),
                                                     pc.utf8_slice_codeunits(c, 1), ""))
    if "prompt_id" in t.column_names:
        i = t.column_names.index("prompt_id")
        t = t.set_column(i, "prompt_id", pc.binary_join_element_wise(t.column(i), "_2", ""))
    return t


def double(src: Path, home: Path) -> dict:
    """A lake of twice the scale from a written one, in a fraction of the writer's time: every file of `src`
    hard-linked, plus a copy of each run's generations (with their spans, documents, counts and traced texts)
    and of the prompted settings' prompts under new ids, in partitions `<run>--copy` (a copy's spans and
    documents stay in same-named partitions, as the tracer writes them). So each run has twice the generations
    and its prompted settings twice the prompts (10 samples each), as `write(home, 2 * scale)` would give;
    only the texts repeat, which no model's cost depends on."""
    import pyarrow.parquet as pq

    src_lake, lake = Lake(src), Lake(home)
    lake.init()
    for f in src_lake.root.rglob("*"):  # data, schema and manifest files
        if f.is_file() and "_tmp" not in f.parts:
            dst = lake.root / f.relative_to(src_lake.root)
            dst.parent.mkdir(parents=True, exist_ok=True)
            if not dst.exists():
                os.link(f, dst)
    totals = {"generations": 0, "spans": 0, "span_documents": 0, "span_counts": 0}
    prompts = pq.read_table(src_lake.partition_path("prompts", "bench"))
    lake.write("prompts", "bench-copy", _copy_ids("prompts", prompts))
    for part in sorted(src_lake.partitions("generations")):
        for table in PER_RUN:
            t = pq.read_table(src_lake.partition_path(table, part))
            lake.write(table, f"{part}--copy", complete(table, _copy_ids(table, t)))
            if table in totals:
                totals[table] += 2 * t.num_rows
        print(f"  {part}: copied", flush=True)
    return totals


def add_run(home: Path, scale: float, seed: int = 1) -> str:
    """One more prefix run (a new model on common_pile, the corpus's existing prompts and trace): what an
    hourly build finds after one new run. Ids start far above the first write's."""
    rng = np.random.default_rng(seed)
    lake = Lake(home)
    n_gen_run = max(10, int(10_000 * scale))
    run_id = f"extra{seed}__common_pile__prefix"
    n, total, nd, _ = write_run(lake, rng, _vocab(rng), run_id, "common_pile", "prefix", n_gen_run,
                                max(1, n_gen_run // 10), 10**12 * seed, 10**13 * seed, 10**14 * seed)
    lake.write("runs", f"bench-{run_id}", [{"run_id": run_id, "model": f"extra{seed}", "corpus_id": "common_pile",
                                           "setting": "prefix", "n_samples": 10}])
    print(f"  added {run_id}: {n} generations, {total} spans, {nd} documents", flush=True)
    return run_id


def timed_build(home: Path, args: argparse.Namespace, label: str, full_refresh: bool = False) -> int:
    """`lmaudit build` in a subprocess: wall and CPU seconds, load average, dbt's slowest nodes; returns the
    build's exit status (the caller stops on a failure, so a failed build never reads as a measurement)."""
    cmd = [sys.executable, "-m", "ingest.cli.main", "--warehouse", str(home), "build"]
    for sel in args.select or ():
        cmd += ["--select", sel]
    if args.vars:
        cmd += ["--vars", args.vars]
    if full_refresh:
        cmd.append("--full-refresh")
    if args.full_tests:
        cmd.append("--full-tests")
    load = os.getloadavg()[0]
    t = time.perf_counter()
    before = os.times()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    wall = time.perf_counter() - t
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    print(proc.stdout.strip(), proc.stderr.strip()[-2000:], sep="\n")
    print(f"{label}: {wall:.1f}s wall, {cpu:.1f}s CPU (user+sys), exit {proc.returncode}, "
          f"load average before {load:.2f}, after {os.getloadavg()[0]:.2f}")
    run_results = home / "dbt" / "target" / "run_results.json"
    if run_results.exists():
        res = json.loads(run_results.read_text())["results"]
        top = sorted(res, key=lambda r: -r["execution_time"])[:25]
        for r in top:
            print(f"  {r['execution_time']:7.2f}s  {r['unique_id']}")
    return proc.returncode


def _check(rc: int, label: str) -> None:
    """Exit non-zero with one line when a step failed."""
    if rc != 0:
        print(f"error: {label} failed (exit {rc}); its output is above", file=sys.stderr)
        sys.exit(1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--skip-write", action="store_true")
    ap.add_argument("--double-from", default=None, metavar="WAREHOUSE",
                    help="instead of writing a lake, make one of twice that warehouse's scale from its lake (double())")
    ap.add_argument("--write-only", action="store_true", help="write (or double) the lake, build nothing")
    ap.add_argument("--vars", default=None)
    ap.add_argument("--select", nargs="*", default=None)
    ap.add_argument("--propme-only", action="store_true",
                    help="build only the PropMe models and their staging inputs (with all their tests)")
    ap.add_argument("--add-run", action="store_true",
                    help="after the build, add one run to the lake and time an (incremental) build again")
    ap.add_argument("--full-refresh", action="store_true", help="pass --full-refresh to the first build")
    ap.add_argument("--full-tests", action="store_true",
                    help="pass --full-tests (unit tests and the full-scan key tests, as CI runs them) to every build")
    args = ap.parse_args()
    home = Path(args.warehouse).resolve()
    if args.double_from:
        t = time.perf_counter()
        totals = double(Path(args.double_from).resolve(), home)
        print(f"lake written in {time.perf_counter() - t:.1f}s: {json.dumps(totals)}")
    elif not args.skip_write:
        t = time.perf_counter()
        totals = write(home, args.scale)
        print(f"lake written in {time.perf_counter() - t:.1f}s: {json.dumps(totals)}")
    if args.write_only:
        return
    if args.propme_only:
        args.select = ["+fct_setting_metrics", "+fct_propensity", "+fct_run_differences", "+fct_duplication",
                       "stg_corpora"]
    _check(timed_build(home, args, "lmaudit build", full_refresh=args.full_refresh), "lmaudit build")
    if args.add_run:
        existing = sum(1 for p in Lake(home).partitions("runs") if p.startswith("bench-extra"))
        add_run(home, args.scale, seed=existing + 1)
        _check(timed_build(home, args, "lmaudit build after adding one run"), "lmaudit build after adding one run")


if __name__ == "__main__":
    main()
