"""`lmaudit sql --format csv|tsv|json|markdown`: what a pipe reads back is what the query returned.

Oracles: Python's csv and json parsers, and a TSV reader that undoes the documented escapes, applied to the
written text and compared with the rows DuckDB returns for the same query; LF line endings throughout."""

from __future__ import annotations

import csv
import io
import json

import duckdb
import pytest

from ingest.sql_output import write_rows

QUERY = ("select * from (values (1, 'plain', 1.5, null), (2, e'tab\\there, \"quoted\"\\nnew line|pipe', "
         "'nan'::double, 'x'), (3, 'back\\\\slash é 中', -0.25, '')) as t(id, text, x, maybe)")


@pytest.fixture(scope="module")
def result():
    cur = duckdb.connect().execute(QUERY)
    return [d[0] for d in cur.description], cur.fetchall()


def _written(result, fmt: str) -> str:
    out = io.StringIO(newline="")
    write_rows(*result, fmt, out)
    text = out.getvalue()
    assert "\r\n" not in text.replace("\\r", "")
    return text


def test_csv_reads_back(result) -> None:
    cols, rows = result
    got = list(csv.reader(io.StringIO(_written(result, "csv"), newline="")))
    assert got[0] == cols
    assert got[1:] == [["" if v is None else str(v) for v in r] for r in rows]


def test_tsv_is_one_line_per_row_and_reads_back(result) -> None:
    cols, rows = result
    lines = _written(result, "tsv").split("\n")
    assert lines[-1] == "" and len(lines) == len(rows) + 2

    def unescape(field: str) -> str:
        out, i = [], 0
        while i < len(field):
            if field[i] == "\\":
                out.append({"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}[field[i + 1]])
                i += 2
            else:
                out.append(field[i])
                i += 1
        return "".join(out)

    assert lines[0].split("\t") == cols
    for line, row in zip(lines[1:], rows):
        assert [unescape(f) for f in line.split("\t")] == ["" if v is None else str(v) for v in row]


def test_json_lines_read_back(result) -> None:
    cols, rows = result
    got = [json.loads(line) for line in _written(result, "json").splitlines()]
    assert [list(g) for g in got] == [cols] * len(rows)  # keys in the query's column order
    for g, row in zip(got, rows):
        for c, v in zip(cols, row):
            want = None if isinstance(v, float) and v != v else v  # NaN has no JSON form: null
            assert g[c] == want


def test_markdown_keeps_one_row_per_line(result) -> None:
    lines = _written(result, "markdown").splitlines()
    assert len(lines) == 2 + len(result[1]) and lines[1] == "|---|---|---|---|"
    assert all(line.count(" | ") == 3 for line in lines[2:])  # escaped pipes do not split cells
    assert "new line\\|pipe" in lines[3] and "<br>" in lines[3]


def test_cli_writes_the_format_and_refuses_an_unknown_one(tmp_path, capsys) -> None:
    from conftest import run_cli
    from ingest.cli.main import run

    home = tmp_path / "wh"
    home.mkdir()
    duckdb.connect(str(home / "lmaudit.duckdb")).close()
    proc = run_cli("sql", "select 1 as a, 'x' as b union all select 2, null order by a", "--format", "json",
                   "--max-rows", "1", home=home)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == '{"a": 1, "b": "x"}\n' and "first 1 rows" in proc.stderr
    assert run(["-w", str(home), "sql", "select 1", "--format", "xml"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "xml" in err and len(err.splitlines()) == 1
