"""The seeded documented mixtures: each recipe sums to one, and the ones derived from published counts equal
those counts as shares (hand-copied here from the sources the seed names)."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest

SEED = Path(__file__).resolve().parents[2] / "seeds" / "mixtures_documented.csv"


def _recipes() -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = defaultdict(dict)
    with open(SEED, encoding="utf-8") as f:
        for r in csv.DictReader(f):
            assert r["domain"] not in out[r["model"]], (r["model"], r["domain"])
            assert r["source"].strip(), r["model"]
            out[r["model"]][r["domain"]] = float(r["weight"])
    return out


def test_every_recipe_sums_to_one() -> None:
    for model, shares in _recipes().items():
        assert sum(shares.values()) == pytest.approx(1.0, abs=2e-3), model
        assert all(0 <= w <= 1 for w in shares.values()), model


def test_amber_is_its_token_counts_as_shares() -> None:
    billions = {"RefinedWeb": 665.01, "C4": 197.67, "StarCoder": 291.92, "ArXiv": 30.00, "Books": 28.86,
                "StackExchange": 21.75, "Wikipedia": 23.90}  # LLM360/Amber DataMix table, total 1259.13
    got = _recipes()["Amber"]
    assert set(got) == set(billions)
    for d, b in billions.items():
        assert got[d] == pytest.approx(b / 1259.13, abs=1e-5), d


def test_olmo_versions_as_llmsurgeon_table_7_states_them() -> None:
    r = _recipes()
    assert r["OLMo-2"] == pytest.approx({"Web": 0.955, "GitHub": 0.021, "Wikipedia": 0.001, "Books": 0.015,
                                          "ArXiv": 0.005, "StackExchange": 0.003})
    assert r["OLMo-3"]["Web"] == pytest.approx(0.7688) and r["OLMo-3"]["Books"] == pytest.approx(0.126)
    # OLMo-1B's 7-way recipe merges to Table 7's Web 81.1 (CommonCrawl + C4)
    assert r["OLMo-1B"]["CommonCrawl"] + r["OLMo-1B"]["C4"] == pytest.approx(0.811)
