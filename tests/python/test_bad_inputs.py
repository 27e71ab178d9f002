"""The catalogue of bad inputs and faults: each one is a one-line error with the right exit code, no
traceback, and a lake that is byte-for-byte what it was before.

Every case runs the real command line (`ingest.cli.main.run`, the `lmaudit` entry point) in this process
against a copy of one small warehouse: a byte-level index of 60 documents, its registered corpus and an
imported run. A few cases that need the process boundary (SIGBUS, argv) are in test_cli_errors.py.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from ingest.cli.main import run


@dataclass
class Case:
    name: str
    args: list[str]                      # {home}, {data}, {idx} are filled in
    message: str                         # a substring of the one error line
    setup: Callable[[Path, Path], None] | None = None   # (home, data) -> None, before the lake snapshot
    rc: int = 2
    extra: list[str] = field(default_factory=list)


def _write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bad")
    data = root / "data"
    docs = [{"text": f"document {i}: the quick brown fox number {i} jumps over the lazy dog " * 3, "id": f"d{i}"}
            for i in range(60)]
    _write(data / "corpus.jsonl", "".join(json.dumps(d) + "\n" for d in docs))
    _write(data / "empty_texts.jsonl", "".join(json.dumps({"text": ""}) + "\n" for _ in range(3)))
    _write(data / "gens.jsonl", "".join(json.dumps({"text": t}) + "\n"
                                        for t in ["the quick brown fox number 3 jumps", "something else"]))
    rows = [{"text": f"row {i} " * 20} for i in range(3000)]
    blob = "".join(json.dumps(r) + "\n" for r in rows).encode()
    _write(data / "ok.jsonl.gz", gzip.compress(blob))
    _write(data / "trunc.jsonl.gz", gzip.compress(blob)[:4000])
    import zstandard

    z = zstandard.ZstdCompressor().compress(blob)
    _write(data / "trunc.jsonl.zst", z[:len(z) // 2])
    _write(data / "plain_as.jsonl.gz", b'{"text": "not compressed"}\n')
    _write(data / "plain_as.jsonl.zst", b'{"text": "not compressed"}\n')
    _write(data / "bad.parquet", b"PAR1 not really")
    _write(data / "latin1.jsonl", b'{"text": "caf\xe9"}\n')
    _write(data / "afile", "a file, not a folder")
    home = root / "wh"
    assert run(["-w", str(home), "index", "build", str(data / "corpus.jsonl"), "--tokenizer", "bytes",
                "--out", str(root / "idx"), "--name", "mini"]) == 0
    assert run(["-w", str(home), "import", "generations", str(data / "gens.jsonl"), "--run-id", "r1",
                "--model", "m", "--setting", "unconditional", "--corpus", "mini"]) == 0
    assert run(["-w", str(home), "build", "--select", "stg_runs"]) == 0  # `lmaudit sql` needs the database
    return {"root": root, "data": data, "home": home, "idx": root / "idx"}


def _lake_digest(home: Path) -> dict[str, str]:
    lake = home / "lake"
    return {str(p.relative_to(lake)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(lake.rglob("*")) if p.is_file() and "_tmp" not in p.parts}


def _damaged_index(how: str) -> Callable[[Path, Path], None]:
    def setup(home: Path, data: Path) -> None:
        src, dst = home.parent / "idx", home.parent / "idx-bad"
        shutil.copytree(src, dst)
        if how == "metadata":
            (dst / "metadata.0").write_bytes((src / "metadata.0").read_bytes()[:20])
        elif how == "logprob":
            (dst / "lmaudit-logprob.npy").write_bytes((src / "lmaudit-logprob.npy").read_bytes()[:10])
        elif how == "random-table":
            (dst / "table.0").write_bytes(os.urandom((src / "table.0").stat().st_size))
        elif how == "reversed-table":  # every pointer valid, the order wrong
            raw = (src / "table.0").read_bytes()
            ptr = len(raw) // ((src / "tokenized.0").stat().st_size // 1)
            ptrs = [raw[i:i + ptr] for i in range(0, len(raw), ptr)]
            (dst / "table.0").write_bytes(b"".join(reversed(ptrs)))
        elif how == "short-table":
            (dst / "table.0").write_bytes((src / "table.0").read_bytes()[:-8])
        elif how == "manifest":
            (dst / "lmaudit-index.json").unlink()
        elif how == "stray":
            (dst / "notes-metadata.txt").write_text("x")
    return setup


def _broken_partition(home: Path, data: Path) -> None:
    _write(home / "lake" / "prompts" / "broken.parquet", b"PAR1 truncated")


def _second_classifier(home: Path, data: Path) -> None:
    _write(home / "classifiers" / "other" / "meta.json", "{}")


IMPORT = ["import", "generations"]
GEN_OPTS = ["--model", "m", "--setting", "unconditional"]

CASES = [
    # -- usage errors (typer's own click exceptions) ---------------------------------------------------
    Case("unknown option", ["--nope"], "No such option: --nope"),
    Case("unknown command", ["frobnicate"], "No such command 'frobnicate'"),
    Case("unknown subcommand", ["index", "frob"], "No such command 'frob'"),
    Case("missing argument", IMPORT, "Missing argument 'file'"),
    Case("missing required option", [*IMPORT, "{data}/gens.jsonl"], "Missing option '--run-id'"),
    Case("option without value", ["generate", "--model"], "requires an argument"),
    Case("not an integer", ["trace", "--run", "r1", "--workers", "abc"], "Invalid value for '--workers'"),
    Case("not a float", ["generate", "--model", "m", "--corpus", "mini", "--temperature", "hot"],
         "Invalid value for '--temperature'"),
    Case("sql without a query", ["sql"], "Missing argument 'query'"),
    Case("prompts build without corpus", ["prompts", "build", "--setting", "unconditional"],
         "Missing option '--corpus'"),
    # -- names ------------------------------------------------------------------------------------------
    Case("classifier named .", ["classify", "train", "--name", "."], "is a path of its own",
         setup=_second_classifier),
    Case("classifier named ..", ["classify", "train", "--name", ".."], "is a path of its own",
         setup=_second_classifier),
    Case("classifier name with a slash", ["classify", "train", "--name", "a/b"], "contains a path separator"),
    Case("classifier name with a tab", ["classify", "train", "--name", "a\tb"], "contains a control character"),
    Case("run id .", [*IMPORT, "{data}/gens.jsonl", "--run-id", ".", *GEN_OPTS], "is a path of its own"),
    Case("run id with ..", [*IMPORT, "{data}/gens.jsonl", "--run-id", "../x", *GEN_OPTS],
         "contains a path separator"),
    Case("run id with spaces around", [*IMPORT, "{data}/gens.jsonl", "--run-id", " r ", *GEN_OPTS],
         "starts or ends with whitespace"),
    Case("run id with a newline", [*IMPORT, "{data}/gens.jsonl", "--run-id", "r\n2", *GEN_OPTS],
         "contains a control character"),
    Case("blank corpus name", ["index", "build", "{data}/corpus.jsonl", "--tokenizer", "bytes", "--out",
                               "{root}/new-idx", "--name", "  "], "must not be empty"),
    Case("corpus name with a slash", ["index", "build", "{data}/corpus.jsonl", "--tokenizer", "bytes", "--out",
                                      "{root}/new-idx2", "--name", "a/b"], "contains a path separator"),
    # -- lmaudit sql ------------------------------------------------------------------------------------
    Case("sql copy over the lake", ["sql", "copy (select 1) to '{home}/lake/runs/x.parquet'"], "not COPY"),
    Case("sql copy anywhere", ["sql", "copy (select 1) to '{root}/x.csv'"], "not COPY"),
    Case("sql reads /etc/passwd", ["sql", "select * from read_csv('/etc/passwd')"], "reads only the warehouse"),
    Case("sql attach", ["sql", "attach '{root}/other.db'"], "not ATTACH"),
    Case("sql set", ["sql", "set enable_external_access = true"], "not SET"),
    Case("sql install", ["sql", "install httpfs"], "not LOAD"),
    Case("sql export database", ["sql", "export database '{root}/exp'"], "not EXPORT"),
    Case("sql create", ["sql", "create table t as select 1"], "not CREATE"),
    Case("sql empty", ["sql", ""], "the query is empty"),
    Case("sql syntax", ["sql", "selec 1"], "query failed: Parser Error"),
    Case("sql unknown table", ["sql", "select * from nope"], "query failed: Catalog Error"),
    Case("sql missing file", ["sql", "@{root}/none.sql"], "not found"),
    # -- import generations -----------------------------------------------------------------------------
    Case("import: no file", [*IMPORT, "{root}/none.jsonl", "--run-id", "x", *GEN_OPTS], "file not found"),
    Case("import: a folder", [*IMPORT, "{data}", "--run-id", "x", *GEN_OPTS], "is a folder"),
    Case("import: unknown suffix", [*IMPORT, "{data}/afile", "--run-id", "x", *GEN_OPTS], "unsupported file type"),
    Case("import: .gz that is not gzip", [*IMPORT, "{data}/plain_as.jsonl.gz", "--run-id", "x", *GEN_OPTS],
         "not a valid gzip file"),
    Case("import: .zst that is not zstd", [*IMPORT, "{data}/plain_as.jsonl.zst", "--run-id", "x", *GEN_OPTS],
         "not a valid zstd file"),
    Case("import: truncated .gz", [*IMPORT, "{data}/trunc.jsonl.gz", "--run-id", "x", *GEN_OPTS],
         "the gzip stream ends early"),
    Case("import: truncated .zst", [*IMPORT, "{data}/trunc.jsonl.zst", "--run-id", "x", *GEN_OPTS],
         "the zstd stream ends early"),
    Case("import: not parquet", [*IMPORT, "{data}/bad.parquet", "--run-id", "x", *GEN_OPTS],
         "not a readable Parquet file"),
    Case("import: not UTF-8", [*IMPORT, "{data}/latin1.jsonl", "--run-id", "x", *GEN_OPTS], "not valid UTF-8"),
    Case("import: unknown setting", [*IMPORT, "{data}/gens.jsonl", "--run-id", "x", "--model", "m",
                                     "--setting", "chat"], "unknown setting 'chat'"),
    Case("import: unknown corpus", [*IMPORT, "{data}/gens.jsonl", "--run-id", "x", *GEN_OPTS, "--corpus", "nope"],
         "corpus 'nope' is not registered"),
    Case("import: unknown purpose", [*IMPORT, "{data}/gens.jsonl", "--run-id", "x", *GEN_OPTS, "--purpose", "fun"],
         "unknown purpose 'fun'"),
    Case("import: a broken lake partition", [*IMPORT, "{data}/gens.jsonl", "--run-id", "x", *GEN_OPTS],
         "broken.parquet", setup=_broken_partition),
    # -- index build ------------------------------------------------------------------------------------
    Case("index: --out exists", ["index", "build", "{data}/corpus.jsonl", "--tokenizer", "bytes", "--out", "{idx}"],
         "already exists"),
    Case("index: --out under a file", ["index", "build", "{data}/corpus.jsonl", "--tokenizer", "bytes", "--out",
                                       "{data}/afile/sub"], "which is a file"),
    Case("index: every text empty", ["index", "build", "{data}/empty_texts.jsonl", "--tokenizer", "bytes", "--out",
                                     "{root}/idx-empty"], "has an empty 'text'"),
    Case("index: wrong text field", ["index", "build", "{data}/corpus.jsonl", "--tokenizer", "bytes", "--out",
                                     "{root}/idx-field", "--text-field", "body"], "body"),
    Case("index: missing input", ["index", "build", "{root}/none.jsonl", "--tokenizer", "bytes", "--out",
                                  "{root}/idx-none"], "none.jsonl"),
    Case("index: unknown tokenizer", ["index", "build", "{data}/corpus.jsonl", "--tokenizer", "{root}/no-tok",
                                      "--out", "{root}/idx-tok"], "no-tok"),
    Case("index: forbidden path word", ["index", "build", "{data}/corpus.jsonl", "--tokenizer", "bytes", "--out",
                                        "{root}/tables/idx"], "table"),
    Case("index: zero shards", ["index", "build", "{data}/corpus.jsonl", "--tokenizer", "bytes", "--out",
                                "{root}/idx-zero", "--shards", "0"], "--shards must be at least 1"),
    # -- trace ------------------------------------------------------------------------------------------
    Case("trace: nonexistent --index", ["trace", "--run", "r1", "--index", "{root}/none"], "does not exist"),
    Case("trace: --batch-size 0", ["trace", "--run", "r1", "--corpus", "mini", "--batch-size", "0"],
         "--batch-size must be at least 1"),
    Case("trace: --workers 0", ["trace", "--run", "r1", "--corpus", "mini", "--workers", "0"],
         "--workers must be at least 1"),
    Case("trace: unknown run", ["trace", "--run", "nope", "--corpus", "mini"], "run 'nope' has no generations"),
    Case("trace: run and file", ["trace", "--run", "r1", "--generations", "{data}/gens.jsonl"],
         "exactly one of --run R or --generations FILE"),
    Case("trace: unknown mode", ["trace", "--run", "r1", "--corpus", "mini", "--mode", "fuzzy"], "--mode"),
    Case("trace: unknown corpus", ["trace", "--run", "r1", "--corpus", "nope"], "nope"),
    Case("trace: truncated metadata", ["trace", "--run", "r1", "--index", "{root}/idx-bad"],
         "metadata.0 is shorter than metaoff.0", setup=_damaged_index("metadata")),
    Case("trace: truncated log-prob table", ["trace", "--run", "r1", "--index", "{root}/idx-bad"],
         "lmaudit-logprob.npy is unreadable", setup=_damaged_index("logprob")),
    Case("trace: suffix table of random bytes", ["trace", "--run", "r1", "--index", "{root}/idx-bad"],
         "points outside tokenized.0", setup=_damaged_index("random-table")),
    Case("trace: suffix table out of order", ["trace", "--run", "r1", "--index", "{root}/idx-bad"],
         "is not sorted", setup=_damaged_index("reversed-table")),
    Case("trace: truncated suffix table", ["trace", "--run", "r1", "--index", "{root}/idx-bad"],
         "truncated", setup=_damaged_index("short-table")),
    Case("trace: no manifest", ["trace", "--run", "r1", "--index", "{root}/idx-bad"], "lmaudit-index.json",
         setup=_damaged_index("manifest")),
    Case("trace: stray role file in the index", ["trace", "--run", "r1", "--index", "{root}/idx-bad"],
         "role word", setup=_damaged_index("stray")),
    # -- generate, classify, score, build, export -------------------------------------------------------
    Case("generate: unknown backend", ["generate", "--model", "m", "--corpus", "mini", "--backend", "tpu"],
         "unknown backend 'tpu'"),
    Case("generate: unknown preset", ["generate", "--model", "m", "--corpus", "mini", "--preset", "fast"],
         "unknown preset 'fast'"),
    Case("generate: unknown setting", ["generate", "--model", "m", "--corpus", "mini", "--settings", "chat"],
         "unknown setting 'chat'"),
    Case("generate: unknown corpus", ["generate", "--model", "m", "--corpus", "nope"], "nope"),
    Case("generate: model not found", ["generate", "--model", "{root}/no-model", "--corpus", "mini",
                                       "--settings", "unconditional"], "no-model"),
    Case("classify train: no references", ["classify", "train"], "reference"),
    Case("classify score: no classifier", ["classify", "score", "--run", "r1"], "no classifier"),
    Case("score: nothing to score", ["score", "--model", "m"], "--reference and/or --run"),
    Case("score: bad device", ["score", "--model", "m", "--run", "r1", "--device", "tpu"], "--device"),
    Case("score: no references", ["score", "--model", "m", "--reference"], "no reference documents"),
    Case("reference import: no file", ["reference", "import", "{root}/none.jsonl"], "none.jsonl"),
    Case("build: a broken lake partition", ["build"], "broken.parquet is unreadable", setup=_broken_partition),
    Case("demo: unknown size", ["demo", "--size", "huge"], "unknown size 'huge'"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_one_line_and_changes_nothing(case: Case, base, tmp_path, capsys) -> None:
    root = tmp_path
    home = root / "wh"
    shutil.copytree(base["home"], home)
    shutil.copytree(base["idx"], root / "idx")
    data = base["data"]
    # the copied warehouse's corpus points at the module's index; that is the one traced
    if case.setup:
        case.setup(home, data)
    before = _lake_digest(home)
    fill = {"home": str(home), "data": str(data), "idx": str(root / "idx"), "root": str(root)}
    args = [a.format(**fill) for a in case.args]
    capsys.readouterr()
    rc = run(["-w", str(home), *args])
    out = capsys.readouterr()
    err = out.err.strip()
    assert rc == case.rc, (rc, err, out.out[-500:])
    assert "Traceback" not in out.err + out.out
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert case.message in lines[0], (case.message, lines[0])
    assert _lake_digest(home) == before
    assert not (home / "classifiers").exists() or case.setup is not _second_classifier or \
        (home / "classifiers" / "other" / "meta.json").exists()


def test_the_catalogue_is_long_enough() -> None:
    assert len(CASES) >= 60
