"""Damaged indexes and malformed input files (issue 33, items 4 and 6): each is a one-line error, exit 2, no
traceback, and a lake byte-for-byte what it was before.

As in test_bad_inputs.py, every case runs the real command line (`ingest.cli.main.run`) in this process against
a copy of one small warehouse: a byte-level index of 60 documents, its registered corpus and an imported run.
Index damage is made on a copy of the index (`{root}/idx-bad`), each kind as a user or a disk makes it: a file
missing, zeroed, overwritten with random bytes, cut short, or one suffix-array entry moved where no spot check
looks. Two cases need a process boundary: a file truncated while a process has it mapped (SIGBUS), and the
re-run after it.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from bad_input_catalogue import Case, lake_digest, run_case, write
from conftest import byte_level_bpe

from ingest.cli.main import run


SPAN = "the quick brown fox number 3 jumps"


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("badidx")
    data = root / "data"
    docs = [{"text": f"document {i}: the quick brown fox number {i} jumps over the lazy dog " * 3, "id": f"d{i}"}
            for i in range(60)]
    write(data / "corpus.jsonl", "".join(json.dumps(d) + "\n" for d in docs))
    write(data / "gens.jsonl", "".join(json.dumps({"text": t}) + "\n" for t in [SPAN, "something else"]))
    refs = "".join(json.dumps({"text": f"reference text {i}", "domain": f"d{i % 2}"}) + "\n" for i in range(20))
    # a gzip file whose deflate stream is damaged (zlib.error), not only its checksum (gzip.BadGzipFile)
    z = bytearray(gzip.compress(refs.encode() * 50, mtime=0))
    for k in range(20, len(z) - 20, 97):
        z[k] ^= 0x5A
    with pytest.raises(zlib.error):
        gzip.decompress(bytes(z))
    write(data / "corrupt.jsonl.gz", bytes(z))
    deep = "[" * 100_000 + "]" * 100_000
    lines = {
        "deep_gen": f'{{"text": "a", "x": {deep}}}',
        "deep_ref": f'{{"text": "a", "domain": {deep}}}',
        "bigint_gen": '{"text": "a", "seed": ' + "9" * 5000 + "}",
        "bigint_doc": '{"text": "a document", "n": ' + "7" * 5000 + "}",
        "surrogate_domain": refs + '{"text": "t", "domain": "d\\ud800"}',
        "surrogate_meta": '{"text": "a document", "source": "s\\udc00"}',
        "surrogate_key": '{"text": "a", "k\\ud800": 1}',
    }
    for name, body in lines.items():
        write(data / f"{name}.jsonl", body + "\n")
    tok = byte_level_bpe([d["text"] for d in docs], 300)
    tok.save(str(data / "tokenizer.json"))
    home = root / "wh"
    assert run(["-w", str(home), "index", "build", str(data / "corpus.jsonl"), "--tokenizer", "bytes",
                "--out", str(root / "idx"), "--name", "mini"]) == 0
    assert run(["-w", str(home), "import", "generations", str(data / "gens.jsonl"), "--run-id", "r1",
                "--model", "m", "--setting", "unconditional", "--corpus", "mini"]) == 0
    return {"root": root, "data": data, "home": home, "idx": root / "idx"}


def _moved_pointer(dst: Path, past_end: bool = False) -> None:
    """One suffix-array entry inside the span's rank range moved 40 bytes (or past the end of the tokens, where
    the C++ engine would read out of bounds): the open checks pass (asserted), the search still returns that
    rank, its document does not hold the span. Only a full scan finds this; the tracer must notice what it
    reads."""
    from ingest.index.build import ptr_size
    from ingest.index.engine import IndexEngine

    eng = IndexEngine([str(dst)])
    lo, hi = eng.find(list(SPAN.encode()))["segment_by_shard"][0]
    ps = ptr_size((dst / "tokenized.0").stat().st_size)
    eng.close()
    assert hi - lo == 3  # the span occurs three times in document 3
    raw = bytearray((dst / "table.0").read_bytes())
    r = lo + 1
    p = int.from_bytes(raw[r * ps:(r + 1) * ps], "little")
    size = (dst / "tokenized.0").stat().st_size
    raw[r * ps:(r + 1) * ps] = (size + 1000 if past_end else p + 40).to_bytes(ps, "little")
    (dst / "table.0").write_bytes(bytes(raw))
    eng = IndexEngine([str(dst)])  # opening runs the spot checks: they miss it
    got = eng.find_bytes(eng.ids_bytes(list(SPAN.encode())))["segment_by_shard"][0]
    eng.close()
    assert got[0] <= r < got[1]  # and the tracer will read that rank


def _damaged(file: str, how: str) -> Callable[[Path, Path], None]:
    def setup(home: Path, data: Path) -> None:
        src, dst = home.parent / "idx", home.parent / "idx-bad"
        shutil.copytree(src, dst)
        p = dst / file
        n = p.stat().st_size
        if how == "missing":
            p.unlink()
        elif how == "zeros":
            p.write_bytes(b"\0" * n)
        elif how == "random":
            p.write_bytes(random.Random(n).randbytes(n))
        elif how == "half":
            with open(p, "r+b") as f:
                f.truncate(n // 2)
        elif how == "n_docs":
            m = json.loads(p.read_text())
            m["n_docs"] += 1
            p.write_text(json.dumps(m))
        elif how in ("moved-pointer", "pointer-past-end"):
            _moved_pointer(dst, past_end=how == "pointer-past-end")
    return setup


TRACE_BAD = ["trace", "--run", "r1", "--index", "{root}/idx-bad"]
ATTACH_BAD = ["index", "attach", "{root}/idx-bad", "--tokenizer", "bytes", "--name", "bad"]
IMPORT = ["import", "generations"]
GEN_OPTS = ["--run-id", "x", "--model", "m", "--setting", "unconditional"]

# (file, damage, the message of the one line)
DAMAGE = [
    ("tokenized.0", "missing", "missing tokenized.0"),
    ("tokenized.0", "zeros", "does not start with a document separator"),
    ("tokenized.0", "half", "differ from the manifest"),
    ("table.0", "missing", "missing table.0"),
    ("table.0", "zeros", "table.0 holds the same position"),
    ("table.0", "random", "table.0 points outside tokenized.0"),
    ("table.0", "half", "the suffix array is truncated"),
    ("offset.0", "zeros", "offset.0 is not an increasing list"),
    ("offset.0", "random", "offset.0 is not an increasing list"),
    ("offset.0", "missing", "missing offset.0"),
    ("metadata.0", "zeros", "metadata line is not a JSON object"),
    ("metadata.0", "random", "metadata line is not a JSON object"),
    ("metadata.0", "half", "metadata.0 is shorter than metaoff.0"),
    ("metaoff.0", "zeros", "metaoff.0 is not an increasing list"),
    ("metaoff.0", "missing", "missing metaoff.0"),
    ("lmaudit-logprob.npy", "half", "lmaudit-logprob.npy is unreadable"),
    ("lmaudit-index.json", "n_docs", "n_docs differs"),
]


def _fake_no_cuda(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


CASES = [
    # -- item 4: damaged indexes, traced (the trace used to print "0 spans", write NULL doc ids, or crash) ------
    Case("trace: all-zero table.0", TRACE_BAD, "table.0 holds the same position", setup=_damaged("table.0", "zeros")),
    Case("trace: random offset.0", TRACE_BAD, "offset.0 is not an increasing list",
         setup=_damaged("offset.0", "random")),
    Case("trace: random metadata.0", TRACE_BAD, "metadata.0: document 0's metadata line is not a JSON object",
         setup=_damaged("metadata.0", "random")),
    Case("trace: all-zero metaoff.0", TRACE_BAD, "metaoff.0 is not an increasing list",
         setup=_damaged("metaoff.0", "zeros")),
    Case("trace: a moved suffix-array entry no spot check sees", TRACE_BAD,
         "table.0 is damaged (rank", setup=_damaged("table.0", "moved-pointer")),
    Case("trace: a suffix-array entry past the tokens", TRACE_BAD, "outside the tokens",
         setup=_damaged("table.0", "pointer-past-end")),
    Case("trace: the re-run after a truncation", TRACE_BAD, "differ from the manifest",
         setup=_damaged("tokenized.0", "half")),
    # -- item 4: `index attach` of a folder with a manifest checks every file --------------------------------
    *[Case(f"attach: {how} {file}", ATTACH_BAD, msg, setup=_damaged(file, how)) for file, how, msg in DAMAGE],
    # -- item 6: input files that Python reads but nothing can store --------------------------------------
    Case("import: corrupt .gz", [*IMPORT, "{data}/corrupt.jsonl.gz", *GEN_OPTS], "not a valid gzip file"),
    Case("reference import: corrupt .gz", ["reference", "import", "{data}/corrupt.jsonl.gz"], "not a valid gzip file"),
    Case("mixture tokenizer --reference: corrupt .gz",
         ["mixture", "tokenizer", "--tokenizer", "{data}/tokenizer.json", "--reference", "{data}/corrupt.jsonl.gz"],
         "not a valid gzip file"),
    Case("reference import: lone surrogate in a domain", ["reference", "import", "{data}/surrogate_domain.jsonl"],
         "'domain' has a character with no UTF-8 form"),
    Case("index build: lone surrogate in a metadata field",
         ["index", "build", "{data}/surrogate_meta.jsonl", "--tokenizer", "bytes", "--out", "{root}/idx-s"],
         "'source' has a character with no UTF-8 form"),
    Case("import: lone surrogate in a field name", [*IMPORT, "{data}/surrogate_key.jsonl", *GEN_OPTS],
         "has a character with no UTF-8 form"),
    Case("import: JSON nested 100,000 deep", [*IMPORT, "{data}/deep_gen.jsonl", *GEN_OPTS], "nested too deeply"),
    Case("reference import: JSON nested 100,000 deep", ["reference", "import", "{data}/deep_ref.jsonl"],
         "nested too deeply"),
    Case("import: a 5,000-digit integer", [*IMPORT, "{data}/bigint_gen.jsonl", *GEN_OPTS], "4300 digits"),
    Case("index build: a 5,000-digit integer",
         ["index", "build", "{data}/bigint_doc.jsonl", "--tokenizer", "bytes", "--out", "{root}/idx-i"], "4300 digits"),
    Case("score --device cuda without CUDA", ["score", "--model", "{root}/no-model", "--run", "r1", "--device", "cuda"],
         "no CUDA GPU is usable", fault=_fake_no_cuda),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_index_or_input_is_one_line_and_changes_nothing(case: Case, base, tmp_path, capsys, monkeypatch) -> None:
    home = run_case(case, base, tmp_path, capsys, monkeypatch)
    assert not (home / "indexes").exists()  # attach staged nothing


def test_attach_of_an_intact_folder_with_a_manifest_still_works(base, tmp_path) -> None:
    home = tmp_path / "wh"
    shutil.copytree(base["home"], home)
    shutil.copytree(base["idx"], tmp_path / "idx2")
    assert run(["-w", str(home), "index", "attach", str(tmp_path / "idx2"), "--tokenizer", "bytes", "--name", "again"]) == 0


_TRUNCATE_WHILE_MAPPED = """
import os, sys
from ingest.index.engine import IndexEngine
idx = sys.argv[1]
e = IndexEngine([idx])
q = e.ids_bytes(list(b"the quick brown fox"))
assert e.count_bytes(q) == 180, e.count_bytes(q)  # the compiled searches (and the SIGBUS handler) are loaded
for name in ("tokenized.0", "table.0"):  # another process rebuilds the index in place
    os.truncate(os.path.join(idx, name), 0)
e.count_bytes(e.ids_bytes(list(b"over the lazy dog")))
print("read past the end of a truncated map and lived")
"""


@pytest.mark.slow
def test_a_file_truncated_while_mapped_is_one_line_then_the_rerun_is_refused(base, tmp_path) -> None:
    """A truncated mapped file raises SIGBUS: it used to end the process with no message (exit -7)."""
    from ingest.index import sa_search

    if not sa_search.available():
        pytest.skip("the SIGBUS handler is compiled with numba")
    idx = tmp_path / "idx-live"
    shutil.copytree(base["idx"], idx)
    p = subprocess.run([sys.executable, "-c", _TRUNCATE_WHILE_MAPPED, str(idx)], check=False, capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[2])
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(idx) in lines[0] \
        and "SIGBUS" in lines[0] and "rebuild or re-attach" in lines[0], p.stderr
    # the next command refuses the index before reading it
    home = tmp_path / "wh"
    shutil.copytree(base["home"], home)
    before = lake_digest(home)
    q = subprocess.run([sys.executable, "-m", "ingest.cli.main", "-w", str(home), "trace", "--run", "r1", "--index",
                        str(idx)], check=False, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2],
                       env={**os.environ, "COLUMNS": "200"})
    lines = q.stderr.strip().splitlines()
    assert q.returncode == 2 and len(lines) == 1 and "tokenized.0 has 0 bytes" in lines[0] and "rebuild" in lines[0] \
        and "Traceback" not in q.stderr, q.stderr
    assert lake_digest(home) == before
