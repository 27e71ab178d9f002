"""The CLI's one error path, through the real entry point: usage and user errors are one line and exit 2, a
failed build exits non-zero, an unexpected error is one line naming where its traceback was written."""

from __future__ import annotations

import pytest

from conftest import run_cli

USAGE = [
    (["--nope"], "No such option: --nope"),
    (["frobnicate"], "No such command 'frobnicate'"),
    (["import", "generations"], "Missing argument 'file'"),
    (["trace", "--workers", "abc"], "Invalid value for '--workers'"),
    (["sql"], "Missing argument 'query'"),
    (["generate", "--model"], "Option '--model' requires an argument"),
]


@pytest.mark.parametrize("args,message", USAGE)
def test_usage_errors_are_one_line_and_exit_2(args, message, tmp_path) -> None:
    p = run_cli(*args, home=tmp_path / "wh")
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], p.stderr
    assert "Traceback" not in p.stderr + p.stdout and "--help" in lines[0]


def test_a_failed_build_exits_non_zero_and_names_the_broken_file(tmp_path) -> None:
    home = tmp_path / "wh"
    run_cli("init", home=home, check=True)
    broken = home / "lake" / "runs" / "broken.parquet"
    broken.write_bytes(b"PAR1 this is not a parquet file")
    p = run_cli("build", home=home)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert str(broken) in p.stderr and p.stderr.count("\n") <= 2  # one line (rich may wrap it once)


def test_an_unexpected_error_is_one_line_with_the_traceback_in_the_warehouse(tmp_path, monkeypatch, capsys) -> None:
    from ingest.cli.main import run
    from ingest.lake import Lake

    def boom(self):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(Lake, "init", boom)
    monkeypatch.setattr("sys.argv", ["lmaudit", "--warehouse", str(tmp_path / "wh"), "init"])
    rc = run(["--warehouse", str(tmp_path / "wh"), "init"])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err
    assert "unexpected RuntimeError: simulated bug" in err and "traceback is in" in err
    logs = list((tmp_path / "wh" / "logs").glob("lmaudit-crash-*.log"))
    assert len(logs) == 1 and "simulated bug" in logs[0].read_text() and "Traceback" in logs[0].read_text()


@pytest.fixture(scope="module")
def built_warehouse(tmp_path_factory):
    home = tmp_path_factory.mktemp("sqlguard") / "wh"
    run_cli("init", home=home, check=True)
    run_cli("build", "--select", "stg_runs", home=home, check=True)
    return home


@pytest.mark.parametrize("query,message", [
    ("select * from read_csv('/etc/passwd')", "reads only the warehouse"),
    ("copy (select 1) to '{lake}/runs/evil.parquet'", "not COPY"),
    ("copy (select 1) to '/tmp/lmaudit-evil.csv'", "not COPY"),
    ("attach '/tmp/lmaudit-other.db'", "not ATTACH"),
    ("set enable_external_access = true", "not SET"),
    ("install httpfs", "not LOAD"),
    ("export database '/tmp/lmaudit-export'", "not EXPORT"),
    ("", "the query is empty"),
])
def test_sql_cannot_read_or_write_outside_the_warehouse(built_warehouse, query, message) -> None:
    import hashlib

    lake = built_warehouse / "lake"
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in lake.rglob("*") if p.is_file()}
    p = run_cli("sql", query.format(lake=lake), home=built_warehouse)
    assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr, p.stderr
    after = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in lake.rglob("*") if p.is_file()}
    assert before == after
    ok = run_cli("sql", "select count(*) as n from stg_runs", home=built_warehouse)
    assert ok.returncode == 0 and "0" in ok.stdout  # the staging views still read the lake


@pytest.mark.parametrize("name", [".", "..", "a/b", "../x", " x", "x\n", "", "a\x00b"])
def test_bad_names_are_refused_before_anything_is_written(name, tmp_path) -> None:
    import hashlib

    from ingest.errors import UserError
    from ingest.names import check_name

    with pytest.raises(UserError):
        check_name("classifier name", name)
    home = tmp_path / "wh"
    run_cli("init", home=home, check=True)
    keep = home / "classifiers" / "other" / "meta.json"
    keep.parent.mkdir(parents=True)
    keep.write_text("{}")
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in home.rglob("*") if p.is_file()}
    if "\x00" not in name:  # argv cannot carry NUL
        p = run_cli("classify", "train", "--name", name, home=home)
        assert p.returncode == 2 and p.stderr.startswith("error:") and "Traceback" not in p.stderr, p.stderr
        p = run_cli("import", "generations", str(tmp_path / "none.jsonl"), "--run-id", name, "--model", "m",
                    "--setting", "unconditional", home=home)
        assert p.returncode == 2 and "Traceback" not in p.stderr
    after = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in home.rglob("*") if p.is_file()}
    assert before == after and keep.exists()


def test_good_names_pass() -> None:
    from ingest.names import check_name

    for ok in ("olmo-7b", "sandbox-tiny-unconditional", "a.b_c+d", "ünïcode", "x" * 200):
        assert check_name("run id", ok) == ok


def test_an_import_that_dies_before_its_runs_row_leaves_nothing_visible(tmp_path, monkeypatch) -> None:
    import duckdb

    from ingest.build import build
    from ingest.home import db_path
    from ingest.importers.generations import import_generations
    from ingest.lake import Lake

    home = tmp_path / "wh"
    lake = Lake(home)
    f = tmp_path / "g.jsonl"
    f.write_text('{"text": "a", "prompt": "p"}\n{"text": "b", "prompt": "p"}\n')
    real = Lake.write

    def dies_at_the_runs_row(self, table, *a, **k):
        if table == "runs":
            raise SystemExit("killed")  # what a kill -9 leaves: the earlier partitions, not this one
        return real(self, table, *a, **k)

    monkeypatch.setattr(Lake, "write", dies_at_the_runs_row)
    with pytest.raises(SystemExit):
        import_generations(lake, f, run_id="r", model="m", setting="generic")
    monkeypatch.setattr(Lake, "write", real)
    # one transaction: the staged prompts and generations went with it
    assert lake.read("generations").num_rows == 0 and lake.read("runs").num_rows == 0
    assert build(home, select=["stg_generations", "stg_runs", "stg_prompts"], progress=False).success
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        assert con.execute("select count(*) from stg_generations").fetchone()[0] == 0
    import_generations(lake, f, run_id="r", model="m", setting="generic")  # the re-run commits it
    assert build(home, select=["stg_generations", "stg_runs", "stg_prompts"], progress=False).success
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        assert con.execute("select count(*) from stg_generations").fetchone()[0] == 2


def test_a_full_disk_is_one_line_and_leaves_no_partial_file(tmp_path, monkeypatch) -> None:
    import errno

    import pyarrow.parquet as pq

    from ingest.errors import UserError
    from ingest.importers.generations import import_generations
    from ingest.lake import Lake

    lake = Lake(tmp_path / "wh")
    lake.init()
    f = tmp_path / "g.jsonl"
    f.write_text('{"text": "a"}\n')

    def full(table, where, **k):
        open(where, "wb").write(b"PAR1 half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pq, "write_table", full)
    with pytest.raises(UserError, match="No space left on device"):
        import_generations(lake, f, run_id="r", model="m", setting="unconditional")
    leftovers = [p for p in (tmp_path / "wh" / "lake").rglob("*") if p.is_file() and "_schema" not in p.name]
    assert leftovers == []


def test_a_second_build_on_the_same_warehouse_stops_at_once(tmp_path) -> None:
    from ingest.build import build_lock

    home = tmp_path / "wh"
    run_cli("init", home=home, check=True)
    with build_lock(home):  # a build in progress
        p = run_cli("build", home=home)
    assert p.returncode == 2 and "another `lmaudit build` is running" in p.stderr
    assert p.stderr.count("\n") <= 2 and "Traceback" not in p.stderr + p.stdout


def test_warehouse_option_after_the_subcommand_means_the_same() -> None:
    from ingest.cli.main import hoist_warehouse

    assert hoist_warehouse(["demo", "--size", "tiny", "--warehouse", "/w"]) == \
        ["--warehouse", "/w", "demo", "--size", "tiny"]
    assert hoist_warehouse(["sql", "select 1", "-w", "/w"]) == ["-w", "/w", "sql", "select 1"]
    assert hoist_warehouse(["-w", "/w", "build"]) == ["-w", "/w", "build"]
    assert hoist_warehouse(["build", "--warehouse=/w"]) == ["--warehouse=/w", "build"]
    assert hoist_warehouse(["sql", "--", "-w", "x"]) == ["sql", "--", "-w", "x"]
