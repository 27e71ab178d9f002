"""Review findings of the 3880019..HEAD changes (one test per finding, each fixed since).

Each test builds its own small warehouse by hand (as tests/python/test_moved_warehouse.py does), so none needs
a demo build.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import run_cli
from ingest.lake import Lake


def _view_db(home: Path, lake_home: Path) -> None:
    """A database file with one staging view as dbt-duckdb writes it: over `lake_home`'s lake."""
    import duckdb

    Lake(home).write("runs", "r", [{"run_id": "r1", "model": "m", "setting": "prefix"}])
    con = duckdb.connect(str(home / "lmaudit.duckdb"))
    con.execute(f"create view stg_runs as with source as (select * from read_parquet('{lake_home}/lake/runs/*.parquet', "
                "union_by_name = true)) select run_id, model from source")
    con.close()


def _warehouse(tmp_path: Path, moved: bool) -> Path:
    home = tmp_path / "a" / "warehouse"
    Lake(home).init()
    _view_db(home, home)
    if not moved:
        return home
    new = tmp_path / "b" / "warehouse"
    shutil.copytree(home, new)
    shutil.rmtree(home)
    return new


@pytest.mark.parametrize("moved", [False, True])
@pytest.mark.parametrize("prefix", ["EXPLAIN ANALYZE", "EXPLAIN (ANALYZE)"])
def test_explain_analyze_copy_writes_nothing(tmp_path: Path, moved: bool, prefix: str) -> None:
    home = _warehouse(tmp_path, moved)
    victim = next(p for p in (home / "lake" / "runs").glob("*.parquet") if not p.name.startswith("_"))
    before = victim.read_bytes()
    target = home / "lake" / "pwn.csv"
    run_cli("sql", f"{prefix} COPY (select 1 as x) TO '{target}'", home=home)
    run_cli("sql", f"{prefix} COPY (select 2 as x) TO '{victim}' (FORMAT parquet)", home=home)
    assert not target.exists()
    assert victim.read_bytes() == before


@pytest.mark.parametrize("moved", [False, True])
def test_guard_refuses_the_other_writes(tmp_path: Path, moved: bool) -> None:
    """What the guard does refuse (checked in the review): plain COPY / EXPORT / ATTACH / INSTALL / SET, a file
    outside the warehouse, `..` out of the lake, and a SET hidden behind EXPLAIN ANALYZE (the config is locked)."""
    home = _warehouse(tmp_path, moved)
    outside = tmp_path / "outside.csv"
    for q in (f"COPY (select 1) TO '{outside}'",
              f"EXPORT DATABASE '{tmp_path / 'exp'}'",
              f"ATTACH '{tmp_path / 'x.duckdb'}' AS x",
              "INSTALL httpfs", "LOAD httpfs",
              "SET enable_external_access = true",
              "EXPLAIN ANALYZE SET enable_external_access = true",
              f"EXPLAIN ANALYZE COPY (select 1) TO '{outside}'",
              f"EXPLAIN ANALYZE COPY (select 1) TO '{home / 'lake' / '..' / 'dotdot.csv'}'",
              "select * from read_csv('/etc/passwd')"):
        p = run_cli("sql", q, home=home)
        assert p.returncode != 0, q
    assert not outside.exists() and not (tmp_path / "exp").exists() and not (tmp_path / "x.duckdb").exists()
    assert not (home / "dotdot.csv").exists()
    p = run_cli("sql", "--csv", "select run_id from stg_runs", home=home)
    assert p.returncode == 0 and p.stdout.split() == ["run_id", "r1"], p.stderr


# --- lmaudit mixture documented add (ingest/documented_mixtures.py) ---------------------------------------------

def test_yaml_mapping_with_a_duplicate_domain_is_refused(tmp_path: Path) -> None:
    from ingest.documented_mixtures import load_mixture
    from ingest.errors import UserError

    f = tmp_path / "mix.yaml"
    f.write_text("code: 0.3\nweb: 0.4\ncode: 0.3\n")
    with pytest.raises(UserError, match="twice"):
        load_mixture(f, "m")


def test_csv_header_with_a_repeated_field_is_refused(tmp_path: Path) -> None:
    from ingest.documented_mixtures import load_mixture
    from ingest.errors import UserError

    f = tmp_path / "mix.csv"
    f.write_text("domain,domain,share\ncode,web,0.5\nweb,code,0.5\n")
    with pytest.raises(UserError):
        load_mixture(f, "m")


def test_csv_duplicate_domain_differing_in_case_and_spaces_is_refused(tmp_path: Path) -> None:
    from ingest.documented_mixtures import load_mixture
    from ingest.errors import UserError

    f = tmp_path / "mix.csv"
    f.write_text("domain,share\nCode,0.5\n code ,0.5\n")
    with pytest.raises(UserError, match="twice"):
        load_mixture(f, "m")


@pytest.mark.parametrize("moved", [False, True])
def test_explain_analyze_cannot_repoint_a_staging_view(tmp_path: Path, moved: bool) -> None:
    home = _warehouse(tmp_path, moved)
    p = run_cli("sql", "--csv", "EXPLAIN ANALYZE CREATE OR REPLACE TEMP VIEW stg_runs AS select 'fake' as run_id; "
                "select run_id from stg_runs", home=home)
    assert p.returncode != 0 or "fake" not in p.stdout


# --- ingest/warehouse_db.py: a view that cannot be re-pointed -----------------------------------------------------

def test_copy_missing_a_lake_table_does_not_read_the_originals(tmp_path: Path) -> None:
    from ingest.warehouse_db import connect_read_only

    old, new = tmp_path / "old" / "warehouse", tmp_path / "new" / "warehouse"
    Lake(old).init()
    _view_db(old, old)
    shutil.copytree(old, new)
    shutil.rmtree(new / "lake" / "runs")  # a partial copy; the original stays where it was
    con = connect_read_only(new)
    try:
        try:
            rows = con.execute("select run_id from stg_runs").fetchall()
        except Exception:  # noqa: BLE001 - an error naming the fix is fine
            rows = None
        assert rows != [("r1",)], "the copy answered with the original warehouse's runs"
    finally:
        con.close()


# --- minimal cue (ingest/prompts/settings.py, ingest/generate/plan.py): checks that pass ---------------------------

def _cue_corpus(name: str = "c"):
    from types import SimpleNamespace

    from ingest.corpora import corpus_id_for

    tok = SimpleNamespace(name="chars", encode=lambda t: [ord(c) for c in t])
    return SimpleNamespace(corpus_id=corpus_id_for(name), tokenizer=tok)


def test_minimal_cue_draws_are_capitalised_alphabetic_and_prefix_stable() -> None:
    """With the real wordfreq list: every cue is one capitalised alphabetic word of the top 100, and the first n
    draws of a larger set are the n draws of a smaller one with the same prompt ids (a set built with a larger
    --n extends the smaller one instead of renaming its prompts)."""
    from ingest.prompts import settings as S

    words, _ = S.cue_words("en")
    small = S.minimal_cue(_cue_corpus(), 200, "en", seed=42)
    large = S.minimal_cue(_cue_corpus(), 1000, "en", seed=42)
    assert [r["prompt_id"] for r in large.rows[:200]] == [r["prompt_id"] for r in small.rows]
    allowed = {w[:1].upper() + w[1:] for w in words}
    assert len(words) == 100 and all(w.isalpha() for w in words)
    assert all(r["text"] in allowed and r["text"][:1].isupper() for r in large.rows)
    assert len({r["prompt_id"] for r in large.rows}) == 1000


def test_minimal_cue_run_interrupted_mid_way_resumes_to_the_same_generations(tmp_path: Path) -> None:
    """A minimal_cue run killed after its first chunk resumes to exactly one generation per draw, with the same
    (prompt, sample, seed) triples as an uninterrupted run."""
    from ingest.generate.backends import GenOutput
    from ingest.generate.plan import prompt_units
    from ingest.generate.runner import RunSpec, SamplingConfig, run_generation
    from ingest.prompts import settings as S

    class Echo:
        bos_id = 1

        def __init__(self, fail_after: int | None = None):
            self.calls, self.fail_after = 0, fail_after

        def encode(self, text: str) -> list[int]:
            return [ord(c) for c in text]

        def generate(self, requests, sampling):
            self.calls += 1
            if self.fail_after is not None and self.calls > self.fail_after:
                raise KeyboardInterrupt
            return [GenOutput(r.key, (7,), f"seed {r.seed}", "stop") for r in requests]

    def triples(lake):
        return sorted((g["prompt_id"], g["sample_idx"], g["seed"]) for g in lake.read("generations").to_pylist())

    ps = S.minimal_cue(_cue_corpus(), 40, "en", seed=42).stamp("set1")
    results = []
    for name, fail_after in (("straight", None), ("killed", 1)):
        lake = Lake(tmp_path / name)
        lake.write("prompts", "cues", ps.rows)
        units = prompt_units(lake, "c", "minimal_cue", Echo(), n_samples=10, n_generations=0)
        spec = RunSpec("cue-run", "m", "minimal_cue", "hf", None, SamplingConfig(), chunk_size=8)
        if fail_after is not None:
            with pytest.raises(KeyboardInterrupt):
                run_generation(lake, Echo(fail_after), spec, units, progress=False)
            units = prompt_units(lake, "c", "minimal_cue", Echo(), n_samples=10, n_generations=0)
        summary = run_generation(lake, Echo(), spec, units, progress=False)
        assert summary.n_generations == 40
        assert summary.n_chunks_skipped == (0 if fail_after is None else 1)  # the killed run's first chunk is kept
        results.append(triples(lake))
    assert results[0] == results[1] and len(set(results[1])) == 40


def test_documented_add_refuses_a_name_that_pairs_with_an_already_documented_run(tmp_path: Path) -> None:
    from ingest.documented_mixtures import load_mixture, register
    from ingest.errors import UserError
    from ingest.lake import make_key

    sandbox_model = str(tmp_path / "sandbox" / "tiny-seed0" / "model")
    lake = Lake(tmp_path / "wh")
    lake.init()
    lake.write("runs", "r", [{"run_id": "neutral", "model": sandbox_model, "setting": "unconditional",
                               "purpose": "mixture"}])
    lake.write("mixtures_documented", "sandbox--tiny",
               [{"mixture_id": make_key(sandbox_model, d), "model": sandbox_model, "domain": d, "weight": 0.5,
                 "source": "sandbox mixture.json"} for d in ("code", "web")])
    f = tmp_path / "mix.csv"
    f.write_text("domain,share\ncode,0.9\nweb,0.1\n")
    with pytest.raises(UserError):
        register(lake, load_mixture(f, "model"))


# --- review of 8951ffb..HEAD ----------------------------------------------------------------------------------------

def test_sql_json_does_not_drop_a_column_named_twice(tmp_path: Path) -> None:
    """`lmaudit sql --format json` built one dict per row, so of two result columns with the same name (any
    `select *` over a join: `id`, `x`, `id`, `x`) only the last survived, silently. Either every value is
    written or the command says why it cannot be (one line, exit 2)."""
    import json

    home = _warehouse(tmp_path, moved=False)
    p = run_cli("sql", "--format", "json", "select 1 as id, 2 as x, 1 as id, 5 as x", home=home)
    if p.returncode == 0:
        values = [v for line in p.stdout.splitlines() for v in json.loads(line).values()]
        assert sorted(values) == [1, 1, 2, 5], p.stdout
    else:
        assert p.returncode == 2 and p.stderr.strip().startswith("error:") and len(p.stderr.strip().splitlines()) == 1
        assert "x" in p.stderr and "Traceback" not in p.stderr
    # csv keeps both (header named twice), as before
    p = run_cli("sql", "--format", "csv", "select 1 as id, 2 as x, 1 as id, 5 as x", home=home)
    assert p.returncode == 0 and p.stdout.splitlines() == ["id,x,id,x", "1,2,1,5"], p.stderr


@pytest.mark.parametrize("text", ["{mixture_max_uncovered_weight: 1e-3}", "{propme_loop_min_share: 9.5E-1}",
                                  "{propme_ci_level: 9e-1}", "{contamination_contaminated_share: 5e-1}"])
def test_build_vars_accept_a_fraction_in_exponent_notation(text: str) -> None:
    """PyYAML (dbt's --vars parser too) reads `1e-3` as the string '1e-3' (YAML 1.1 wants `1.0e-3`); dbt pastes it
    into `cast(1e-3 as double)`, a valid number, but `check_vars` refused it ("must be a number in [0, 1], not
    '1e-3'") before the build, though the same var was accepted as 0.001."""
    from ingest.build_vars import check_vars

    check_vars(text)


@pytest.mark.parametrize("text", ["{mixture_max_uncovered_weight: 2e0}", "{propme_ci_level: 1e0}",
                                  "{propme_ci_level: abc}", "{propme_ci_level: '1e-1; drop table x'}",
                                  "{propme_ci_level: nan}", "{propme_ci_level: 1e-1e1}"])
def test_build_vars_still_refuse_bad_exponent_fractions(text: str) -> None:
    from ingest.build_vars import check_vars
    from ingest.errors import UserError

    with pytest.raises(UserError):
        check_vars(text)


def test_mia_benchmark_scored_keys_under_a_warehouse_path_with_a_quote(tmp_path: Path) -> None:
    """A quote in the warehouse path is supported (issue 33 item 5: the lake sources and export escape it), but
    `mia-benchmark score` pasted the text_scores glob into `read_parquet('...')` unescaped: a DuckDB parser
    error (a traceback) at the first score of a warehouse such as /data/o'brien/wh."""
    from ingest.lake import make_key
    from ingest.mia_benchmark.run import scored_keys

    lake = Lake(tmp_path / "o'brien" / "wh")
    lake.write("text_scores", "s", [{"score_id": make_key("m", "t1"), "model": "m", "item_id": "t1",
                                     "item_kind": "text", "text_hash": "h1", "params": '{"scoring": "authors"}'}])
    assert scored_keys(lake, "m", "authors") == {("text", "t1", "h1")}
    assert scored_keys(lake, "m", "lmaudit") == set()


def test_contamination_sample_makes_n_items_of_each_kind_on_a_small_vocabulary() -> None:
    """`contamination-sample --n N` promises N copied, N half-copied and N fresh items, but the draw kept reading
    documents past its 2N cuts until it had seen 200 distinct words (for the fresh text), and then every extra
    cut became one more half-copied item: --n 1 on documents of a few dozen words gave 1 / 9 / 1."""
    import random
    from types import SimpleNamespace

    from ingest.contamination.sample import sample_benchmark

    rng = random.Random(1)
    pool = [f"word{a}{b}" for a in "abcdefghijklmno" for b in "abcdefghijklmnopqrst"]  # 300 words, 30 a document
    docs = [" ".join(rng.choice(pool[30 * d:30 * d + 30]) for _ in range(120)) for d in range(10)]

    class Engine:
        n_docs = len(docs)

        def doc(self, ix, max_len):
            return SimpleNamespace(tokens=list(docs[ix][:max_len]))

    tokenizer = SimpleNamespace(decode=lambda toks: "".join(toks))
    for n in (1, 2):
        items = sample_benchmark(Engine(), tokenizer, n, seed=0)
        kinds = [it.item_id.split("-")[0] for it in items]
        assert {k: kinds.count(k) for k in set(kinds)} == {"copied": n, "half": n, "fresh": n}
        assert len({it.item_id for it in items}) == 3 * n


def test_sweep_documented_truth_matches_a_model_as_the_mart_does(tmp_path: Path) -> None:
    """`mixture sweep` reads the swept model's documented mixture "as the marts match a run", but its last rule
    compared the last path part of *both* names: every save_pretrained folder called `model` (all sandbox models,
    `<warehouse>/sandbox/<size>/model`) matched every other, so a sweep of /data/mine/model was scored against the
    sandbox's mixture (fct_mixture_evaluation, which compares the documented name with the run model's last part,
    finds none)."""
    from ingest.lake import make_key
    from ingest.mixture.sweep import documented_truth

    lake = Lake(tmp_path / "wh")
    sandbox = str(tmp_path / "wh" / "sandbox" / "tiny-seed0" / "model")
    rows = [(sandbox, "code", 0.7), (sandbox, "web", 0.3), ("pythia-1b", "code", 0.1), ("pythia-1b", "web", 0.9)]
    lake.write("mixtures_documented", "d", [{"mixture_id": make_key(m, d), "model": m, "domain": d, "weight": w,
                                             "source": "hand"} for m, d, w in rows])
    assert documented_truth(lake, "/data/mine/model") == (None, None)
    assert documented_truth(lake, sandbox)[0] == {"code": 0.7, "web": 0.3}
    assert documented_truth(lake, "EleutherAI/Pythia-1B")[0] == {"code": 0.1, "web": 0.9}  # the run's last part


def test_sweep_runs_of_two_models_never_share_a_run_id() -> None:
    """The runs a sweep samples itself were named `sweep-<study>-t<T>-n<N>`, without the model; the default study
    is the model's folder name (`model` for every sandbox and most save_pretrained folders), and inject's default
    study leaves out --seed, --base and --size. So sweeping a second model, or `mixture inject --seed 1` after the
    seed-0 study, trained every sandbox and then stopped on the first run: "run ... already exists with other
    parameters or prompts; choose another --run-id" (an option neither command has)."""
    from ingest.mixture.sweep import Sampler

    a = Sampler(model="/wh/sandbox/tiny-seed0/model").run_id_for("model", 0.7, 1.0, 300)
    b = Sampler(model="/data/mine/model").run_id_for("model", 0.7, 1.0, 300)
    assert a != b
    assert a == Sampler(model="/wh/sandbox/tiny-seed0/model").run_id_for("model", 0.7, 1.0, 300)  # still resumable
    assert Sampler(model="/m", run_id="r").run_id_for("s", 1.0, 1.0, 300) == "r"  # the given run at its temperature


_HOLD_SNAPSHOT = """
import sys, time
from pathlib import Path
from ingest.lake import Lake
home, ready, stop = sys.argv[1:4]
with Lake(home).snapshot():  # what `lmaudit build` holds for its whole dbt run
    Path(ready).touch()
    t = time.time()
    while not Path(stop).exists() and time.time() - t < 8:
        time.sleep(0.05)
"""

_IMPORT = """
import sys
from ingest.lake import Lake
lake = Lake(sys.argv[1])
with lake.transaction():
    lake.write("runs", "r1", [{"run_id": "r1", "model": "m", "setting": "prefix"}])
"""


def test_lake_reads_and_staging_do_not_wait_for_a_build_behind_another_import(tmp_path: Path) -> None:
    """While `lmaudit build` holds the lake snapshot, an import's commit waits (as documented). But every other lake
    use then waited too: `Lake.read` and `Lake.init` (the first step of any write or transaction) "recover" the
    waiting import's journal, i.e. queue for the same exclusive lock, so a read-only command (score, trace, sweep)
    or the staging of a second import hung until the build ended, printing "the change is staged" for a read. A
    journal whose transaction is alive (its staging folder is locked) is its owner's to apply; only a dead one's is
    recovered."""
    import subprocess
    import sys
    import time

    home = tmp_path / "wh"
    lake = Lake(home)
    lake.write("runs", "r0", [{"run_id": "r0", "model": "m", "setting": "prefix"}])
    ready, stop = tmp_path / "ready", tmp_path / "stop"
    build = subprocess.Popen([sys.executable, "-c", _HOLD_SNAPSHOT, str(home), str(ready), str(stop)])
    imp = None
    try:
        t0 = time.time()
        while not ready.exists() and time.time() - t0 < 30:
            time.sleep(0.05)
        imp = subprocess.Popen([sys.executable, "-c", _IMPORT, str(home)], stderr=subprocess.PIPE, text=True)
        while not list((home / "lake" / "_txn").glob("*.json")) and time.time() - t0 < 30:
            time.sleep(0.05)  # the import committed its journal and waits for the build
        assert list((home / "lake" / "_txn").glob("*.json")) and imp.poll() is None
        t = time.time()
        rows = Lake(home).read("runs").num_rows
        other = Lake(home)
        with pytest.raises(RuntimeError), other.transaction():  # staging; dropped before its commit
            other.write("runs", "r2", [{"run_id": "r2", "model": "m", "setting": "prefix"}])
            raise RuntimeError("stop before the commit")
        waited = time.time() - t
    finally:
        stop.touch()
        build.wait(30)
        if imp is not None:
            imp.wait(30)
    assert waited < 2, f"a read and a staging waited {waited:.1f} s for the build"
    assert rows == 1  # the state the build reads: the import becomes visible after it
    assert Lake(home).read("runs").num_rows == 2 and imp.returncode == 0


# ----------------------------------------------------------------- review of `lmaudit audit documents` (issue 30)
def _audit_documents_table(ids: list[str | None]):
    import pyarrow as pa

    from ingest.audit.documents import DOCUMENT_SCHEMA

    n = len(ids)
    return pa.Table.from_pydict({"shard": [0] * n, "doc_ix": list(range(n)), "doc_id": ids, "source": [None] * n,
                                 "domain": [None] * n, "path": [None] * n, "linenum": [None] * n,
                                 "metadata": [None] * n}, schema=DOCUMENT_SCHEMA)


def test_audit_id_file_saved_with_a_byte_order_mark_selects_its_first_id(tmp_path: Path) -> None:
    """An id file written by Windows Notepad / Excel 'UTF-8' starts with a byte order mark (and ends lines with CRLF):
    the first id was read as '\\ufeffpkgA/file3.py' and refused as 'not a document of the corpus'."""
    from ingest.audit.selection import by_ids, read_ids

    ids = tmp_path / "mine.txt"
    ids.write_bytes("pkgA/file3.py\r\ndoc:2\r\n\r\npkgA/file3.py\r\n".encode("utf-8-sig"))
    assert read_ids(ids) == ["pkgA/file3.py", "doc:2"]
    picked = by_ids(_audit_documents_table(["x", "pkgA/file3.py", None, "y"]), read_ids(ids), ids)
    assert picked.column("doc_ix").to_pylist() == [1, 2]


@pytest.fixture(scope="module")
def audit_partly_traced(tmp_path_factory) -> Path:
    """The hand-built lake of tests/python/test_audit_documents_marts.py, plus one generation of the propensity run u
    and one of the set's attack run a that no pass traced (an interrupted trace, or generations added after it)."""
    from test_audit_documents_marts import SELECT, write_lake

    from ingest.build import build

    home = tmp_path_factory.mktemp("audit_review") / "warehouse"
    write_lake(home)
    Lake(home).write("generations", "g_untraced", [
        {"generation_id": "u9", "run_id": "u", "prompt_id": None, "sample_idx": 90, "text": "not traced yet"},
        {"generation_id": "a_ap1_9", "run_id": "a", "prompt_id": "ap1", "sample_idx": 91, "text": "not traced"}])
    result = build(home, vars_="{propme_bootstrap_resamples: 50}", progress=False, select=SELECT)
    assert result.success, result.failures
    return home


@pytest.mark.slow
def test_audit_document_set_of_a_partly_traced_run_has_no_value_as_the_per_run_marts(audit_partly_traced) -> None:
    """A run with untraced generations has no R20/R50/FMR in fct_setting_metrics ('partly traced: ... re-run lmaudit
    trace'). The document-set marts silently dropped the untraced generations from f_p's (and f_c's) denominator and
    reported f_p = hits / traced generations, PM and intervals, with no reason: a number over another population
    than the per-run one, presented as the run's."""
    from test_audit_documents_marts import rows

    home = audit_partly_traced
    per_run = {(r["run_id"], r["metric"]): r for r in rows(home, "select * from fct_setting_metrics")}
    assert per_run[("u", "r20")]["value"] is None and per_run[("u", "r20")]["null_reason"].startswith("partly traced")
    for mart in ("fct_document_set_propensity", "fct_document_propensity"):
        got = rows(home, f"select * from {mart} where propensity_run_id = 'u'")
        assert got
        for r in got:  # the propensity run is partly traced: no f_p, no PM, a reason naming the run
            assert r["f_p"] is None and r["f_p_ci_low"] is None and r["pm"] is None and r["pm_ci_low"] is None, r
            assert r["null_reason"].startswith("partly traced") and "--run u" in r["null_reason"], r
        # g is fully traced, but rh's attack a is not: f_p stays, f_c, PM and te go, with the attack's reason
        rh_g = rows(home, f"select * from {mart} where propensity_run_id = 'g' and document_set = 'rh'")
        assert rh_g and all(r["attack_run_id"] == "a" for r in rh_g)
        for r in rh_g:
            assert r["f_c"] is None and r["pm"] is None and r["te"] is None and r["pm_differs_from_neutral"] is None, r
            assert r["null_reason"].startswith("partly traced") and "--run a" in r["null_reason"], r
        assert any(r["f_p"] is not None for r in rh_g)
    # a set whose attack is the fully traced corpus run keeps every number for the fully traced run g
    other = rows(home, "select * from fct_document_set_propensity where document_set = 'other' and "
                       "propensity_run_id = 'g'")
    assert other and all(r["f_p"] is not None and r["f_c"] is not None for r in other)
    assert not any((r["null_reason"] or "").startswith("partly traced") for r in other)


@pytest.fixture(scope="module")
def audit_pairings(tmp_path_factory) -> Path:
    """The hand-built lake of tests/python/test_audit_documents_marts.py, plus: run w of model 'hf:m1' (the same
    model under another string) paired with the prefix run pc through var propme_capability_pairs; and a set `solo`
    (document 3) whose own attack aa_solo was generated with --purpose propme (prefixes from document 3 only)."""
    import hashlib

    from test_audit_documents_marts import SELECT, write_lake

    from ingest.build import build

    home = tmp_path_factory.mktemp("audit_review_pairs") / "warehouse"
    write_lake(home)
    lake = Lake(home)
    lake.write("runs", "r_review", [
        {"run_id": "w", "model": "hf:m1", "corpus_id": "c1", "setting": "unconditional", "purpose": "propme"},
        {"run_id": "aa_solo", "model": "m1", "corpus_id": "c1", "setting": "prefix", "purpose": "propme"}])
    lake.write("prompts", "p_review", [{"prompt_id": "sp1", "setting": "prefix", "text": "sp1", "corpus_id": "c1",
                                        "prompt_set": "ps_solo", "source_doc": "d3", "true_continuation": "x y"}])
    gens = {"w0": ("w", None, "doc one by another model string"), "aa_solo_0": ("aa_solo", "sp1", "nothing")}
    lake.write("generations", "g_review", [{"generation_id": g, "run_id": r, "prompt_id": p, "sample_idx": 0,
                                            "text": t} for g, (r, p, t) in gens.items()])
    lake.write("traced_generations", "tg_review", [
        {"traced_generation_id": f"t1:{g}", "trace_id": "t1", "generation_id": g,
         "text_hash": hashlib.md5(t.encode()).hexdigest(), "n_index_tokens": 60} for g, (_r, _p, t) in gens.items()])
    lake.write("spans", "s_review", [{"span_id": "w0:0", "trace_id": "t1", "generation_id": "w0", "start_tok": 0,
                                      "end_tok": 60, "length": 60, "is_full": False, "kept": True, "text": "w0 span"}])
    lake.write("span_documents", "s_review", [{"span_document_id": "w0:0:1", "span_id": "w0:0", "shard": 0,
                                               "doc_ix": 1, "doc_id": "d1", "match_tier": "partial", "nv_recall": 0.5}])
    lake.write("document_sets", "solo", [{"document_set_row_id": "solo:3", "document_set": "solo", "corpus_id": "c1",
                                          "shard": 0, "doc_ix": 3, "doc_id": "d3", "selection": "ids:hand",
                                          "prompt_set": "ps_solo"}])
    # set `zero`: document 0 whose `id` metadata field is the integer 0 (documents.py stores '0'); the prefix builder
    # names it doc:0 (`meta.get("id") or f"doc:{doc_ix}"`); its attack zz_attack starts with the true continuation
    lake.write("document_sets", "zero", [{"document_set_row_id": "zero:0", "document_set": "zero", "corpus_id": "c1",
                                          "shard": 0, "doc_ix": 0, "doc_id": "0", "selection": "ids:hand",
                                          "prompt_set": "ps_zero"}])
    lake.write("prompts", "p_review_zero", [{"prompt_id": "zp1", "setting": "prefix", "text": "zp1", "corpus_id": "c1",
                                             "prompt_set": "ps_zero", "source_doc": "doc:0",
                                             "true_continuation": "theta iota"}])
    lake.write("runs", "r_review_zero", [{"run_id": "zz_attack", "model": "m1", "corpus_id": "c1",
                                          "setting": "prefix", "purpose": "other"}])
    zz = "theta iota kappa"
    lake.write("generations", "g_review_zero", [{"generation_id": "zz0", "run_id": "zz_attack", "prompt_id": "zp1",
                                                 "sample_idx": 0, "text": zz}])
    lake.write("traced_generations", "tg_review_zero", [
        {"traced_generation_id": "t1:zz0", "trace_id": "t1", "generation_id": "zz0",
         "text_hash": hashlib.md5(zz.encode()).hexdigest(), "n_index_tokens": 10}])
    vars_ = ("{propme_bootstrap_resamples: 50, propme_capability_pairs: "
             "[{propensity_run_id: w, capability_run_id: pc}]}")
    result = build(home, vars_=vars_, progress=False, select=[*SELECT, "+fct_propensity"])
    assert result.success, result.failures
    return home


@pytest.mark.slow
def test_audit_document_set_corpus_attack_follows_the_per_run_pairing(audit_pairings) -> None:
    """The per-run marts pair a propensity run with the prefix run named in var propme_capability_pairs (the
    documented way to pair runs whose model strings differ: a path and a name, 'hf:' prefixes). The document-set
    marts matched the raw model string only and ignored the override: w got 'no prefix run of this model' while
    fct_propensity compares it with pc."""
    from test_audit_documents_marts import rows

    home = audit_pairings
    per_run = rows(home, "select distinct propensity_run_id, capability_run_id from int_propensity_pairs "
                         "where propensity_run_id = 'w'")
    assert per_run == [{"propensity_run_id": "w", "capability_run_id": "pc"}]
    got = rows(home, "select * from fct_document_set_propensity where propensity_run_id = 'w' and "
                     "document_set in ('rh', 'other')")
    assert got
    for r in got:
        assert (r["attack_run_id"], r["attack_kind"]) == ("pc", "corpus_attack"), r
        assert r["f_c"] is not None and not (r["null_reason"] or "").startswith("no prefix run"), r


@pytest.mark.slow
def test_audit_another_sets_targeted_attack_is_never_a_corpus_wide_attack(audit_pairings) -> None:
    """A set's own attack generated with --purpose propme (the printed next step says --purpose other, but nothing
    enforces it) is a propme prefix run: for every *other* set it was a 'corpus_attack' candidate, and the first run
    id won, so set `other`'s f_c came from prefixes drawn from document 3 of set `solo` only."""
    from test_audit_documents_marts import rows

    home = audit_pairings
    solo = rows(home, "select * from fct_document_set_propensity where document_set = 'solo' and "
                      "propensity_run_id = 'u'")
    assert solo and all((r["attack_run_id"], r["attack_kind"]) == ("aa_solo", "set_attack") for r in solo)
    for s in ("other", "all"):
        got = rows(home, f"select * from fct_document_set_propensity where document_set = '{s}' and "
                         "propensity_run_id in ('u', 'g')")
        assert got and all((r["attack_run_id"], r["attack_kind"]) == ("pc", "corpus_attack") for r in got), got


# ------------------------------------------------------------------ review of fdbd0b5, 3ef8eec (nogil trace kernels), 16865bc (explore mart)
_NO_NUMBA = """
import sys
sys.modules["numba"] = None  # as on a platform the pyproject marker leaves without numba
import random
from ingest.trace import nvkernel, tierkernel
from ingest.trace.normalize import normalize_document, normalize_words
from ingest.trace.nvrecall import FIXED_PARAMS, PreparedGeneration, nv_recall_window, nv_recall_words
from ingest.trace.tracer import _Gen

assert not nvkernel.available() and not tierkernel.available()
assert nvkernel._LOAD_ERROR and tierkernel._LOAD_ERROR
rng = random.Random(2)
atoms = ["a", "A", "b", "\\u00e9", "\\u2019s", "x\\ty", "\\r\\n", "  ", "\\u2003", "\\U0001f600", "e\\u0301"]
for i in range(300):
    g = " ".join(rng.choice(atoms) for _ in range(rng.randint(0, 30)))
    w = " ".join(rng.choice(atoms) for _ in range(rng.randint(0, 80))) + " " + g
    for params in (None, FIXED_PARAMS):
        words = normalize_words(g)
        assert nv_recall_window(PreparedGeneration(words, params), w) == nv_recall_words(words, normalize_words(w), params)
    gen = _Gen(object(), g, [])
    if gen.norm_doc:
        assert gen.normalized_in(w) == (gen.norm_doc in normalize_document(w))
print("ok")
"""


def test_trace_kernels_without_numba_fall_back_to_the_python_path() -> None:
    """The pyproject marker leaves numba out on some platforms: nv-recall and the normalized tier must then run the
    Python path (same numbers), not fail on import or on the first window. Nothing tested that path (the nogil tests
    skip without numba); here numba is made unimportable in a fresh interpreter."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _NO_NUMBA], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


_NV_ATOMS = ["a", "A", "the", "The", "THE", "\u00e9", "\u00c9", "e\u0301", "\ufb01", "Stra\u00dfe", "STRASSE",
             "\u0130", "\u0131", "\u212a", "\U0001f600", "\U0001f44d\U0001f3fd", "\U0001d518", "\u65e5\u672c",
             "\u2014", "\u2026", "...", "\u2019s", "'s", "\u00a0", "\u2003", "\u2028", "\u0085", "\t", "\n", "\r",
             "\r\n", "\x0b", "\x0c", "\x1c", "\x1f", "  ", "x" * 300, "\u03a3\u0391\u03a3", "\u03c2", "\uff21",
             "\x00", "\x7f", "\u200b", "\ufeff", "w1", "w2", "W1", "of", "to"]


def _nv_text(rng, n: int) -> str:
    return "".join(rng.choice(_NV_ATOMS) + (" " if rng.random() < 0.6 else "") for _ in range(n))


def test_nv_kernel_equals_stdlib_difflib_on_adversarial_text() -> None:
    """An independent oracle for the compiled nv-recall: the standard library's difflib (autojunk off, as the
    Python path) on mixed scripts, combining marks, astral characters, every str.split whitespace (ASCII and
    not), 300-character words, windows of 200+ words with popular words (where autojunk would matter), ASCII
    windows cut from non-ASCII text, and windows that repeat the generation."""
    import difflib
    import random

    from ingest.trace import nvkernel
    from ingest.trace.normalize import normalize_words
    from ingest.trace.nvrecall import (FIXED_PARAMS, NvResult, PreparedGeneration, _merge, adaptive_params,
                                       nv_recall_window)

    if not nvkernel.available():
        pytest.skip(f"numba unavailable: {nvkernel._LOAD_ERROR}")

    def oracle(words, window, p):
        doc = normalize_words(window)
        if not words:
            return NvResult(0.0, 0, 0, len(doc))
        p = p or adaptive_params(len(words))
        sm = difflib.SequenceMatcher(None, words, doc, autojunk=False)
        blocks = [(a, a + s, b, b + s, s) for a, b, s in sm.get_matching_blocks() if s]
        blocks = _merge(_merge(blocks, p.gap1, p.align1, p.min1), p.gap2, p.align2, p.min2)
        m = sum(b[4] for b in blocks)
        return NvResult(m / len(words), m, len(words), len(doc))

    rng = random.Random(20261204)
    for _ in range(800):
        g = _nv_text(rng, rng.randint(0, 60))
        r = rng.random()
        w = (_nv_text(rng, rng.randint(0, 40)) + g + _nv_text(rng, rng.randint(0, 300)) if r < 0.3
             else (g + " ") * rng.randint(1, 30) if r < 0.45 else _nv_text(rng, rng.randint(0, 400)))
        if rng.random() < 0.3:
            w = w.encode("ascii", "ignore").decode()
        words = normalize_words(g)
        for params in (None, FIXED_PARAMS):
            assert nv_recall_window(PreparedGeneration(words, params), w) == oracle(words, w, params), (g, w)


@pytest.mark.slow
def test_explorer_rows_equal_the_aggregate_after_the_lake_changed_since_the_build(tmp_path: Path) -> None:
    """The explorer copies fct_explore_generations, a snapshot of the last build, while the rest of it (runs,
    spans, documents) reads the lake's staging views live. Before the mart it aggregated generations and domains
    live at start. After an import or a trace that no build has followed yet (a new run, a generation traced
    again), the copied rows were the old ones: the new run was listed with 0 generations and showed none, the
    re-traced generation kept its old domain. The explorer now checks the mart against the lake (ids, runs, the
    traced texts: no text is read) and aggregates at start when they differ: the same rows as without the mart."""
    import hashlib

    from ingest.build import build
    from ingest.explore.queries import SUMMARY_AT_START_SQL, Explorer
    from test_explore import write_lake

    home = tmp_path / "warehouse"
    write_lake(home)
    res = build(home, select=["+fct_explore_generations"], progress=False)
    assert res.success, res.failures

    def rows_and_source():
        ex = Explorer(home)
        try:
            got = ex.con.execute("select * from explore_generations order by ordinal").fetchall()
            ex.con.execute(SUMMARY_AT_START_SQL.replace("create temp table explore_generations",
                                                        "create temp table want"))
            want = ex.con.execute("select * from want order by ordinal").fetchall()
            counts = dict(ex.con.execute("select run_id, count(*) from explore_generations group by all").fetchall())
            return got, want, ex.summary_source, counts
        finally:
            ex.close()

    got, want, source, _ = rows_and_source()
    assert got == want and source == "fct_explore_generations"  # a fresh build: the mart

    lake = Lake(home)  # g4 traced again (its document now says 'web'), and a new run imported: no build since
    docs = lake.read("span_documents").to_pylist()
    for d in docs:
        d["domain"] = "web" if d["span_id"] == "s_c" else d["domain"]
    lake.write("span_documents", "s", docs)
    tg = lake.read("traced_generations").to_pylist()
    for t in tg:
        t["text_hash"] = hashlib.md5(b"a b c d e f g h i").hexdigest() if t["generation_id"] == "g4" else t["text_hash"]
    lake.write("traced_generations", "tg", tg)
    gens = lake.read("generations").to_pylist()
    for g in gens:
        g["text"] = "a b c d e f g h i" if g["generation_id"] == "g4" else g["text"]
    lake.write("generations", "g", gens)
    lake.write("runs", "r_new", [{"run_id": "r_new", "model": "m/model", "corpus_id": "c1", "setting": "unconditional"}])
    lake.write("generations", "g_new", [{"generation_id": "n1", "run_id": "r_new", "prompt_id": None, "sample_idx": 0,
                                         "text": "a new generation"}])
    got, want, source, counts = rows_and_source()
    assert got == want
    assert source.startswith("aggregated at start") and counts.get("r_new") == 1
    assert {r[1]: r[16] for r in got}["g4"] == "web"


@pytest.mark.parametrize("module", ["nvkernel", "tierkernel"])
def test_trace_threads_wait_for_the_kernel_self_check(monkeypatch, module: str) -> None:
    """`available()` marked the kernel checked before its self-check (the first call: a ~9 s compile) had run, so a
    second trace thread arriving meanwhile got True and called the kernel itself. Where the compile fails (numba
    raises on a cache file it cannot write, an unsupported CPU) that thread's trace failed instead of falling back to
    the Python path as the first thread's did. The check is now made once, under a lock."""
    import threading
    import time

    from ingest.trace import nvkernel, tierkernel
    from ingest.trace.normalize import normalize_document, normalize_words
    from ingest.trace.nvrecall import PreparedGeneration, nv_recall_window, nv_recall_words

    mod = nvkernel if module == "nvkernel" else tierkernel
    name = "nv_counts" if module == "nvkernel" else "normalize_ascii"

    def failing_compile(*args):
        time.sleep(0.5)
        raise OSError("cannot write the numba cache")

    monkeypatch.setattr(mod, "njit", object())  # numba imported (whether or not it is installed here)
    monkeypatch.setattr(mod, "_checked", False)
    monkeypatch.setattr(mod, "_LOAD_ERROR", None)
    monkeypatch.setattr(mod, name, failing_compile)
    words, window = normalize_words("a b c d e"), "x A B C D E y"
    want = nv_recall_words(words, normalize_words(window))
    results, errors = [], []

    def one() -> None:
        try:
            if module == "nvkernel":
                results.append(nv_recall_window(PreparedGeneration(words), window))
            else:
                held = tierkernel.normalized_holds(b"b c", window)
                results.append(("b c" in normalize_document(window)) if held is None else held)
        except Exception as e:  # noqa: BLE001 - collected for the assert
            errors.append(repr(e))

    threads = [threading.Thread(target=one) for _ in range(2)]
    threads[0].start()
    time.sleep(0.1)  # the first thread is inside the self-check
    threads[1].start()
    for t in threads:
        t.join()
    assert not errors
    assert results == [want, want] if module == "nvkernel" else results == [False, False]
    assert not mod.available() and "cache" in mod._LOAD_ERROR


def test_nv_kernel_hash_collision_falls_back_to_the_python_path(monkeypatch) -> None:
    """Words are ids through a 63-bit FNV-1a hash; a collision (two different words, one hash) cannot be made by
    search, so it is planted: the id pass (`_ids`, run as Python) must compare the bytes and answer -1, and a window
    whose kernel answers status 1 must get the Python path's numbers."""
    import numpy as np

    from ingest.trace import nvkernel
    from ingest.trace.normalize import normalize_words
    from ingest.trace.nvrecall import PreparedGeneration, nv_recall_window, nv_recall_words

    def fnv(bs: bytes) -> int:
        h = 14695981039346656037
        for b in bs:
            h = ((h ^ b) * 1099511628211) % 2**64
        return h & 0x7FFFFFFFFFFFFFFF

    ids = getattr(nvkernel._ids, "py_func", nvkernel._ids)
    buf = np.frombuffer(bytearray(b"abc abd abc"), dtype=np.uint8)
    starts, ends = np.array([0, 4, 8]), np.array([3, 7, 11])
    first_s, first_e, owners = np.zeros(3, dtype=np.int64), np.zeros(3, dtype=np.int64), np.zeros(3, dtype=np.int64)
    out = np.empty(3, dtype=np.int64)
    def table(planted: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """The kernel's open-addressing map (size a power of two, -1 where free), holding `planted`."""
        keys, vals = np.full(16, -1, dtype=np.int64), np.zeros(16, dtype=np.int64)
        for k, v in planted.items():
            slot = k & 15
            while keys[slot] != -1:
                slot = (slot + 1) & 15
            keys[slot], vals[slot] = k, v
        return keys, vals

    with np.errstate(over="ignore"):
        assert ids(buf, starts, ends, 3, *table({}), (buf, buf), first_s, first_e, 0, out, 0, owners) == 2
        assert list(out) == [0, 1, 0]  # equal bytes, one id
        planted = table({fnv(b"abd"): 0})  # id 0 is "abc" (bytes 0..3) but holds the hash of "abd"
        first_s[:], first_e[:], owners[:] = 0, 3, 0
        assert ids(buf, starts[1:2], ends[1:2], 1, *planted, (buf, buf), first_s, first_e, 1, out, 0, owners) == -1

    if nvkernel.available():
        words, window = normalize_words("a b c d e f"), "x a b c d e f y"
        monkeypatch.setattr(nvkernel, "nv_counts", lambda *a: (1, 0, 6, 8))
        assert nv_recall_window(PreparedGeneration(words), window) == nv_recall_words(words, normalize_words(window))


@pytest.mark.slow
def test_audit_targeted_extraction_finds_the_prompts_of_a_document_named_by_number(audit_pairings) -> None:
    """Targeted extraction attributes an attack prompt to a set document by its `source_doc`, which the prefix builder
    writes as the `id` metadata field or, when that is falsy (no id, '', the integer 0), as doc:<n>. The marts
    matched only coalesce(doc_id, 'doc:' || doc_ix), so a document with id 0 (or '') never matched its own prompts:
    the set's attack had te_generations 0 and te NULL though every attack generation starts with the truth."""
    from test_audit_documents_marts import rows

    home = audit_pairings
    got = rows(home, "select * from fct_document_set_propensity where document_set = 'zero' and "
                     "propensity_run_id = 'u'")
    assert got and all(r["attack_run_id"] == "zz_attack" for r in got)
    assert all((r["te_generations"], r["te_hits"], r["te"]) == (1, 1, 1.0) for r in got), got
    doc = rows(home, "select * from fct_document_propensity where document_set = 'zero' and propensity_run_id = 'u'")
    assert doc and all((r["doc_ix"], r["te_generations"], r["te_hits"]) == (0, 1, 1) for r in doc), doc
