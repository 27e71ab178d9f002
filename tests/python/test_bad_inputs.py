"""The catalogue of bad inputs and faults: each one is a one-line error with the right exit code, no
traceback, and a lake that is byte-for-byte what it was before.

Every case runs the real command line (`ingest.cli.main.run`, the `lmaudit` entry point) in this process
against a copy of one small warehouse: a byte-level index of 60 documents, its registered corpus and an
imported run. Faults (a full disk, a read-only warehouse, a build already running) are injected with
monkeypatch. The cases that need a process boundary run the installed `lmaudit` script: usage errors,
a random suffix array (it used to SIGBUS), `build && export` after a failed build, and kill -9 at every
rename of an import and between the chunks of a generation (the lake shows all of it or none of it).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable

import pytest
from bad_input_catalogue import Case, lake_digest, run_case, write

from ingest.cli.main import run


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bad")
    data = root / "data"
    docs = [{"text": f"document {i}: the quick brown fox number {i} jumps over the lazy dog " * 3, "id": f"d{i}"}
            for i in range(60)]
    write(data / "corpus.jsonl", "".join(json.dumps(d) + "\n" for d in docs))
    write(data / "empty_texts.jsonl", "".join(json.dumps({"text": ""}) + "\n" for _ in range(3)))
    write(data / "gens.jsonl", "".join(json.dumps({"text": t}) + "\n"
                                        for t in ["the quick brown fox number 3 jumps", "something else"]))
    rows = [{"text": f"row {i} " * 20} for i in range(3000)]
    blob = "".join(json.dumps(r) + "\n" for r in rows).encode()
    write(data / "ok.jsonl.gz", gzip.compress(blob))
    write(data / "trunc.jsonl.gz", gzip.compress(blob)[:4000])
    import zstandard

    z = zstandard.ZstdCompressor().compress(blob)
    write(data / "trunc.jsonl.zst", z[:len(z) // 2])
    write(data / "plain_as.jsonl.gz", b'{"text": "not compressed"}\n')
    write(data / "plain_as.jsonl.zst", b'{"text": "not compressed"}\n')
    write(data / "bad.parquet", b"PAR1 not really")
    write(data / "latin1.jsonl", b'{"text": "caf\xe9"}\n')
    write(data / "afile", "a file, not a folder")
    lines = {
        "seed_1e23": '{"text": "a", "seed": 1e23}', "seed_2_63": '{"text": "a", "seed": 9223372036854775808}',
        "sample_idx_2_31": '{"text": "a", "sample_idx": 2147483648}', "seed_negative": '{"text": "a", "seed": -1}',
        "surrogate_text": '{"text": "a\\ud800b"}', "surrogate_prompt": '{"text": "a", "prompt": "\\udfff"}',
        "text_number": '{"text": 5}', "no_text": '{"prompt": "p"}', "not_json": '{"text": "a"',
        "dup_sample": '{"text": "a", "prompt_id": "p", "sample_idx": 0}\n{"text": "b", "prompt_id": "p", "sample_idx": 0}',
        "two_prompt_texts": '{"text": "a", "prompt_id": "p", "prompt": "x"}\n{"text": "b", "prompt_id": "p", "prompt": "y"}',
        "seed_text": '{"text": "a", "seed": "forty-two"}', "empty": "",
        "with_prompts": '{"text": "a", "prompt": "new prompt 1"}\n{"text": "b", "prompt": "new prompt 2"}',
    }
    for name, body in lines.items():
        write(data / f"{name}.jsonl", body + ("\n" if body else ""))
    home = root / "wh"
    assert run(["-w", str(home), "index", "build", str(data / "corpus.jsonl"), "--tokenizer", "bytes",
                "--out", str(root / "idx"), "--name", "mini"]) == 0
    assert run(["-w", str(home), "import", "generations", str(data / "gens.jsonl"), "--run-id", "r1",
                "--model", "m", "--setting", "unconditional", "--corpus", "mini"]) == 0
    assert run(["-w", str(home), "build", "--select", "stg_runs"]) == 0  # `lmaudit sql` needs the database
    return {"root": root, "data": data, "home": home, "idx": root / "idx"}


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
    write(home / "lake" / "prompts" / "broken.parquet", b"PAR1 truncated")


def _broken_generations(home: Path, data: Path) -> None:
    write(home / "lake" / "generations" / "broken.parquet", b"PAR1 truncated")


def _duplicate_generations(home: Path, data: Path) -> None:
    """Every file readable, a data test fails (two partitions hold the same generation ids)."""
    gens = home / "lake" / "generations"
    src = next(p for p in gens.glob("*.parquet") if p.name != "_schema.parquet")
    shutil.copy(src, gens / "copy.parquet")


def _disk_full(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """ENOSPC half way through a Parquet file, as a full file system does."""
    import errno

    import pyarrow.parquet as pq

    def full(table, where, **kw):
        Path(where).write_bytes(b"PAR1 half a file")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pq, "write_table", full)


def _disk_full_after_prompts(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """The prompts partition fits, the generations do not: this used to leave orphan prompts."""
    import errno

    import pyarrow.parquet as pq

    real, calls = pq.write_table, []

    def full(table, where, **kw):
        calls.append(where)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(table, where, **kw)

    monkeypatch.setattr(pq, "write_table", full)


def _read_only_disk(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    import errno

    import pyarrow.parquet as pq

    def ro(table, where, **kw):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(pq, "write_table", ro)


_LOCKS: list = []


def _build_running(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """Another build holds the warehouse's build lock (flock is per open file, so this process counts)."""
    import fcntl

    fh = open(home / ".build.lock", "a")  # noqa: SIM115 - held until the test's end
    fcntl.flock(fh, fcntl.LOCK_EX)
    _LOCKS.append(fh)


def _second_classifier(home: Path, data: Path) -> None:
    write(home / "classifiers" / "other" / "meta.json", "{}")


def _mixture_file(name: str, text: str) -> Callable[[Path, Path], None]:
    """A documented-mixture file beside the lake (`{home}/<name>`), for `mixture documented add`."""
    return lambda home, data: write(home / name, text)


DOC_ADD = ["mixture", "documented", "add"]

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
    Case("sql reads a file next to the lake", ["sql", "select * from read_text('{home}/lake/../.build.lock')"],
         "reads only the warehouse", setup=lambda home, data: write(home / ".build.lock", "")),
    Case("sql reads through ..", ["sql", "select * from read_text('{home}/lake/../../../../../etc/hostname')"],
         "reads only the warehouse"),
    Case("sql glob of /", ["sql", "select * from glob('/*')"], "reads only the warehouse"),
    Case("sql pragma", ["sql", "pragma database_list"], "not PRAGMA"),
    Case("sql two statements, one a COPY", ["sql", "select 1; copy (select 1) to '{root}/x.csv'"], "not COPY"),
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
    Case("generate: unknown prompt style", ["generate", "--model", "m", "--corpus", "mini", "--preset", "llmsurgeon",
                                            "--style", "poetic"], "unknown style 'poetic'"),
    Case("generate: --style without the llmsurgeon preset", ["generate", "--model", "m", "--corpus", "mini",
                                                             "--preset", "neutral", "--style", "coding"],
         "--style is for --preset llmsurgeon"),
    Case("generate: unknown corpus", ["generate", "--model", "m", "--corpus", "nope"], "nope"),
    Case("generate: model not found", ["generate", "--model", "{root}/no-model", "--corpus", "mini",
                                       "--settings", "unconditional"], "no model folder at"),
    Case("generate: relative model folder not found", ["generate", "--model", "./no/such/folder", "--corpus", "mini"],
         "no model folder at"),
    Case("build: --select matches nothing", ["build", "--select", "nosuch_model"], "--select nosuch_model matches no"),
    # -- mixture documented add -------------------------------------------------------------------------
    Case("documented mixture: no file", [*DOC_ADD, "{root}/none.csv", "--model", "m"], "none.csv not found"),
    Case("documented mixture: unknown suffix", [*DOC_ADD, "{data}/afile", "--model", "m"], "is a .csv"),
    Case("documented mixture: unknown column", [*DOC_ADD, "{home}/m.csv", "--model", "m"], "unknown field(s) 'pct'",
         setup=_mixture_file("m.csv", "domain,share,pct\ncode,1,100\n")),
    Case("documented mixture: no share column", [*DOC_ADD, "{home}/m.csv", "--model", "m"], "missing 'share'",
         setup=_mixture_file("m.csv", "domain,weight\ncode,1\n")),
    Case("documented mixture: negative share", [*DOC_ADD, "{home}/m.csv", "--model", "m"], "finite number >= 0",
         setup=_mixture_file("m.csv", "domain,share\ncode,1.2\nweb,-0.2\n")),
    Case("documented mixture: share not a number", [*DOC_ADD, "{home}/m.csv", "--model", "m"], "must be a number",
         setup=_mixture_file("m.csv", "domain,share\ncode,half\n")),
    Case("documented mixture: all zero", [*DOC_ADD, "{home}/m.csv", "--model", "m"], "every share is 0",
         setup=_mixture_file("m.csv", "domain,share\ncode,0\nweb,0\n")),
    Case("documented mixture: domain twice", [*DOC_ADD, "{home}/m.csv", "--model", "m"], "appears twice",
         setup=_mixture_file("m.csv", "domain,share\ncode,0.5\nCode,0.5\n")),
    Case("documented mixture: YAML item without share", [*DOC_ADD, "{home}/m.yaml", "--model", "m"],
         "item 1: missing 'share'", setup=_mixture_file("m.yaml", "- {domain: code}\n")),
    Case("documented mixture: not YAML", [*DOC_ADD, "{home}/m.yaml", "--model", "m"], "is not valid YAML",
         setup=_mixture_file("m.yaml", "a: [1, 2\n")),
    Case("documented mixture: seed model in other case", [*DOC_ADD, "{home}/m.csv", "--model", "olmo-1b"],
         "the seed documents this model as 'OLMo-1B'", setup=_mixture_file("m.csv", "domain,share\nWeb,1\n")),
    Case("classify train: no references", ["classify", "train"], "reference"),
    Case("classify score: no classifier", ["classify", "score", "--run", "r1"], "no classifier"),
    Case("score: nothing to score", ["score", "--model", "m"], "--reference and/or --run"),
    Case("score: bad device", ["score", "--model", "m", "--run", "r1", "--device", "tpu"], "--device"),
    Case("score: unknown scoring convention", ["score", "--model", "m", "--reference", "--scoring", "theirs"],
         "unknown scoring convention 'theirs'"),
    Case("score: no references", ["score", "--model", "m", "--reference"], "no reference documents"),
    Case("reference import: no file", ["reference", "import", "{root}/none.jsonl"], "none.jsonl"),
    Case("build: a broken lake partition", ["build"], "broken.parquet is unreadable", setup=_broken_partition),
    Case("import: seed 1e23", [*IMPORT, "{data}/seed_1e23.jsonl", "--run-id", "x", *GEN_OPTS],
         "larger than the warehouse stores"),
    Case("import: seed 2**63", [*IMPORT, "{data}/seed_2_63.jsonl", "--run-id", "x", *GEN_OPTS],
         "larger than the warehouse stores"),
    Case("import: sample_idx 2**31", [*IMPORT, "{data}/sample_idx_2_31.jsonl", "--run-id", "x", *GEN_OPTS],
         "larger than the warehouse stores"),
    Case("import: negative seed", [*IMPORT, "{data}/seed_negative.jsonl", "--run-id", "x", *GEN_OPTS],
         "must be a non-negative integer"),
    Case("import: seed that is text", [*IMPORT, "{data}/seed_text.jsonl", "--run-id", "x", *GEN_OPTS], "'seed'"),
    Case("import: lone surrogate in text", [*IMPORT, "{data}/surrogate_text.jsonl", "--run-id", "x", *GEN_OPTS],
         "has a character with no UTF-8 form"),
    Case("import: lone surrogate in prompt", [*IMPORT, "{data}/surrogate_prompt.jsonl", "--run-id", "x", *GEN_OPTS],
         "has a character with no UTF-8 form"),
    Case("import: text is a number", [*IMPORT, "{data}/text_number.jsonl", "--run-id", "x", *GEN_OPTS],
         "'text' must be a string"),
    Case("import: no text", [*IMPORT, "{data}/no_text.jsonl", "--run-id", "x", *GEN_OPTS], "missing 'text'"),
    Case("import: not JSON", [*IMPORT, "{data}/not_json.jsonl", "--run-id", "x", *GEN_OPTS], "not_json.jsonl"),
    Case("import: duplicate sample", [*IMPORT, "{data}/dup_sample.jsonl", "--run-id", "x", *GEN_OPTS],
         "duplicate (prompt_id=p, sample_idx=0)"),
    Case("import: one prompt id, two texts", [*IMPORT, "{data}/two_prompt_texts.jsonl", "--run-id", "x", *GEN_OPTS],
         "has two different prompt texts"),
    Case("import: empty file", [*IMPORT, "{data}/empty.jsonl", "--run-id", "x", *GEN_OPTS], "no generations found"),
    Case("import: disk full", [*IMPORT, "{data}/gens.jsonl", "--run-id", "x", *GEN_OPTS],
         "No space left on device", fault=_disk_full),
    Case("import: disk full after the prompts", [*IMPORT, "{data}/with_prompts.jsonl", "--run-id", "x", *GEN_OPTS],
         "No space left on device", fault=_disk_full_after_prompts),
    Case("import: disk full on a re-import", [*IMPORT, "{data}/gens.jsonl", "--run-id", "r1", *GEN_OPTS],
         "No space left on device", fault=_disk_full),
    Case("import: read-only warehouse", [*IMPORT, "{data}/gens.jsonl", "--run-id", "x", *GEN_OPTS],
         "Read-only file system", fault=_read_only_disk),
    Case("prompts build: disk full", ["prompts", "build", "--corpus", "mini", "--setting", "unconditional",
                                      "--n", "3"], "No space left on device", fault=_disk_full),
    Case("trace: a broken lake partition", ["trace", "--run", "r1", "--corpus", "mini"], "broken.parquet",
         setup=_broken_generations),
    Case("build: a data test fails (exit 1)", ["build", "-s", "stg_generations", "-s", "stg_runs", "-s", "stg_prompts"],
         "dbt build FAILED", rc=1, setup=_duplicate_generations),
    Case("build: another build is running", ["build"], "another `lmaudit build` is running", fault=_build_running),
    Case("demo: unknown size", ["demo", "--size", "huge"], "unknown size 'huge'"),
    Case("report: --out under a file", ["report", "--out", "{data}/afile/sub"], "cannot create this folder"),
    Case("report: --out in /proc", ["report", "--out", "/proc/lmaudit-report"], "cannot create this folder"),
    Case("warehouse under a file", ["init"], "which is a file", extra=["-w", "{data}/afile/wh"]),
    Case("warehouse cannot be created", ["build"], "/proc/lmaudit-wh", extra=["-w", "/proc/lmaudit-wh"]),
    Case("trace: --workers beyond the machine", ["trace", "--run", "r1", "--corpus", "mini", "--workers", "100000"],
         "is more than this machine can run"),

]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_one_line_and_changes_nothing(case: Case, base, tmp_path, capsys, monkeypatch) -> None:
    # the copied warehouse's corpus points at the module's index; that is the one traced
    def release_locks() -> None:
        while _LOCKS:
            _LOCKS.pop().close()

    home = run_case(case, base, tmp_path, capsys, monkeypatch, cleanup=release_locks)
    assert not (home / "classifiers").exists() or case.setup is not _second_classifier or \
        (home / "classifiers" / "other" / "meta.json").exists()


def test_the_catalogue_is_long_enough() -> None:
    assert len(CASES) >= 60


# -- faults that need a process boundary -------------------------------------------------------------------

def _lmaudit(*args: str, home: Path, env: dict | None = None) -> "subprocess.CompletedProcess[str]":
    """The installed `lmaudit` script (the real entry point), as a user or cron runs it."""
    import sys

    exe = Path(sys.executable).parent / "lmaudit"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "ingest.cli.main"]
    return subprocess.run([*cmd, "-w", str(home), *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200", **(env or {})})


def _one_error_line(p, rc: int, message: str) -> None:
    assert p.returncode == rc, (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr + p.stdout
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], p.stderr


@pytest.mark.parametrize("args,message", [
    (["--nope"], "No such option: --nope"),
    (["frobnicate"], "No such command 'frobnicate'"),
    (["import", "generations"], "Missing argument 'file'"),
    (["trace", "--run", "r1", "--workers", "abc"], "Invalid value for '--workers'"),
])
def test_usage_errors_through_the_real_entry_point(args, message, base) -> None:
    _one_error_line(_lmaudit(*args, home=base["home"]), 2, message)


def test_random_suffix_array_bytes_are_one_line_not_sigbus(base, tmp_path) -> None:
    """Random bytes in table.0 used to end the process with SIGBUS (exit -7) and no message."""
    home = tmp_path / "wh"
    shutil.copytree(base["home"], home)
    shutil.copytree(base["idx"], tmp_path / "idx")
    _damaged_index("random-table")(home, base["data"])
    before = lake_digest(home)
    _one_error_line(_lmaudit("trace", "--run", "r1", "--index", str(tmp_path / "idx-bad"), home=home), 2,
                    "table.0")
    assert lake_digest(home) == before


def test_build_and_export_stops_after_a_failed_build(base, tmp_path) -> None:
    """The README's cron line `build && export`: a failed build exits 1, so nothing is exported."""
    import subprocess
    import sys

    home = tmp_path / "wh"
    shutil.copytree(base["home"], home)
    _duplicate_generations(home, base["data"])
    exe = Path(sys.executable).parent / "lmaudit"
    if not exe.exists():
        pytest.skip("the lmaudit script is not installed")
    p = subprocess.run(["sh", "-c", f'"{exe}" -w "{home}" build -s stg_generations -s stg_runs -s stg_prompts && '
                                    f'"{exe}" -w "{home}" export --format csv'], capture_output=True, text=True)
    _one_error_line(p, 1, "dbt build FAILED")
    assert "unique_stg_generations_generation_id" in p.stdout + p.stderr
    assert not (home / "exports").exists()
    log = home / "dbt" / "logs" / "dbt.log"  # the error line sends the user there: it must exist
    assert str(log) in p.stderr and "unique_stg_generations_generation_id" in log.read_text()


def test_a_blank_index_name_publishes_nothing_and_the_retry_works(base, tmp_path, capsys) -> None:
    home, out = tmp_path / "wh", tmp_path / "new-idx"
    shutil.copytree(base["home"], home)
    corpus = str(base["data"] / "corpus.jsonl")
    assert run(["-w", str(home), "index", "build", corpus, "--tokenizer", "bytes", "--out", str(out),
                "--name", "  "]) == 2
    assert not out.exists()
    assert run(["-w", str(home), "index", "build", corpus, "--tokenizer", "bytes", "--out", str(out),
                "--name", "mini2"]) == 0


def test_sql_prints_values_that_look_like_markup(base, tmp_path, capsys) -> None:
    """A value or column name like '[/x]' is data: it once crashed the table printer (rich MarkupError)."""
    home = tmp_path / "wh"
    shutil.copytree(base["home"], home)
    capsys.readouterr()
    assert run(["-w", str(home), "sql", "select '[/x]' as \"[b]\", '[red]' as c"]) == 0
    out = capsys.readouterr().out
    assert "[/x]" in out and "[b]" in out and "[red]" in out


def test_sql_with_no_rows_prints_the_header_and_0_rows(base, tmp_path, capsys) -> None:
    """An empty result printed nothing at all, which reads as a failure (or as a hang)."""
    home = tmp_path / "wh"
    shutil.copytree(base["home"], home)
    capsys.readouterr()
    assert run(["-w", str(home), "sql", "select run_id, model from stg_runs where false"]) == 0
    out = capsys.readouterr().out
    assert "run_id" in out and "model" in out and out.strip().endswith("0 rows")


# -- a crash at every point of a multi-table write ------------------------------------------------------------

_KILL_AT_NTH_RENAME = """
import os, signal, sys
n, calls, real = int(sys.argv[1]), [0], os.replace
def replace(a, b):
    calls[0] += 1
    if calls[0] == n:
        os.kill(os.getpid(), signal.SIGKILL)  # kill -9: no cleanup, no finally
    return real(a, b)
os.replace = replace
from ingest.cli.main import run
sys.exit(run(sys.argv[2:]))
"""


def _visible(home: Path) -> dict:
    """What the next command sees of the tables an import writes (it finishes a half-applied commit first)."""
    from ingest.lake import Lake

    lake = Lake(home)
    runs = {r["run_id"]: (r["model"], r["sampling_params"]) for r in lake.read("runs").to_pylist()}
    return {
        "runs": runs,
        "generations": sorted((r["generation_id"], r["run_id"], r["text"]) for r in lake.read("generations").to_pylist()
                              if r["run_id"] in runs),  # what stg_generations shows
        "all_generations": sorted((r["generation_id"], r["text"]) for r in lake.read("generations").to_pylist()),
        "prompts": sorted((r["prompt_id"], r["text"]) for r in lake.read("prompts").to_pylist()),
    }


@pytest.mark.parametrize("run_id", ["new", "r1"], ids=["first import", "re-import with new texts"])
def test_kill_9_at_every_rename_of_an_import_leaves_all_or_nothing(base, tmp_path, run_id) -> None:
    import subprocess
    import sys

    src = tmp_path / "gens.jsonl"
    src.write_text("".join(json.dumps({"text": f"kill test {i}", "prompt": f"prompt {i % 2}"}) + "\n" for i in range(4)))
    args = ["import", "generations", str(src), "--run-id", run_id, "--model", "m2", "--setting", "generic"]
    before_home = tmp_path / "before"
    shutil.copytree(base["home"], before_home)
    before = _visible(before_home)
    after_home = tmp_path / "after"
    shutil.copytree(base["home"], after_home)
    assert run(["-w", str(after_home), *args]) == 0
    after = _visible(after_home)
    assert after != before
    outcomes = []
    for n in range(1, 40):
        home = tmp_path / f"k{n}"
        shutil.copytree(base["home"], home)
        p = subprocess.run([sys.executable, "-c", _KILL_AT_NTH_RENAME, str(n), "-w", str(home), *args],
                           capture_output=True, text=True)
        seen = _visible(home)
        # sampling_params of an import holds the file's hash: equal rows mean the same import
        assert seen in (before, after), (n, p.returncode, p.stderr[-500:])
        outcomes.append(seen == after)
        shutil.rmtree(home)
        if p.returncode == 0:
            break
        assert p.returncode == -9, p.stderr[-500:]
    else:
        pytest.fail("the import never finished")
    assert len(outcomes) >= 6 and not outcomes[0] and outcomes[-1]  # prompts, generations, runs: staged and applied


class _FakeBackend:
    """Deterministic text per (key, seed); no model."""

    name = "fake"

    def generate(self, requests, sampling):
        from ingest.generate.backends import GenOutput

        return [GenOutput(r.key, (1, 2, 3), f"text {r.key[:8]} {r.seed}", "length") for r in requests]


_KILL_GENERATE = """
import os, signal, sys
sys.path.insert(0, sys.argv[3])
from test_bad_inputs import _FakeBackend, _generate
from ingest.lake import Lake
real = Lake.write
n, calls = int(sys.argv[2]), [0]
def write(self, table, *a, **k):
    calls[0] += 1
    if calls[0] == n:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(self, table, *a, **k)
Lake.write = write
_generate(sys.argv[1])
"""


def _generate(home: str, top_p: float = 0.95) -> None:
    from ingest.generate.backends import SamplingConfig
    from ingest.generate.runner import PromptUnit, RunSpec, run_generation
    from ingest.lake import Lake

    units = [PromptUnit(f"p{i}", (0, 1), 3) for i in range(4)]  # 12 samples, chunks of 5: 3 chunks
    spec = RunSpec("gen", "m", "unconditional", "fake", None, SamplingConfig(top_p=top_p), chunk_size=5)
    run_generation(Lake(home), _FakeBackend(), spec, units, progress=False)


def test_kill_9_between_generate_chunks_commits_nothing_until_the_rerun(base, tmp_path) -> None:
    import subprocess
    import sys

    for n in (1, 2, 3, 4):  # after 0..2 chunks, and after every chunk but before the runs row
        home = tmp_path / f"g{n}"
        shutil.copytree(base["home"], home)
        before = _visible(home)
        p = subprocess.run([sys.executable, "-c", _KILL_GENERATE, str(home), str(n), str(Path(__file__).parent)],
                           capture_output=True, text=True)
        assert p.returncode == -9, p.stderr[-800:]
        seen = _visible(home)
        assert seen["runs"] == before["runs"] and seen["generations"] == before["generations"]
        if n == 4:
            _generate(str(home), top_p=0.5)  # another run under the same id: the stale chunks are not reused
            seen = _visible(home)
            gens = [g for g in seen["generations"] if g[1] == "gen"]
            assert len(gens) == 12 and "gen" in seen["runs"]
            assert json.loads(seen["runs"]["gen"][1])["top_p"] == 0.5
        shutil.rmtree(home)
