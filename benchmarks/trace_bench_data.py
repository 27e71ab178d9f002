"""Data for `benchmarks/trace_bench.py`: a corpus of real local text, a byte-level BPE and a cached index.

Everything lives under a cache folder (default /tmp/lmaudit-bench, override with LMAUDIT_BENCH_DIR) and is
keyed by its parameters, so a rerun of the benchmark reuses the index:

* corpus: Python sources of this interpreter's stdlib and of the virtualenv's site-packages (files of at
  most 1 MB, valid UTF-8), taken in the order of a hash of their path (a spread-out, reproducible sample)
  until `corpus_mb` MB; license files (naturally duplicated boilerplate); and the sandbox corpus
  (/tmp/wh2/sandbox/*/corpus/corpus.jsonl) when it exists, so the sandbox model's samples have their
  training text in the index;
* tokenizer: byte-level BPE (vocab 8192, `<|endoftext|>` special) trained with `tokenizers` on the first
  `train_mb` MB of the corpus;
* index: `ingest.index.build_index`, `shards` shards (u16 tokens).

    python benchmarks/trace_bench_data.py [--corpus-mb 240] [--shards 2]   # build (or find) the index
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import sys
import sysconfig
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BENCH_DIR = Path(os.environ.get("LMAUDIT_BENCH_DIR", "/tmp/lmaudit-bench"))
VOCAB = 8192
MAX_FILE_BYTES = 1 << 20


def _key(**params) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:12]


def _candidate_files() -> list[tuple[str, Path]]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    out = []
    for root, domain in ((stdlib, "stdlib"), (site, "site-packages")):
        for p in root.rglob("*.py"):
            if domain == "stdlib" and "site-packages" in p.parts:
                continue
            out.append((domain, p))
    out.sort(key=lambda dp: hashlib.blake2b(str(dp[1]).encode(), digest_size=8).digest())
    return out


def _license_files() -> list[Path]:
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    pats = ["*.dist-info/LICENSE*", "*.dist-info/licenses/*", "*.dist-info/COPYING*", "*/LICENSE*"]
    files = sorted({p for pat in pats for p in site.glob(pat) if p.is_file()})
    return files


def write_code_jsonl(path: Path, budget: int, repeat: bool = False) -> tuple[int, int, int]:
    """The candidate Python files (hash order, files over MAX_FILE_BYTES skipped) as JSON Lines until `budget`
    bytes; with `repeat`, past the distinct text the same files again (ids `PATH#repeatK`). Returns (documents,
    bytes, repeated documents)."""
    total = n = repeated = 0
    files = _candidate_files()
    with open(path, "w", encoding="utf-8") as f:
        for rep in range(1000 if repeat else 1):
            for domain, p in files:
                if total >= budget:
                    return n, total, repeated
                try:
                    if p.stat().st_size > MAX_FILE_BYTES:
                        continue
                    text = p.read_bytes().decode("utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                if text.strip():
                    doc_id = str(p) if rep == 0 else f"{p}#repeat{rep}"
                    f.write(json.dumps({"text": text, "id": doc_id, "domain": "code", "source": domain}) + "\n")
                    total, n, repeated = total + len(text.encode()), n + 1, repeated + (rep > 0)
    return n, total, repeated


def build_corpus(corpus_mb: int) -> Path:
    """JSONL files of the corpus (cached); returns their folder."""
    folder = BENCH_DIR / f"corpus-{_key(mb=corpus_mb, v=1)}"
    if (folder / "done.json").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    n, total, _ = write_code_jsonl(folder / "a-code.jsonl", corpus_mb << 20)
    with open(folder / "b-licenses.jsonl", "w", encoding="utf-8") as f:
        for p in _license_files():
            try:
                text = p.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if text.strip():
                f.write(json.dumps({"text": text, "id": str(p), "domain": "boilerplate", "source": "license"}) + "\n")
    sandbox = sorted(glob.glob("/tmp/wh2/sandbox/*/corpus/corpus.jsonl"))
    if sandbox:
        with open(folder / "c-sandbox.jsonl", "w", encoding="utf-8") as f, open(sandbox[0], encoding="utf-8") as src:
            for line in src:
                d = json.loads(line)
                row = {"text": d["text"], "id": d["id"], "domain": d["domain"], "source": "sandbox"}
                f.write(json.dumps(row) + "\n")
    (folder / "done.json").write_text(json.dumps({"files": n, "bytes": total, "sandbox": sandbox[:1]}))
    return folder


def train_tokenizer(corpus: Path, train_mb: int = 40) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    out = BENCH_DIR / f"tok-{_key(corpus=corpus.name, mb=train_mb, vocab=VOCAB)}" / "tokenizer.json"
    if out.exists():
        return out

    def texts():
        seen = 0
        with open(corpus / "a-code.jsonl", encoding="utf-8") as f:
            for line in f:
                t = json.loads(line)["text"]
                seen += len(t)
                yield t
                if seen >= train_mb << 20:
                    return

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>"], show_progress=False)
    tok.train_from_iterator(texts(), trainer)
    out.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(out))
    return out


def ensure_index(corpus_mb: int = 240, shards: int = 2, progress: bool = True) -> tuple[Path, Path]:
    """(index folder, tokenizer.json), building what is missing."""
    from ingest.index import build_index

    corpus = build_corpus(corpus_mb)
    tok = train_tokenizer(corpus)
    idx = BENCH_DIR / f"idx-{_key(corpus=corpus.name, tok=tok.parent.name, shards=shards)}"
    if not (idx / "lmaudit-index.json").exists():
        t0 = time.perf_counter()
        build_index([corpus], str(tok), idx, shards=shards, progress=progress, overwrite=True)
        print(f"built {idx} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return idx, tok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus-mb", type=int, default=240)
    ap.add_argument("--shards", type=int, default=2)
    a = ap.parse_args()
    t0 = time.perf_counter()
    idx, tok = ensure_index(a.corpus_mb, a.shards)
    m = json.loads((idx / "lmaudit-index.json").read_text())
    print(json.dumps({"index": str(idx), "tokenizer": str(tok), "n_tokens": m["n_tokens"], "n_docs": m["n_docs"],
                      "timings": m["timings"], "seconds": round(time.perf_counter() - t0, 1)}, indent=1))


if __name__ == "__main__":
    main()
