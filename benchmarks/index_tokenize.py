"""Benchmark: the tokenization step of `lmaudit index build` (tokens/s), and a digest of the index files.

    python benchmarks/index_tokenize.py --corpus DIR_OR_JSONL --tokenizer tokenizer.json [--shards 2]
        [--full-build] [--json FILE]
    python benchmarks/index_tokenize.py --corpus ... --tokenizer ... --ahead 0 2 [--rounds 2]   # A/B in one run

Runs `ingest.index.build._tokenize` (reading the JSONL, encoding, writing tokenized/offset/metadata/metaoff/
unigram files of every shard) into a temporary folder and reports documents, tokens, wall seconds, process
CPU seconds (all threads, the tokenizer's Rust threads included), tokens per wall second and the load
average; then the sha256 of every file written. `--full-build` also runs the whole `build_index` (suffix
arrays included) and digests all its files: equal digests before and after a change to the tokenization
code mean byte-identical indexes. Defaults: the corpus and tokenizer of `benchmarks/trace_bench.py`.
Results: BENCHMARKS.md, "Index tokenization".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _digests(folder: Path) -> dict[str, str]:
    out = {}
    for p in sorted(folder.iterdir()):
        if p.is_file() and p.name.split(".")[0] in ("tokenized", "offset", "metadata", "metaoff", "unigram", "table"):
            out[p.name] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def compare_ahead(a: argparse.Namespace) -> None:
    """Tokenize the corpus with each `--ahead` value in turn (alternating order), same process."""
    import ingest.index.build as build
    from ingest.index.readers import list_input_files
    from ingest.index.tokenizer import load_tokenizer

    files = list_input_files([str(a.corpus)])
    tok = load_tokenizer(a.tokenizer)
    runs: dict[int, list] = {k: [] for k in a.ahead}
    digests: dict[int, set] = {k: set() for k in a.ahead}
    n_tokens = 0
    for r in range(a.rounds):
        for k in (a.ahead if r % 2 == 0 else a.ahead[::-1]):
            build._ENCODE_AHEAD = k
            with tempfile.TemporaryDirectory(prefix="lmaudit-tokbench-") as tmp:
                w0, c0 = time.perf_counter(), time.process_time()
                infos, _, _ = build._tokenize(files, tok, Path(tmp), a.shards, "text", build._source_root(files), False)
                wall, cpu = time.perf_counter() - w0, time.process_time() - c0
                n_tokens = sum(i.n_tokens for i in infos)
                digests[k].add(hashlib.sha256(json.dumps(_digests(Path(tmp)), sort_keys=True).encode()).hexdigest())
                runs[k].append({"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "tokens_per_s": round(n_tokens / wall)})
    best = {k: max(x["tokens_per_s"] for x in v) for k, v in runs.items()}
    out = {"corpus": str(a.corpus), "tokens": n_tokens, "shards": a.shards, "runs": runs,
           "best_tokens_per_s": best, "identical_files": len(set().union(*digests.values())) == 1,
           "load_average_after": [round(x, 1) for x in os.getloadavg()]}
    print(json.dumps(out, indent=1))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, required=True, help="a JSONL file or a folder of them")
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--full-build", action="store_true", help="also build the whole index and digest it")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--ahead", type=int, nargs="*",
                    help="compare these numbers of batches encoding ahead (0: one batch at a time, the code "
                         "before issue 19), interleaved in one run, `--rounds` times each")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    if a.ahead:
        return compare_ahead(a)

    from ingest.index.build import _source_root, _tokenize, build_index
    from ingest.index.readers import list_input_files
    from ingest.index.tokenizer import load_tokenizer

    files = list_input_files([str(a.corpus)])
    tok = load_tokenizer(a.tokenizer)
    out: dict = {"corpus": str(a.corpus), "bytes": sum(f.stat().st_size for f in files), "shards": a.shards,
                 "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="lmaudit-tokbench-") as tmp:
        folder = Path(tmp) / "shards"
        folder.mkdir()
        w0, c0 = time.perf_counter(), time.process_time()
        infos, _, _ = _tokenize(files, tok, folder, a.shards, "text", _source_root(files), False)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        n_tokens = sum(i.n_tokens for i in infos)
        out.update(docs=sum(i.n_docs for i in infos), tokens=n_tokens, wall_s=round(wall, 2), cpu_s=round(cpu, 2),
                   tokens_per_s=round(n_tokens / wall), mb_per_s=round(out["bytes"] / wall / 1e6, 2),
                   load_average_after=[round(x, 1) for x in os.getloadavg()])
        digest = _digests(folder)
        out["tokenize_sha256"] = hashlib.sha256(json.dumps(digest, sort_keys=True).encode()).hexdigest()
        if a.full_build:
            idx = Path(tmp) / "index"
            build_index([str(f) for f in files], a.tokenizer, idx, shards=a.shards, progress=False)
            full = _digests(idx)
            out["index_sha256"] = hashlib.sha256(json.dumps(full, sort_keys=True).encode()).hexdigest()
            out["index_files"] = full
    print(json.dumps(out, indent=1))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
