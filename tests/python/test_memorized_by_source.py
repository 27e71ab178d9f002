"""The demo's "what came back, and from where" table on hand-built rows (ingest/report/memorized.py)."""

from __future__ import annotations

import duckdb

from ingest.cli.memorized_table import print_memorized
from ingest.report.memorized import memorized_by_source


def _con():
    con = duckdb.connect()
    con.execute("create table int_generation_facts (generation_id varchar, run_id varchar, trace_id varchar, "
                "setting varchar, is_traced boolean, is_degenerate boolean, is_blank boolean)")
    con.execute("create table stg_spans (span_id varchar, trace_id varchar, generation_id varchar, length integer, "
                "count bigint, text varchar)")
    con.execute("create table stg_span_documents (span_id varchar, domain varchar)")
    con.execute("create table int_span_loops (span_id varchar, is_loop boolean)")
    con.execute("insert into int_generation_facts values "
                "('g1', 'r', 't', 'unconditional', true, false, false), ('g2', 'r', 't', 'prefix', true, false, false), "
                "('g3', 'r', 't', 'prefix', true, true, false), ('g4', 'other', 't', 'prefix', true, false, false), "
                "('g5', 'r', 't', 'generic', true, false, true)")
    con.execute("insert into stg_spans values "
                "('s1', 't', 'g1', 64, 200, 'Volk lyn remp'), ('s2', 't', 'g2', 30, 200, 'Volk lyn'), "
                "('s3', 't', 'g2', 12, 16, 'WITHOUT WARRANTY OF ANY KIND'), ('s4', 't', 'g1', 7, 1, 'def f('), "
                "('s5', 't', 'g3', 90, 1, 'a degenerate loop'), ('s6', 't', 'g4', 99, 1, 'another run'), "
                "('s7', 't', 'g2', 38, 2, '* * * * * * * *'), ('s8', 't', 'g5', 40, 9, '   ')")
    con.execute("insert into int_span_loops values ('s7', true), ('s1', false)")
    con.execute("insert into stg_span_documents values ('s1', 'canary'), ('s2', 'canary'), "
                "('s3', 'boilerplate'), ('s3', 'boilerplate'), ('s3', 'code'), ('s4', 'code'), ('s5', 'code'), "
                "('s6', 'code'), ('s7', 'boilerplate'), ('s8', 'boilerplate')")
    return con


def test_one_row_per_source_with_its_origin_longest_span_and_copies():
    rows = memorized_by_source(_con(), ["r"])
    got = [(r.domain, r.origin, r.n_long, r.longest, r.copies, r.setting, r.text) for r in rows]
    assert got == [
        ("canary", "planted", 2, 64, 200, "unconditional", "Volk lyn remp"),
        ("boilerplate", "natural copies", 0, 12, 16, "prefix", "WITHOUT WARRANTY OF ANY KIND"),  # majority domain
        ("code", "seen ~once", 0, 7, 1, "unconditional", "def f("),  # degenerate, blank, loops, other runs out
    ]
    assert memorized_by_source(_con(), []) == []


def test_the_table_prints(capsys):
    print_memorized(memorized_by_source(_con(), ["r"]))
    out = capsys.readouterr().out
    assert "planted" in out and "natural copies" in out and "WARRANTY" in out
