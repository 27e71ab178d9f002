"""The lake writer: round trip, replace-not-duplicate, atomicity under a crash."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import duckdb
import pyarrow as pa
import pytest

from ingest.lake import TABLES, Lake, make_key, partition_name


def _gen_rows(run: str, n: int) -> list[dict]:
    return [{"generation_id": make_key(run, None, i), "run_id": run, "prompt_id": None, "sample_idx": i,
             "seed": 42 + i, "text": f"sample {i} é ✓", "n_tokens": i, "finish_reason": "length"} for i in range(n)]


def _count(lake: Lake, table: str) -> int:
    return duckdb.connect().execute(f"select count(*) from read_parquet('{lake.glob(table)}', union_by_name = true)").fetchone()[0]


def test_every_table_has_a_zero_row_schema_file(lake: Lake) -> None:
    for name, s in TABLES.items():
        assert _count(lake, name) == 0
        cols = duckdb.connect().sql(f"select * from read_parquet('{lake.glob(name)}', union_by_name = true)").columns
        assert cols == s.schema.names


def test_round_trip_preserves_values_and_types(lake: Lake) -> None:
    rows = _gen_rows("r1", 5)
    lake.write("generations", "r1", rows)
    back = lake.read("generations").to_pylist()
    assert back == rows
    # and DuckDB, the reader dbt uses, sees the same rows
    got = duckdb.connect().execute(f"select generation_id, text from read_parquet('{lake.glob('generations')}', union_by_name=true) "
                     "order by sample_idx").fetchall()
    assert got == [(r["generation_id"], r["text"]) for r in rows]


def test_rewriting_a_partition_replaces_it(lake: Lake) -> None:
    lake.write("generations", "r1", _gen_rows("r1", 5))
    lake.write("generations", "r1", _gen_rows("r1", 5))
    lake.write("generations", "r2", _gen_rows("r2", 3))
    assert _count(lake, "generations") == 8
    assert lake.partitions("generations") == ["r1", "r2"]
    assert lake.is_done("generations", "r1")


def test_required_columns_and_duplicate_keys_are_refused(lake: Lake) -> None:
    bad = _gen_rows("r1", 2)
    bad[1]["text"] = None
    with pytest.raises(ValueError, match="text must not be null"):
        lake.write("generations", "r1", bad)
    dup = _gen_rows("r1", 2)
    dup[1]["generation_id"] = dup[0]["generation_id"]
    with pytest.raises(ValueError, match="duplicate"):
        lake.write("generations", "r1", dup)
    wrong_type = _gen_rows("r1", 1)
    wrong_type[0]["sample_idx"] = "zero"
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError)):
        lake.write("generations", "r1", wrong_type)
    assert _count(lake, "generations") == 0


def test_failure_before_rename_leaves_nothing_visible(lake: Lake, monkeypatch) -> None:
    lake.write("generations", "r1", _gen_rows("r1", 2))
    import ingest.lake.writer as w

    def boom(*a, **k):
        raise OSError("disk vanished")

    monkeypatch.setattr(w.os, "replace", boom)
    with pytest.raises(OSError):
        lake.write("generations", "r1", _gen_rows("r1", 7))
    monkeypatch.undo()
    assert _count(lake, "generations") == 2  # the old partition is intact, the new one never appeared
    assert not list((lake.root / "_tmp").glob("*.tmp"))


def test_killed_process_between_write_and_rename(lake: Lake) -> None:
    """A hard crash (os._exit, no cleanup) after the bytes are written but before the rename."""
    script = textwrap.dedent(f"""
        import os, ingest.lake.writer as w
        from ingest.lake import Lake, make_key
        real = os.replace
        def crash(src, dst):
            if str(dst).endswith('crash.parquet'):
                os._exit(9)
            return real(src, dst)
        w.os.replace = crash
        rows = [dict(generation_id=make_key(i), run_id='r', prompt_id=None, sample_idx=i, seed=None,
                     text='x', n_tokens=None, finish_reason=None) for i in range(100)]
        Lake({str(lake.home)!r}).write('generations', 'crash', rows)
    """)
    proc = subprocess.run([sys.executable, "-c", script])
    assert proc.returncode == 9
    assert list((lake.root / "_tmp").glob("*.tmp")), "the crash should have left its temporary file"
    assert "crash" not in lake.partitions("generations")
    assert not lake.is_done("generations", "crash")
    assert _count(lake, "generations") == 0
    # resuming writes the partition once
    lake.write("generations", "crash", _gen_rows("r", 4))
    assert _count(lake, "generations") == 4
    assert lake.clean_tmp(older_than_s=0) == 1


def test_keys_are_deterministic_and_distinguish_none() -> None:
    assert make_key("a", 1) == make_key("a", 1)
    assert make_key("a", None) != make_key("a", "")
    assert make_key("a", 1) != make_key("a", "1")
    assert len(make_key("x")) == 32


def test_partition_names_are_safe_and_unique() -> None:
    assert partition_name("run", "abc") == "run--abc"
    a, b = partition_name("run", "a/b"), partition_name("run", "a_b")
    assert "/" not in a and a != b
