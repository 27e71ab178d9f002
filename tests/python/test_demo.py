"""`lmaudit demo --size tiny`: the whole main job on the sandbox, then the report and an export."""

from __future__ import annotations

import pytest

from conftest import run_cli, seed_tiny_sandbox

pytestmark = pytest.mark.slow


def test_demo_tiny_end_to_end(tmp_path, tiny_sandbox) -> None:
    home = tmp_path / "warehouse"
    seed_tiny_sandbox(tiny_sandbox, home)  # the built sandbox: its stage cache hits (the build is conftest's)
    proc = run_cli("demo", "--size", "tiny", home=home)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "dbt build ok" in proc.stdout
    # the headline: blank outputs beside the metrics, propensity in words, the mixture's accuracy and coverage
    for needle in ("blank outputs %", "reading", "overlap accuracy with the documented mixture",
                   "interval covers the documented share in"):
        assert needle in proc.stdout, needle
    import duckdb

    with duckdb.connect(str(home / "lmaudit.duckdb"), read_only=True) as con:
        settings = {r[0] for r in con.execute("select distinct setting from fct_setting_metrics").fetchall()}
        assert settings == {"unconditional", "minimal_cue", "generic", "specific", "prefix"}
        # the tiny model memorized its canary: unconditional samples reproduce long training spans
        (r50,) = con.execute("select max(value) from fct_setting_metrics where metric = 'r50' "
                             "and setting = 'unconditional'").fetchone()
        assert r50 is not None and r50 > 0
        assert con.execute("select count(*) from fct_propensity where pm is not null").fetchone()[0] > 0
        # the mixture step: the neutral run (temperature 1.0) scored by every estimator against the sandbox's
        # documented mixture (share of documents, canary included); the classifier recognizes the canary
        ev = con.execute("select run_id, estimator, overlap_accuracy from fct_mixture_evaluation").fetchall()
        assert {r for r, _, _ in ev} == {"sandbox-tiny-neutral"}
        assert {e for _, e, _ in ev} >= {"direct", "cc", "acc", "pacc", "emq", "llmsurgeon_code"}
        assert all(oa is not None and 0 <= oa <= 1 for _, _, oa in ev)
        (canary,) = con.execute("select estimate from fct_mixture_estimates where estimator = 'direct' "
                                "and domain = 'canary'").fetchone()
        assert canary > 0.2
        # every ready query answers on the sandbox warehouse
        from pathlib import Path

        for q in sorted((Path(__file__).resolve().parents[2] / "sql").glob("*.sql")):
            con.execute(q.read_text()).fetchall()
        assert con.execute((Path(__file__).resolve().parents[2] / "sql" / "most_reproduced_documents.sql")
                           .read_text()).fetchall(), "the canary must show up as a reproduced document"
        # one definition per number: the overview query shows exactly the mart's values
        metrics = {(r, m): v for r, m, v in con.execute(
            "select run_id, metric, value from fct_setting_metrics").fetchall()}
        cur = con.execute((Path(__file__).resolve().parents[2] / "sql" / "run_overview.sql").read_text())
        names = [d[0] for d in cur.description]
        overview = [dict(zip(names, row)) for row in cur.fetchall()]
        assert {o["run_id"] for o in overview} == {r for r, _ in metrics}
        for o in overview:
            for col, metric, digits in (("als", "als", 2), ("r20", "r20", 3), ("r50", "r50", 3), ("fmr", "fmr", 3),
                                        ("fmr20", "fmr20", 3), ("fmr_nonblank", "fmr_nonblank", 3),
                                        ("blank_rate", "blank_rate", 3)):
                v = metrics[(o["run_id"], metric)]
                assert (o[col] is None) == (v is None), (o["run_id"], col)
                assert v is None or abs(o[col] - v) <= 0.5 * 10 ** -digits + 1e-12, (o["run_id"], col, o[col], v)
            assert o["trace_status"] == "traced" and o["model_name"] == "tiny-seed0"
        # the neutral run is a mixture run: it is not in the PropMe marts, so the headline tables name only
        # PropMe runs, one per setting
        assert "sandbox-tiny-neutral" not in {r for r, _ in metrics}
        assert len({r for r, _ in metrics}) == 5
    # re-running is cached and resumable: nothing is generated or traced twice
    again = run_cli("demo", "--size", "tiny", home=home)
    assert again.returncode == 0
    with duckdb.connect(str(home / "lmaudit.duckdb"), read_only=True) as con:
        n, distinct = con.execute("select count(*), count(distinct generation_id) from stg_generations").fetchone()
        assert n == distinct
        n, distinct = con.execute("select count(*), count(distinct (classifier_id, item_kind, item_id)) "
                                  "from stg_classifier_outputs").fetchone()
        assert n == distinct
    # PropMe's configuration on the same warehouse: the same model traced against a Llama-2-style index of
    # the same corpus (issue 13); the first demo's runs and scores are kept
    llama = run_cli("demo", "--size", "tiny", "--index-tokenizer", "llama-style", home=home)
    assert llama.returncode == 0, llama.stdout[-3000:] + llama.stderr[-3000:]
    with duckdb.connect(str(home / "lmaudit.duckdb"), read_only=True) as con:
        rows = con.execute("""
            select t.run_id, c.name, m.value, m.ci_low, m.ci_high
            from fct_setting_metrics as m
            inner join int_run_traces as t on m.run_id = t.run_id and m.trace_id = t.trace_id
            inner join stg_corpora as c on t.trace_corpus_id = c.corpus_id
            where m.metric = 'fmr' and m.setting = 'unconditional'
        """).fetchall()
        by = {r: (name, v, lo, hi) for r, name, v, lo, hi in rows}
        assert by["sandbox-tiny-llama-unconditional"][0] == "sandbox-tiny-llama"
        assert by["sandbox-tiny-unconditional"][0] == "sandbox-tiny"
        (_, a, alo, ahi), (_, b, blo, bhi) = by["sandbox-tiny-unconditional"], by["sandbox-tiny-llama-unconditional"]
        assert b > 0 and not (ahi < blo or bhi < alo), (a, b)  # same model, same samples: the intervals agree
        assert {r for (r,) in con.execute("select distinct run_id from fct_mixture_evaluation").fetchall()} == \
            {"sandbox-tiny-neutral", "sandbox-tiny-llama-neutral"}
    rep = run_cli("report", home=home, check=True)
    assert "figures" in rep.stdout
    assert (home / "report" / "metrics.png").exists()
