"""Benchmark: how cost grows with the work (issue 19, item 6).

    python benchmarks/cost_growth.py trace --mb 32 320 [--n 40] [--out /tmp/growth]   # indexes of ~10M, ~100M tokens
    python benchmarks/cost_growth.py build-log --scale 0.25 --log S.log --time S.time [--lake-log L.log]
        [--memory-limit 6GB] [--label limited] [--spill-log P.log] [--run-results R.json] [--out /tmp/growth]
    python benchmarks/cost_growth.py plot [--out /tmp/growth] [--png benchmarks/cost_growth.png]

`trace`: corpora that are prefixes of one another (the venv's and the standard library's Python files in the
hash order of benchmarks/trace_bench_data.py, no file repeated), one byte-level BPE tokenizer (8192 tokens,
trained on the first 40 MB of the largest), an index of each built by `ingest.index.build_index` in a child
process (wall, CPU of the process and its children, peak RSS), then the same traced set against every index:
five input classes of benchmarks/trace_bench.py (verbatim, edited, stitched, shuffled, respaced; 256 tokens)
cut from the smallest index, whose documents every larger index also holds. Tracing runs single-threaded in a
child process (what one `lmaudit trace` worker does): wall, CPU, peak RSS, generations per CPU second.

`build-log`: reads one `benchmarks/metrics_lake.py --scale S` run (its log and `/usr/bin/time -v` output) into
the results (peak RSS there is the largest process of the run: the lake writer or the dbt build). With
`--skip-write` the lake's line ("lake written in ...") comes from the writer's own log (`--lake-log`); builds
under a memory budget (`$LMAUDIT_MEMORY_LIMIT`, issue 32) are recorded with `--memory-limit` and a `--label`, so
the unbounded and the bounded series stay apart (the key is label and scale). `--spill-log` reads a sampler's
lines (`HH:MM:SS <spill folder bytes> <load 1 5 15> [<database bytes>]`) for the largest spill, the load during the
build and the database's size; `--run-results` (dbt's run_results.json of the build) keeps the slowest nodes.

`plot`: a log-log figure of time against work for both parts, with a line of slope 1 through the smallest
point (linear growth).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _results(out: Path) -> dict:
    f = out / "cost_growth.json"
    return json.loads(f.read_text()) if f.exists() else {"trace": {}, "build": {}}


def _save(out: Path, res: dict) -> None:
    (out / "cost_growth.json").write_text(json.dumps(res, indent=1, sort_keys=True))


def _timed_child(args: list[str]) -> dict:
    """Run this script's hidden subcommand under /usr/bin/time -v: wall, user+sys CPU, peak RSS (MB)."""
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-v", sys.executable, __file__, *args], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"child {args[0]} failed: {p.stderr[-2000:]}")
    err = p.stderr

    def field(name: str) -> float:
        return float(re.search(rf"{re.escape(name)}: ([0-9.]+)", err).group(1))

    out = {"wall_s": round(wall, 2), "cpu_s": round(field("User time (seconds)") + field("System time (seconds)"), 2),
           "peak_rss_mb": round(field("Maximum resident set size (kbytes)") / 1024, 1)}
    last = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if last:
        out.update(json.loads(last[-1]))
    return out


def _corpus(out: Path, mb: int) -> Path:
    from trace_bench_data import write_code_jsonl

    folder = out / f"corpus-{mb}mb"
    if (folder / "done.json").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    # past the distinct text, the same files again (counted: repeats lengthen matches)
    n, total, repeated = write_code_jsonl(folder / "a-code.jsonl", mb << 20, repeat=True)
    (folder / "done.json").write_text(json.dumps({"files": n, "bytes": total, "repeated_files": repeated}))
    return folder


def _tokenizer(out: Path, largest: Path) -> Path:
    import trace_bench_data as tbd

    tbd.BENCH_DIR = out  # cache the tokenizer beside the corpora
    return tbd.train_tokenizer(largest)


def cmd_trace(a) -> None:
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    corpora = {mb: _corpus(out, mb) for mb in sorted(a.mb)}
    tok = _tokenizer(out, corpora[min(max(corpora), a.tokenizer_mb)] if a.tokenizer_mb in corpora
                     else _corpus(out, a.tokenizer_mb))
    res = _results(out)
    inputs = out / "trace_inputs.json"
    for mb, folder in corpora.items():
        idx = out / f"idx-{mb}mb"
        if not (idx / "lmaudit-index.json").exists():
            build = _timed_child(["_build", str(folder), str(tok), str(idx)])
        else:
            build = res["trace"].get(str(mb), {}).get("build", {})
        if not inputs.exists():  # from the smallest index: every larger one holds its documents
            _timed_child(["_inputs", str(idx), str(a.n), str(inputs)])
        trace = _timed_child(["_trace", str(idx), str(inputs)])
        manifest = json.loads((idx / "lmaudit-index.json").read_text())
        res["trace"][str(mb)] = {"corpus_mb": mb, "n_tokens": manifest["n_tokens"], "n_docs": manifest["n_docs"],
                                 "repeated_files": json.loads((folder / "done.json").read_text())["repeated_files"],
                                 "index_bytes": sum(f.stat().st_size for f in idx.rglob("*") if f.is_file()),
                                 "build": build, "trace": trace}
        _save(out, res)
        print(json.dumps(res["trace"][str(mb)]), flush=True)


def _child_build(folder: str, tok: str, idx: str) -> None:
    from ingest.index import build_index

    build_index([Path(folder)], tok, Path(idx), shards=2, progress=False, overwrite=True)


def _child_inputs(idx: str, n: str, path: str) -> None:
    from trace_bench import make_inputs

    from ingest.trace.params import TraceParams
    from ingest.trace.run import TraceJob, open_tracer

    tracer = open_tracer(TraceJob((idx,), TraceParams()), "growth")
    sets = make_inputs(tracer.engine, tracer.tok, int(n))
    sets.pop("model", None)
    Path(path).write_text(json.dumps(sets))


def _child_trace(idx: str, path: str) -> None:
    from ingest.trace.params import TraceParams
    from ingest.trace.run import TraceJob, open_tracer

    sets = json.loads(Path(path).read_text())
    tracer = open_tracer(TraceJob((idx,), TraceParams()), "growth")
    per_class = {}
    c_all, t_all, n_all = time.process_time(), time.perf_counter(), 0
    for name, texts in sets.items():
        c0, t0 = time.process_time(), time.perf_counter()
        for i, text in enumerate(texts):
            tracer.trace(f"{name}-{i}", text)
        per_class[name] = {"n": len(texts), "cpu_s": round(time.process_time() - c0, 3),
                           "wall_s": round(time.perf_counter() - t0, 3)}
        n_all += len(texts)
    cpu = time.process_time() - c_all
    print(json.dumps({"n_generations": n_all, "trace_cpu_s": round(cpu, 3),
                      "trace_wall_s": round(time.perf_counter() - t_all, 3),
                      "generations_per_cpu_s": round(n_all / cpu, 1), "per_class": per_class}))


def cmd_build_log(a) -> None:
    out = Path(a.out)
    res = _results(out)
    log, tm = Path(a.log).read_text(), Path(a.time).read_text()
    m = re.search(r"lmaudit build: ([0-9.]+)s wall, ([0-9.]+)s CPU.*load average before ([0-9.]+), after ([0-9.]+)",
                  log)
    lake_log = Path(a.lake_log).read_text() if a.lake_log else log
    lake = json.loads(re.search(r"lake written in [0-9.]+s: (\{.*\})", lake_log).group(1))
    rss = float(re.search(r"Maximum resident set size \(kbytes\): ([0-9]+)", tm).group(1)) / 1024
    key = str(a.scale) if a.label == "unbounded" else f"{a.label}-{a.scale}"
    res["build"][key] = {"scale": a.scale, **lake, "build_wall_s": float(m.group(1)),
                         "build_cpu_s": float(m.group(2)), "load_before": float(m.group(3)),
                         "load_after": float(m.group(4)), "peak_rss_mb_of_run": round(rss, 1),
                         "label": a.label, "memory_limit": a.memory_limit}
    if a.spill_log:
        rows = [ln.split() for ln in Path(a.spill_log).read_text().splitlines() if len(ln.split()) >= 5]
        res["build"][key]["spill_max_mb"] = round(max(int(r[1]) for r in rows) / 1e6, 1)
        res["build"][key]["load_during"] = [min(float(r[2]) for r in rows), max(float(r[2]) for r in rows)]
        db = [int(r[5]) for r in rows if len(r) > 5]
        if db:
            res["build"][key]["database_mb"] = round(max(db) / 1e6, 1)
    if a.run_results:
        nodes = json.loads(Path(a.run_results).read_text())["results"]
        res["build"][key]["n_nodes"] = len(nodes)
        res["build"][key]["slowest_nodes_s"] = {r["unique_id"].split(".")[-1] if r["unique_id"].startswith("model")
                                                else r["unique_id"]: round(r["execution_time"], 1)
                                                for r in sorted(nodes, key=lambda r: -r["execution_time"])[:12]}
    _save(out, res)
    print(json.dumps(res["build"][key]))


def cmd_plot(a) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = _results(Path(a.out))
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.4))
    series: dict[str, list] = {}
    for r in res["build"].values():
        series.setdefault(r.get("label", "unbounded"), []).append(r)
    for label, b in sorted(series.items()):
        b.sort(key=lambda r: r["scale"])
        x = [r["span_documents"] for r in b]
        limit = f" ({b[-1]['memory_limit']})" if b[-1].get("memory_limit") else ""
        for key, what, mark in (("build_cpu_s", "CPU s", "o-"), ("build_wall_s", "wall s", "s--")):
            axes[0].loglog(x, [r[key] for r in b], mark, label=f"{label}{limit}, {what}")
        axes[1].loglog(x, [r["peak_rss_mb_of_run"] / 1024 for r in b], "o-", label=f"{label}{limit}")
        for r in b:
            axes[0].annotate(f"{r['scale']:g}x", (r["span_documents"], r["build_cpu_s"]), xytext=(4, -12),
                             textcoords="offset points", fontsize=7)
    if series:
        first = min((r for b in series.values() for r in b), key=lambda r: r["span_documents"])
        xs = sorted({r["span_documents"] for b in series.values() for r in b})
        axes[0].loglog(xs, [first["build_cpu_s"] * v / first["span_documents"] for v in xs], "k:", lw=1,
                       label="linear (slope 1)")
        axes[0].set_xlabel("span_documents rows (20.2M = the paper's 200,000 generations)")
        axes[0].set_ylabel("seconds")
        axes[0].set_title("Paper-scale build (synthetic lake)")
        axes[0].legend(fontsize=6)
        from ingest.build_memory import parse_size

        for limit in sorted({r["memory_limit"] for b in series.values() for r in b if r.get("memory_limit")}):
            # the budget the RSS must stay under (this axis is MiB / 1024)
            axes[1].axhline(parse_size(limit, 0) / 2**30, color="k", ls=":", lw=1, label=f"budget {limit}")
        axes[1].set_xlabel("span_documents rows")
        axes[1].set_ylabel("peak RSS of the run, GiB")
        axes[1].set_title("Build memory (label: $LMAUDIT_MEMORY_LIMIT)")
        axes[1].legend(fontsize=7)
    t = sorted(res["trace"].values(), key=lambda r: r["n_tokens"])
    if t:
        x = [r["n_tokens"] for r in t]
        axes[2].loglog(x, [r["build"]["cpu_s"] for r in t], "o-", label="index build, CPU s")
        axes[2].loglog(x, [r["trace"]["trace_cpu_s"] for r in t], "s-", label="tracing the same inputs, CPU s")
        axes[2].loglog(x, [t[0]["build"]["cpu_s"] * v / x[0] for v in x], "k--", lw=1, label="linear (slope 1)")
        for r in t:
            axes[2].annotate(f"{r['build']['peak_rss_mb'] / 1024:.1f} / {r['trace']['peak_rss_mb'] / 1024:.2f} GB",
                             (r["n_tokens"], r["build"]["cpu_s"]), xytext=(4, 4), textcoords="offset points",
                             fontsize=7)
        axes[2].set_xlabel("index tokens")
        axes[2].set_title("Index build and tracing (peak RSS: build / trace)")
        axes[2].legend(fontsize=7)
    fig.tight_layout()
    Path(a.png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(a.png, dpi=110)
    print(f"figure: {a.png}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):  # children of `trace`
        {"_build": _child_build, "_inputs": _child_inputs, "_trace": _child_trace}[sys.argv[1]](*sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("trace")
    t.add_argument("--mb", type=int, nargs="+", default=[32, 320])
    t.add_argument("--n", type=int, default=40, help="inputs per class")
    t.add_argument("--tokenizer-mb", type=int, default=320,
                   help="the corpus whose first 40 MB train the one tokenizer (the same for every index)")
    t.add_argument("--out", default="/tmp/growth")
    b = sub.add_parser("build-log")
    b.add_argument("--scale", type=float, required=True)
    b.add_argument("--log", required=True)
    b.add_argument("--time", required=True)
    b.add_argument("--lake-log", default=None, help="the writer's log, when the build ran with --skip-write")
    b.add_argument("--memory-limit", default=None, help="the build's $LMAUDIT_MEMORY_LIMIT, if set")
    b.add_argument("--label", default="unbounded", help="the series: 'unbounded' (before issue 32) or e.g. 'limited'")
    b.add_argument("--spill-log", default=None, help="the spill sampler's log (largest spill, load during)")
    b.add_argument("--run-results", default=None, help="dbt's run_results.json of the build (slowest nodes)")
    b.add_argument("--out", default="/tmp/growth")
    p = sub.add_parser("plot")
    p.add_argument("--out", default="/tmp/growth")
    p.add_argument("--png", default=str(REPO / "benchmarks" / "cost_growth.png"))
    a = ap.parse_args()
    {"trace": cmd_trace, "build-log": cmd_build_log, "plot": cmd_plot}[a.cmd](a)


if __name__ == "__main__":
    main()
