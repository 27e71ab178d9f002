"""`lmaudit mixture documented add`: a user's documented mixture into `mixtures_documented`, validated,
normalised with a warning, replacing (never duplicating) an earlier entry of the same model; and, after a
build, the model's estimates are scored against it in `fct_mixture_evaluation`.

Oracles: the files are written here, so the stored shares are known (60/40 given as percentages is
0.6/0.4); the end-to-end test reuses test_mixture_dbt.py's hand-built lake, whose pacc estimate is exactly
its generations' mixture alpha, so registering alpha for the run's model must give pacc an overlap accuracy
of 1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ingest.cli.main import run
from ingest.lake import Lake, make_key


def _stored(home: Path) -> list[dict]:
    return sorted(Lake(home).read("mixtures_documented").to_pylist(), key=lambda r: (r["model"], r["domain"]))


def test_csv_yaml_list_and_mapping(tmp_path: Path, capsys) -> None:
    home = tmp_path / "wh"
    (tmp_path / "m.csv").write_text("domain,share\ncode,0.25\nweb,0.75\n")
    assert run(["-w", str(home), "mixture", "documented", "add", str(tmp_path / "m.csv"), "--model", "org/a",
                "--source", "tech report, table 1"]) == 0
    assert [(r["model"], r["domain"], r["weight"], r["source"]) for r in _stored(home)] == [
        ("org/a", "code", 0.25, "tech report, table 1"), ("org/a", "web", 0.75, "tech report, table 1")]
    assert _stored(home)[0]["mixture_id"] == make_key("org/a", "code")  # the key the sandbox writes too
    (tmp_path / "l.yaml").write_text("- {domain: books, share: 0.5}\n- domain: code\n  share: 0.5\n")
    (tmp_path / "d.yml").write_text("web: 1.0\n")
    assert run(["-w", str(home), "mixture", "documented", "add", str(tmp_path / "l.yaml"), "--model", "b"]) == 0
    assert run(["-w", str(home), "mixture", "documented", "add", str(tmp_path / "d.yml"), "--model", "c"]) == 0
    got = {(r["model"], r["domain"]): r["weight"] for r in _stored(home)}
    assert got[("b", "books")] == 0.5 and got[("b", "code")] == 0.5 and got[("c", "web")] == 1.0
    assert {r["source"] for r in _stored(home) if r["model"] == "b"} == {str((tmp_path / "l.yaml").resolve())}
    out = capsys.readouterr()
    assert "warning" not in out.err and "no run of model" in out.out


def test_shares_not_summing_to_one_are_normalised_with_a_warning(tmp_path: Path, capsys) -> None:
    home = tmp_path / "wh"
    (tmp_path / "pct.csv").write_text("domain,share\ncode,60\ndocs,40\n")
    capsys.readouterr()
    assert run(["-w", str(home), "mixture", "documented", "add", str(tmp_path / "pct.csv"), "--model", "m"]) == 0
    assert {r["domain"]: r["weight"] for r in _stored(home)} == {"code": 0.6, "docs": 0.4}
    err = capsys.readouterr().err
    assert err.startswith("warning: the shares sum to 100, not 1") and err.count("\n") == 1
    (tmp_path / "near.csv").write_text("domain,share\ncode,0.3333333\ndocs,0.6666667\n")  # within 1e-6: no warning
    assert run(["-w", str(home), "mixture", "documented", "add", str(tmp_path / "near.csv"), "--model", "m"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_a_second_add_replaces_the_first(tmp_path: Path, capsys) -> None:
    home = tmp_path / "wh"
    (tmp_path / "a.csv").write_text("domain,share\ncode,0.5\nweb,0.5\n")
    (tmp_path / "b.csv").write_text("domain,share\nbooks,1\n")
    assert run(["-w", str(home), "mixture", "documented", "add", str(tmp_path / "a.csv"), "--model", "Org/M",
                "--source", "v1"]) == 0
    capsys.readouterr()
    assert run(["-w", str(home), "mixture", "documented", "add", str(tmp_path / "b.csv"), "--model", "org/m",
                "--source", "v2"]) == 0  # the same model for the marts (matched case-insensitively)
    assert [(r["model"], r["domain"], r["source"]) for r in _stored(home)] == [("org/m", "books", "v2")]
    assert "replaced the earlier mixture (source: v1)" in capsys.readouterr().out
    assert len(Lake(home).partitions("mixtures_documented")) == 1


def test_a_sandbox_model_is_not_overwritten(tmp_path: Path) -> None:
    home = tmp_path / "wh"
    Lake(home).write("mixtures_documented", "sandbox--sandbox-tiny", [
        {"mixture_id": make_key("/s/model", "code"), "model": "/s/model", "domain": "code", "weight": 1.0,
         "source": "sandbox mixture.json"}])
    (tmp_path / "a.csv").write_text("domain,share\ncode,1\n")
    before = _stored(home)
    assert run(["-w", str(home), "mixture", "documented", "add", str(tmp_path / "a.csv"), "--model", "/s/model"]) == 2
    assert _stored(home) == before


@pytest.mark.slow
def test_after_add_and_build_the_model_is_evaluated(tmp_path: Path) -> None:
    from test_mixture_dbt import ALPHA, DOMAINS, ESTIMATORS, N_BOOT, SEED, SELECT, query, write_lake

    from ingest.build import build

    home = tmp_path / "warehouse"
    write_lake(home)
    Lake(home).delete("mixtures_documented", "hand")  # the model has no documented mixture until we add one
    f = tmp_path / "hand.csv"
    f.write_text("domain,share\n" + "".join(f"{d},{a}\n" for d, a in zip(DOMAINS, ALPHA)))
    assert run(["-w", str(home), "mixture", "documented", "add", str(f), "--model", "hand-model",
                "--source", "hand-made truth"]) == 0
    os.environ["DBT_INDIRECT_SELECTION"] = "cautious"
    try:
        res = build(home, select=SELECT, progress=False,
                    vars_=json.dumps({"mixture_bootstrap_resamples": N_BOOT, "mixture_bootstrap_seed": SEED,
                                      "mixture_estimators": ESTIMATORS}))
    finally:
        os.environ.pop("DBT_INDIRECT_SELECTION", None)
    assert res.success, res.failures
    rows = query(home, "select * from fct_mixture_evaluation where documented_model = 'hand-model'")
    assert rows, "no evaluation rows for the registered model"
    assert {r["run_id"] for r in rows} == {"r1"} and {r["documented_source"] for r in rows} == {"hand-made truth"}
    pacc = [r for r in rows if r["estimator"] == "pacc" and r["classifier_name"] == "hand"]
    assert len(pacc) == 1 and pacc[0]["overlap_accuracy"] == pytest.approx(1.0, abs=1e-6)
