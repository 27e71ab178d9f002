"""The build's memory budget (ingest/build_memory.py): sizes read as a person writes them, a bad value is one
line, and dbt's DuckDB really opens with the limit and a spill folder inside the warehouse, removed after."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.build_memory import (DEFAULT_SHARE, DUCKDB_SHARE, ENV_MEMORY, MIN_BUDGET, BuildMemory, build_memory,
                                  duckdb_config, machine_memory, parse_size, spill_dir)
from ingest.errors import UserError

GIB = 1 << 30


@pytest.mark.parametrize("text, expected", [
    ("6GB", 6_000_000_000), ("6 GiB", 6 * GIB), ("6000MB", 6_000_000_000), ("6g", 6_000_000_000),
    ("1.5GiB", 3 * GIB // 2), ("512MiB", 512 << 20), ("2048", 2048), ("25%", 4 * GIB), ("100 %", 16 * GIB),
])
def test_sizes_as_written(text: str, expected: int) -> None:
    assert parse_size(text, machine=16 * GIB) == expected


@pytest.mark.parametrize("text", ["", "six", "6XB", "-1GB", "0%", "150%", "6 G B"])
def test_bad_sizes_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_size(text, machine=16 * GIB)


def test_the_default_is_a_share_of_the_machine() -> None:
    machine, _ = machine_memory()
    meminfo = next(int(line.split()[1]) * 1024 for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal:"))
    assert 0 < machine <= meminfo
    mem = build_memory({})
    assert mem.budget == max(MIN_BUDGET, int(machine * DEFAULT_SHARE))
    assert mem.duckdb_limit == int(mem.budget * DUCKDB_SHARE) < mem.budget


def test_the_env_var_sets_the_budget(tmp_path: Path) -> None:
    mem = build_memory({ENV_MEMORY: "4GiB"})
    assert mem == BuildMemory(4 * GIB, f"${ENV_MEMORY}=4GiB")
    config = duckdb_config(tmp_path, mem)
    assert config == {"memory_limit": f"{int(4 * GIB * DUCKDB_SHARE) >> 20}MiB",
                      "temp_directory": str(tmp_path / "dbt" / "spill")}


@pytest.mark.parametrize("value", ["lots", "100MB", "0%"])
def test_a_bad_env_var_is_one_line(value: str) -> None:
    with pytest.raises(UserError) as e:
        build_memory({ENV_MEMORY: value})
    msg = str(e.value)
    assert ENV_MEMORY in msg and "\n" not in msg and ("6GB" in msg or "512MiB" in msg)


def test_a_bad_env_var_stops_the_build_before_dbt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ingest.build import build

    monkeypatch.setenv(ENV_MEMORY, "plenty")
    with pytest.raises(UserError, match=ENV_MEMORY):
        build(tmp_path / "wh", progress=False)
    assert not (tmp_path / "wh" / "lmaudit.duckdb").exists()


@pytest.mark.slow
def test_dbt_opens_duckdb_with_the_limit_and_the_spill_folder(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from ingest.build import run_dbt

    home = tmp_path / "wh"
    monkeypatch.setenv(ENV_MEMORY, "2GiB")
    res = run_dbt(home, ["show", "--inline", "select current_setting('memory_limit') as m, "
                         "current_setting('temp_directory') as t", "--output", "json"])
    assert res.success, res.exception
    row = res.result.results[0].agate_table.rows[0]
    expected_mib = int(2 * GIB * DUCKDB_SHARE) >> 20
    value, unit = row["m"].split()  # DuckDB prints it in GiB with one decimal, cut off
    assert unit == "GiB" and 0 <= expected_mib / 1024 - float(value) < 0.1
    assert row["t"] == str(spill_dir(home))
    assert not spill_dir(home).exists()  # removed after dbt
