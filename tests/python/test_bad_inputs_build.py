"""Bad inputs and races around the build and its readers (issue 33 items 5, 7, 8, 9), in the style of
test_bad_inputs.py: every refused command is one `error:` line with exit 2, no traceback, and leaves the
lake and the database byte-for-byte as they were.

One small warehouse serves every test: a byte-level index of 40 documents, a traced run, built with the
explorer's marts, in a folder whose path holds a quote and braces (`it's a {name} folder`), as a user's
folder may. Oracles: the
rows written by hand (2 generations), dbt_project.yml read as YAML (the vars), DuckDB's own catalogue (the
`__dbt_tmp` tables), the bytes of the lake and the database (nothing changed), HTTP status codes.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from ingest.cli.main import run

pytestmark = pytest.mark.slow  # two dbt builds (~10 s each on 2 idle cores) serve most of the tests

BUILD_SELECT = ["+fct_setting_metrics", "stg_corpora", "stg_span_counts"]
VARS = "{propme_bootstrap_resamples: 20}"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _digest(home: Path) -> dict[str, str]:
    """Every lake file (the writers' `_tmp` aside) and the database file, by content."""
    files = [p for p in sorted((home / "lake").rglob("*")) if p.is_file() and "_tmp" not in p.parts]
    files.append(home / "lmaudit.duckdb")
    return {str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def _build(home: Path, exclude: tuple[str, ...] = ()):
    from ingest.build import build

    return build(home, select=BUILD_SELECT, exclude=exclude, vars_=VARS, progress=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("quoted") / "it's a {name} folder"
    data = root / "data"
    docs = [{"text": f"document {i}: the quick brown fox number {i} jumps over the lazy dog " * 3, "id": f"d{i}"}
            for i in range(40)]
    _write(data / "corpus.jsonl", "".join(json.dumps(d) + "\n" for d in docs))
    _write(data / "gens.jsonl", "".join(json.dumps({"text": t}) + "\n"
                                        for t in ["the quick brown fox number 3 jumps over", "something else"]))
    _write(data / "later.jsonl", json.dumps({"text": "an import during the build"}) + "\n")
    _write(data / "dup_ids.jsonl", "".join(json.dumps({"generation_id": "g1", "text": t}) + "\n" for t in "ab"))
    home = root / "wh"
    assert run(["-w", str(home), "index", "build", str(data / "corpus.jsonl"), "--tokenizer", "bytes",
                "--out", str(root / "idx"), "--name", "mini"]) == 0
    assert run(["-w", str(home), "import", "generations", str(data / "gens.jsonl"), "--run-id", "r1",
                "--model", "m", "--setting", "unconditional", "--corpus", "mini"]) == 0
    assert run(["-w", str(home), "trace", "--run", "r1", "--corpus", "mini"]) == 0
    res = _build(home, exclude=("test_type:data",))  # the data tests would add ~40 % and check nothing here
    # item 5: a quote in the warehouse path ended dbt's SQL string literal (exit 1, "16 error"); braces were
    # read as a str.format field by dbt-duckdb
    assert res.success, res.failures[:3]
    return {"root": root, "home": home, "data": data}


def _one_error_line(capsys, rc: int, expect_rc: int, message: str) -> None:
    out = capsys.readouterr()
    assert rc == expect_rc, (rc, out.err[-800:])
    assert "Traceback" not in out.err + out.out
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], out.err


# -- item 5: a path with a quote -----------------------------------------------------------------------

def test_quoted_warehouse_path_builds_queries_and_exports(built, capsys) -> None:
    home = built["home"]
    capsys.readouterr()
    assert run(["-w", str(home), "sql", "--csv", "select count(*) as n from stg_generations"]) == 0
    assert capsys.readouterr().out.split() == ["n", "2"]
    assert run(["-w", str(home), "export", "--format", "csv", "-m", "fct_setting_metrics", "--no-publish"]) == 0
    header = (home / "exports" / "fct_setting_metrics.csv").read_text().splitlines()[0]
    assert "run_id" in header.split(",") and "metric" in header.split(",")
    shutil.rmtree(home / "exports")


def test_a_backslash_in_the_warehouse_path_is_refused_up_front(tmp_path, capsys) -> None:
    """DuckDB reads `\\` as a separator (it would look for the database in another folder)."""
    home = tmp_path / "back\\slash" / "wh"
    capsys.readouterr()
    rc = run(["-w", str(home), "build", "--select", "stg_runs"])
    _one_error_line(capsys, rc, 2, "has a backslash in its path")
    assert not (home / "lmaudit.duckdb").exists() and not (tmp_path / "back" / "slash").exists()


# -- item 8: --vars ------------------------------------------------------------------------------------

def test_the_vars_table_covers_exactly_the_vars_of_dbt_project() -> None:
    from ingest.build_vars import VARS as TABLE

    declared = yaml.safe_load((REPO / "dbt_project.yml").read_text())["vars"]
    assert set(TABLE) == set(declared)
    for name, value in declared.items():  # the shipped defaults are in range
        assert TABLE[name].check(value) is None, (name, value, TABLE[name].check(value))


@pytest.mark.parametrize("vars_,message", [
    ("{propme_bootstrap_resamples: abc}", "propme_bootstrap_resamples must be a whole number"),
    ("{propme_bootstrap_resamples: true}", "propme_bootstrap_resamples must be a whole number"),
    ("{propme_bootstrap_resamples: 0}", "propme_bootstrap_resamples must be from 1"),
    ("{propme_ci_level: 2}", "propme_ci_level must be in (0, 1)"),
    ("{mixture_ci_level: .nan}", "mixture_ci_level must be a number"),
    ("{propme_bootstrap_resample: 10}", "unknown var 'propme_bootstrap_resample'; did you mean "
                                        "propme_bootstrap_resamples"),
    ("{propme_capability_setting: \"pre'fix\"}", "propme_capability_setting must be one of"),
    ("{mixture_estimators: [pacc, nope]}", "mixture_estimators item 'nope'"),
    ("{mixture_domain_aliases: {C4: \"We'b\"}}", "contains a quote"),
    ("{propme_blank_outputs_match: 1}", "must be true or false"),
    ("5", "--vars must be a mapping"),
    ("{propme_ci_level: [0.9", "--vars is not valid YAML"),
])
def test_bad_vars_are_refused_before_anything_is_built(built, capsys, vars_, message) -> None:
    home = built["home"]
    before = _digest(home)
    capsys.readouterr()
    rc = run(["-w", str(home), "build", "--select", "stg_runs", "--vars", vars_])
    _one_error_line(capsys, rc, 2, message)
    assert _digest(home) == before


# -- item 7: the build reads one state of the lake; no __dbt_tmp tables pile up ---------------------------
# (before the servers: a second build cannot open the database while the explorer holds it in this process)

def _lmaudit() -> list[str]:
    exe = Path(sys.executable).parent / "lmaudit"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ingest.cli.main"]


@pytest.fixture(scope="module")
def rebuilt(built):
    """A second build of the warehouse, with an import started while it runs."""
    import ingest.build as build_mod

    home = built["home"]
    real, seen = build_mod.run_dbt, {}

    def run_dbt_with_an_import(home_, args, on_event=None, memory=None):
        proc = subprocess.Popen([*_lmaudit(), "-w", str(home), "import", "generations",
                                 str(built["data"] / "later.jsonl"), "--run-id", "r2", "--model", "m",
                                 "--setting", "generic"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while proc.poll() is None and not list((home / "lake" / "_txn").glob("*.json")) and time.time() < deadline:
            time.sleep(0.05)  # until the import has committed its journal (or finished)
        time.sleep(0.5)
        seen["during"] = proc.poll()  # None: its changes wait for the build
        try:
            return real(home_, args, on_event, memory)
        finally:
            seen["proc"] = proc

    build_mod.run_dbt = run_dbt_with_an_import
    try:
        res = _build(home, exclude=("test_type:data",))
    finally:
        build_mod.run_dbt = real
    _, err = seen["proc"].communicate(timeout=120)
    return {**built, "res": res, "during": seen["during"], "import_rc": seen["proc"].returncode,
            "import_err": err}


def test_an_import_during_a_build_waits_for_it(rebuilt) -> None:
    import duckdb

    assert rebuilt["res"].success, rebuilt["res"].failures[:3]
    assert rebuilt["during"] is None, "the import finished while the build was reading the lake"
    assert rebuilt["import_rc"] == 0, rebuilt["import_err"]
    assert "waiting for the `lmaudit build`" in rebuilt["import_err"]
    with duckdb.connect(str(rebuilt["home"] / "lmaudit.duckdb"), read_only=True) as con:
        # the tables the build wrote come from the lake before the import; the lake has it now
        assert con.execute("select count(*) from int_generation_facts where run_id = 'r2'").fetchone() == (0,)
        assert con.execute("select count(*) from int_generation_facts where run_id = 'r1'").fetchone() == (2,)
    from ingest.lake import Lake

    assert "r2" in {r["run_id"] for r in Lake(rebuilt["home"]).read("runs").to_pylist()}


def test_two_builds_leave_no_dbt_tmp_tables(rebuilt) -> None:
    import duckdb

    with duckdb.connect(str(rebuilt["home"] / "lmaudit.duckdb"), read_only=True) as con:
        left = con.execute("select table_name from duckdb_tables() where table_name like '%dbt_tmp%'").fetchall()
        incremental = con.execute("select count(*) from duckdb_tables() where table_name = 'int_setting_bootstrap'"
                                  ).fetchone()[0]
    assert incremental == 1  # the incremental Python model whose temporary relation used to stay
    assert left == []


# -- item 9: trace --generations with a duplicate id ------------------------------------------------------

def test_trace_file_with_a_duplicate_id_writes_nothing(built, capsys) -> None:
    home = built["home"]
    before = _digest(home)
    capsys.readouterr()
    rc = run(["-w", str(home), "trace", "--generations", str(built["data"] / "dup_ids.jsonl"), "--corpus", "mini"])
    _one_error_line(capsys, rc, 2, "generation_id 'g1' appears again")
    assert _digest(home) == before  # the trace_runs row used to be written first


# -- item 9: the explorer and docs servers ----------------------------------------------------------------

@pytest.fixture(scope="module")
def served(built):
    from ingest.explore.queries import Explorer
    from ingest.explore.server import make_server

    explorer = Explorer(built["home"])
    server = make_server(explorer, 0, page_size=2)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()
    explorer.close()


def _status(port: int, path: str, host: str | None = None, timeout: float = 20) -> tuple[int, bytes]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_explorer_huge_page_is_a_400(served) -> None:
    port = served.server_address[1]
    status, body = _status(port, "/api/generations?page=99999999999999999999")
    assert status == 400 and b"page must be" in body
    status, body = _status(port, "/api/generations?min_longest=99999999999999999999")
    assert status == 400
    status, body = _status(port, "/api/generations?page=3")  # past the last page: no rows, not an error
    assert status == 200 and json.loads(body)["rows"] == []


@pytest.fixture(scope="module")
def docs_served(tmp_path_factory):
    from ingest.explore.docs import serve_folder

    folder = tmp_path_factory.mktemp("docs")
    (folder / "index.html").write_text("<p>docs</p>")
    server = serve_folder(folder, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("host,ok", [(None, True), ("localhost:{port}", True), ("127.0.0.1:{port}", True),
                                     ("localhost", True), ("evil.example:{port}", False), ("evil.example", False),
                                     ("localhost:1", False), ("127.0.0.1.evil.example:{port}", False)])
def test_servers_answer_only_their_own_host(served, docs_served, host, ok) -> None:
    """DNS rebinding: a page of another site, its name resolved to 127.0.0.1, sends its own Host."""
    port = served.server_address[1]
    status, _ = _status(port, "/api/runs", host and host.format(port=port))
    assert (status == 200) if ok else (status == 421), (host, status)
    dport = docs_served.server_address[1]
    status, body = _status(dport, "/index.html", host and host.format(port=dport))
    assert (status == 200 and b"docs" in body) if ok else (status == 421), (host, status)


def test_200_simultaneous_requests_are_all_answered(served) -> None:
    """With a listen backlog of 5, 16-31 % of 200 simultaneous requests were reset or timed out."""
    port = served.server_address[1]
    barrier, results = threading.Barrier(200), []

    def one() -> None:
        barrier.wait()
        try:
            results.append(_status(port, "/api/runs", timeout=5)[0])
        except OSError as e:
            results.append(type(e).__name__)

    threads = [threading.Thread(target=one) for _ in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(200) == 200, sorted(set(map(str, results)))


# -- item 9: a killed `classify train` --------------------------------------------------------------------

_KILL_AT_INSTALL = """
import os, signal, sys
import ingest.classify.train as train
train._install = lambda staged, path: os.kill(os.getpid(), signal.SIGKILL)  # after the lake commit
from ingest.lake import Lake
train.train_classifier(Lake(sys.argv[1]), backend="tfidf", name="tf", progress=False)
"""


def test_classifier_killed_after_its_lake_commit_is_usable_at_the_next_load(tmp_path) -> None:
    from ingest.classify.score import load_classifier
    from ingest.classify.train import train_classifier
    from ingest.lake import Lake
    from ingest.references import import_references

    home = tmp_path / "wh"
    lake = Lake(home)
    words = {"code": "def return import class lambda yield", "prose": "the garden river morning quiet song",
             "legal": "hereby warranty license liability party clause"}
    rows = [{"id": f"{d}-{i}", "domain": d, "text": f"{w} {i} " + " ".join(w.split()[i % 6:] * 3)}
            for d, w in words.items() for i in range(12)]
    _write(tmp_path / "refs.jsonl", "".join(json.dumps(r) + "\n" for r in rows if r["domain"] != "legal"))
    import_references(lake, tmp_path / "refs.jsonl", folds=3, seed=0)
    train_classifier(lake, backend="tfidf", name="tf", progress=False)  # two domains
    _write(tmp_path / "refs.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    import_references(lake, tmp_path / "refs.jsonl", folds=3, seed=0)
    p = subprocess.run([sys.executable, "-c", _KILL_AT_INSTALL, str(home)], capture_output=True, text=True)
    assert p.returncode == -9, p.stderr[-800:]
    base = home / "classifiers"
    assert any(x.name.startswith(".") for x in base.iterdir())  # the staged model, not yet in place
    # a dead transaction's staging folder (a kill before the commit) is cleaned by the next lake use
    (home / "lake" / "_tmp" / f"txn-{'0' * 32}").mkdir()
    (home / "lake" / "_tmp" / f"txn-{'0' * 32}" / "00000.parquet").write_text("x")
    clf = load_classifier(Lake(home), "tf")  # refused before: the files were the 2-domain model's
    assert clf.domains == ("code", "legal", "prose")
    assert sorted(x.name for x in base.iterdir()) == ["tf"]
    Lake(home).init()
    assert not list((home / "lake" / "_tmp").glob("txn-*"))
