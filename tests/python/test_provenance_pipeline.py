"""`lmaudit provenance` end to end on sandbox documents checked by hand: index build and attach, import, trace,
provenance, build, export; the mart's licence column against a hand-written table (docs/provenance.md)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from ingest.home import db_path
from ingest.lake import Lake
from tests.python.conftest import run_cli

# Sandbox documents (ids of `lmaudit sandbox build --size tiny`, seed 0) and their licence, checked by hand
# against the files and the distributions' dist-info METADATA on 2026-12-04:
HAND_TABLE = {
    # typer's own LICENSE; METADATA License-Expression: MIT
    "boilerplate/typer/typer.dist-info/licenses/LICENSE": "MIT",
    # dbt-core's LICENSE; METADATA License-Expression: Apache-2.0
    "boilerplate/dbt-core/dbt_core.dist-info/licenses/LICENSE": "Apache-2.0",
    # torch ships FP16's licence: "The MIT License (MIT)" (torch's METADATA lists MIT among its expression)
    "boilerplate/torch/torch.dist-info/licenses/third_party/FP16/LICENSE": "MIT",
    # Google benchmark's licence, the Apache License 2.0 text
    "boilerplate/torch/torch.dist-info/licenses/third_party/benchmark/LICENSE": "Apache-2.0",
    # XNNPACK: "BSD License", three clauses (the third: "Neither the name Facebook nor ...")
    "boilerplate/torch/torch.dist-info/licenses/third_party/XNNPACK/LICENSE": "BSD-3-Clause",
    # the Apache-2.0 header on transformers' code (METADATA: "Apache 2.0 License")
    "code/transformers/transformers/models/yoso/__init__.py": "Apache-2.0",
    # line 2: "# SPDX-License-Identifier: BSD-3-Clause" (METADATA License-Expression: BSD-3-Clause)
    "code/scikit-learn/sklearn/metrics/_plot/confusion_matrix.py": "BSD-3-Clause",
    # a docstring carrying pandas' BSD 3-Clause text, although duckdb's METADATA says MIT: the text wins
    "documentation/docstring/duckdb/duckdb/bytes_io_wrapper.py": "BSD-3-Clause",
    # no licence text in the file: wordfreq's Apache-2.0 is only in its METADATA, which the corpus does not carry
    "code/wordfreq/wordfreq/tokens.py": None,
}

PII_DOC = ("# Copyright (c) 2021 Acme\n# SPDX-License-Identifier: MIT\n"
           "MAINTAINER = 'Jane Roe <jane.roe@example.com>'  # call +1 650-253-0000 on weekdays\n"
           "AWS_KEY = \"AKIAIOSFODNN7EXAMPLE\"\nVERSION = '2.13.0'\n"
           "COMMIT = '3f786850e387550fdab836ed7e6dc881de23001b'\n" + "def widget(x):\n    return x * 2\n" * 5)


def _window(text: str) -> str:
    """200 characters from the middle of a document (the licence must come from the whole text)."""
    mid = max(0, len(text) // 2 - 100)
    return text[mid:mid + 200]


def _rows(home: Path, sql: str) -> list[dict]:
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        cur = con.execute(sql)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    from ingest.sandbox.corpus import collect_documents

    root = tmp_path_factory.mktemp("prov")
    home = root / "warehouse"
    Lake(home).init()
    docs = {d.id: d for d in collect_documents("tiny", 0)[0] if d.id in HAND_TABLE}
    assert set(docs) == set(HAND_TABLE), "the tiny sandbox's document ids changed: check the hand table again"
    (root / "corpus").mkdir()
    lines = [{"id": d.id, "domain": d.domain, "source": d.source, "text": d.text} for d in docs.values()]
    lines.append({"id": "acme/widget.py", "text": PII_DOC, "license": "apache-2.0", "repo_name": "acme/widgets",
                  "url": "https://example.org/widget.py", "path": "src/widget.py"})
    lines.append({"text": "A plain document without any metadata at all, about nothing in particular. " * 4})
    (root / "corpus" / "docs.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    run_cli("index", "build", str(root / "corpus"), "--tokenizer", "bytes", "--out", str(root / "index"),
            home=home, check=True)
    run_cli("index", "attach", str(root / "index"), "--tokenizer", "bytes", "--name", "attached", home=home,
            check=True)
    gens = [{"prompt_id": x.get("id", "plain"), "text": _window(x["text"])} for x in lines[:-2]]
    gens.append({"prompt_id": "acme", "text": PII_DOC[25:300]})
    gens.append({"prompt_id": "plain", "text": lines[-1]["text"][:120]})
    gens.append({"prompt_id": "novel", "text": "Nothing here was in the training data, zebra quartz marmalade."})
    (root / "u.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gens))
    typer = docs["boilerplate/typer/typer.dist-info/licenses/LICENSE"].text
    (root / "p.jsonl").write_text(json.dumps({"prompt_id": "t", "text": _window(typer)}) + "\n")
    for run, setting, f in (("r-uncond", "unconditional", "u.jsonl"), ("r-prefix", "prefix", "p.jsonl")):
        run_cli("import", "generations", str(root / f), "--run-id", run, "--model", "m", "--setting", setting,
                "--corpus", "attached", home=home, check=True)
        run_cli("trace", "--run", run, "--corpus", "attached", home=home, check=True)
    first = run_cli("provenance", home=home, check=True)
    lake = Lake(home)
    counts = {t: lake.read(t).num_rows for t in ("document_provenance", "personal_data_scans", "personal_data_findings")}
    again = run_cli("provenance", home=home, check=True)
    run_cli("build", "-s", "+fct_document_provenance", "-s", "+fct_reproduced_personal_data", home=home, check=True)
    return {"home": home, "root": root, "first": first.stdout, "again": again.stdout, "counts": counts,
            "lake": lake}


@pytest.mark.slow  # index build, two imports and traces, provenance twice, a dbt build (~1 min)
def test_licence_column_agrees_with_the_hand_table(warehouse):
    rows = {r["doc_id"]: r for r in _rows(warehouse["home"], "select * from fct_document_provenance")}
    for doc_id, licence in HAND_TABLE.items():
        assert doc_id in rows, f"{doc_id} is not reproduced"
        r = rows[doc_id]
        assert r["licence"] == licence, (doc_id, r["licence"], r["licence_detected"])
        assert r["licence_origin"] == (None if licence is None else "text") and r["is_read"]
        # the sandbox's metadata has a source and nothing else: the other fields are null, never invented
        assert "==" in r["source"]  # <distribution>==<version>/<path>
        assert (r["path"], r["url"], r["repository"], r["licence_declared"]) == (None, None, None, None)
        assert r["corpus_name"] == "attached" and r["longest_span"] >= 20
    typer = rows["boilerplate/typer/typer.dist-info/licenses/LICENSE"]
    assert (typer["n_runs"], list(typer["settings"])) == (2, ["prefix", "unconditional"])
    assert list(typer["run_ids"]) == ["r-prefix", "r-uncond"] and typer["n_generations"] == 2
    assert rows["boilerplate/dbt-core/dbt_core.dist-info/licenses/LICENSE"]["licence_evidence"] == "licence_text"
    assert rows["code/scikit-learn/sklearn/metrics/_plot/confusion_matrix.py"]["licence_evidence"] == "spdx_identifier"
    # the metadata's licence field wins over the text's, normalised; fields come from aliases (repo_name)
    acme = rows["acme/widget.py"]
    assert (acme["licence"], acme["licence_origin"], acme["licence_declared"], acme["licence_detected"]) == (
        "Apache-2.0", "metadata", "apache-2.0", "MIT")
    assert (acme["repository"], acme["url"], acme["path"]) == ("acme/widgets", "https://example.org/widget.py",
                                                              "src/widget.py")
    plain = next(r for r in rows.values() if r["doc_id"] is None)
    assert (plain["source"], plain["licence"], plain["repository"]) == (None, None, None)
    assert len(rows) == len(HAND_TABLE) + 2  # the novel generation reproduces nothing


@pytest.mark.slow
def test_personal_data_counts_per_run_and_setting(warehouse):
    rows = {(r["run_id"], r["kind"]): r for r in _rows(
        warehouse["home"], "select * from fct_reproduced_personal_data")}
    assert set(rows) == {(r, k) for r in ("r-uncond", "r-prefix") for k in ("email", "phone", "secret")}
    for kind, masked in (("email", "ja***email"), ("phone", "+1***phone"), ("secret", "AK***secret")):
        r = rows[("r-uncond", kind)]
        assert (r["n_generations_with"], r["n_findings"], r["n_distinct_values"]) == (1, 1, 1), kind
        assert list(r["examples"]) == [masked] and r["setting"] == "unconditional"
        assert r["n_generations"] == len(HAND_TABLE) + 3
        assert rows[("r-prefix", kind)]["n_findings"] == 0
    # the version number and the commit hash in the same span are not flagged; nothing stored in full
    findings = warehouse["lake"].read("personal_data_findings").to_pylist()
    assert sorted(f["kind"] for f in findings) == ["email", "phone", "secret"]
    raw = json.dumps(findings, default=str)
    assert "jane.roe@example.com" not in raw and "AKIAIOSFODNN7EXAMPLE" not in raw and "253-0000" not in raw


@pytest.mark.slow
def test_rerun_is_idempotent_and_export_writes_the_mart(warehouse):
    lake, counts = warehouse["lake"], warehouse["counts"]
    assert counts["document_provenance"] == len(HAND_TABLE) + 2
    assert {t: lake.read(t).num_rows for t in counts} == counts  # the second run wrote nothing
    assert "0 documents read" in warehouse["again"] and "0 spans scanned" in warehouse["again"]
    proc = run_cli("export", "--format", "csv", "-m", "fct_document_provenance", "--no-publish",
                   home=warehouse["home"], check=True)
    out = warehouse["home"] / "exports" / "fct_document_provenance.csv"
    assert out.exists() and "fct_document_provenance.csv" in proc.stdout
    header = out.read_text().splitlines()[0].split(",")
    assert {"doc_id", "licence", "source", "repository", "run_ids", "longest_span"} <= set(header)
    bad = run_cli("provenance", "--min-span", "0", home=warehouse["home"])
    assert bad.returncode == 2 and bad.stderr.count("\n") <= 1 and "--min-span" in bad.stderr


@pytest.mark.slow
def test_report_section_shows_licences_and_only_masked_personal_data(warehouse):
    from ingest.export import connect_marts
    from ingest.report.provenance import provenance_section

    con = connect_marts(warehouse["home"])
    try:
        page, skipped = provenance_section(con)
    finally:
        con.close()
    assert skipped == [] and "Provenance: licences of reproduced documents" in page
    assert "BSD-3-Clause" in page and "Apache-2.0" in page and "none found" in page
    assert "ja***email" in page and "+1***phone" in page and "AK***secret" in page
    for secret in ("jane.roe@example.com", "AKIAIOSFODNN7EXAMPLE", "650-253-0000"):
        assert secret not in page
