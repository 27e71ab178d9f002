"""`lmaudit reference import`: stratified seeded folds, caps, dedupe, row-precise errors, idempotent re-import."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ingest.errors import UserError
from ingest.lake import Lake
from ingest.references import import_references

from conftest import run_cli


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def corpus(sizes: dict[str, int]) -> list[dict]:
    return [{"id": f"{d}-{i}", "domain": d, "text": f"{d} document number {i} with some words"}
            for d, n in sizes.items() for i in range(n)]


def rows(lake: Lake) -> list[dict]:
    return sorted(lake.read("reference_docs").to_pylist(), key=lambda r: r["ref_doc_id"])


def test_folds_are_stratified_balanced_and_seeded(lake: Lake, tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "refs.jsonl", corpus({"code": 23, "docs": 17, "web": 10}))
    s = import_references(lake, f, folds=5, seed=3)
    assert s.kept == {"code": 23, "docs": 17, "web": 10} and s.n_rows == 50
    got = rows(lake)
    assert len(got) == 50 and {r["split"] for r in got} == {"train"}
    for domain, n in s.kept.items():
        per_fold = Counter(r["fold"] for r in got if r["domain"] == domain)
        assert set(per_fold) == set(range(5))
        assert max(per_fold.values()) - min(per_fold.values()) <= 1, (domain, per_fold)
    overall = Counter(r["fold"] for r in got)
    assert max(overall.values()) - min(overall.values()) <= 1, overall
    # same seed: same folds; another seed: another assignment
    before = {r["doc_id"]: r["fold"] for r in got}
    import_references(lake, f, folds=5, seed=3)
    assert {r["doc_id"]: r["fold"] for r in rows(lake)} == before
    import_references(lake, f, folds=5, seed=4)
    assert {r["doc_id"]: r["fold"] for r in rows(lake)} != before


def test_cap_per_domain_is_a_seeded_sample_and_duplicates_are_dropped(lake: Lake, tmp_path: Path) -> None:
    docs = corpus({"code": 30, "docs": 8})
    docs.append({"id": "dup", "domain": "docs", "text": docs[-1]["text"]})  # same domain, same text
    f = write_jsonl(tmp_path / "refs.jsonl", docs)
    s = import_references(lake, f, cap_per_domain=12, folds=4, seed=0)
    assert s.kept == {"code": 12, "docs": 8}
    assert s.dropped_cap == {"code": 18} and s.dropped_duplicates == {"docs": 1}
    kept = {r["doc_id"] for r in rows(lake)}
    import_references(lake, f, cap_per_domain=12, folds=4, seed=0)
    assert {r["doc_id"] for r in rows(lake)} == kept
    assert "dropped 18 over the cap, 1 duplicates" in s.line()


def test_reimport_replaces_instead_of_duplicating(lake: Lake, home: Path, tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "refs.jsonl", corpus({"code": 6, "docs": 6}))
    first = run_cli("reference", "import", str(f), "--folds", "3", home=home, check=True)
    assert "imported 12 reference documents" in first.stdout
    snapshot = rows(lake)
    second = run_cli("reference", "import", str(f), "--folds", "3", home=home, check=True)
    assert "replaced 12 reference documents" in second.stdout
    assert rows(lake) == snapshot
    # another source is another partition; the ids differ by source
    import_references(lake, f, folds=3, source="other")
    assert len(rows(lake)) == 24


def test_parquet_input_and_custom_fields(lake: Lake, tmp_path: Path) -> None:
    f = tmp_path / "refs.parquet"
    pq.write_table(pa.table({"label": ["a"] * 3 + ["b"] * 3, "body": [f"text {i}" for i in range(6)]}), f)
    s = import_references(lake, f, domain_field="label", text_field="body", folds=3)
    assert s.kept == {"a": 3, "b": 3}
    assert all(r["doc_id"].startswith("h:") for r in rows(lake))  # no id field: content hash


@pytest.mark.parametrize("content, message", [
    ('{"domain": "a", "text": "x"}\n{"domain": "a", "text": "   "}\n', "row 2: empty text"),
    ('{"domain": "a", "text": "x"}\n{"text": "y"}\n', "row 2: missing domain field 'domain'"),
    ('{"domain": "a", "body": "x"}\n', "row 1: missing text field 'text'"),
    ('{"domain": 1.5, "text": "x"}\n', "row 1: domain field 'domain' must be a string"),
    ('{"domain": "a", "text": "x", "id": 1}\n{"domain": "a", "text": "y", "id": 1}\n', "row 2: duplicate id '1'"),
    ('{"domain": "a", "text": "x"}\nnot json\n', "row 2: invalid JSON"),
    ('', "no reference documents found"),
])
def test_bad_rows_are_one_line_errors_and_nothing_is_written(lake: Lake, tmp_path: Path, content: str,
                                                             message: str) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text(content, encoding="utf-8")
    with pytest.raises(UserError, match=message):
        import_references(lake, f, folds=2)
    assert lake.read("reference_docs").num_rows == 0


def test_non_utf8_and_too_few_documents_for_the_folds(lake: Lake, home: Path, tmp_path: Path) -> None:
    f = tmp_path / "latin1.jsonl"
    f.write_bytes(b'{"domain": "a", "text": "ok"}\n{"domain": "a", "text": "caf\xe9"}\n')
    with pytest.raises(UserError, match=r"row 2: not valid UTF-8"):
        import_references(lake, f, folds=2)
    few = write_jsonl(tmp_path / "few.jsonl", corpus({"code": 9, "docs": 3}))
    proc = run_cli("reference", "import", str(few), "--folds", "5", home=home)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: {few}: domain 'docs' has 3 document(s), fewer than --folds 5; add documents or lower --folds"]
    with pytest.raises(UserError, match="--folds must be at least 2"):
        import_references(lake, few, folds=1)
    assert lake.read("reference_docs").num_rows == 0
