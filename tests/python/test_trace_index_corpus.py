"""`lmaudit trace --index DIR` of a registered corpus's index records that corpus, as `--corpus NAME` does: the
pass (same index, same parameters, so the same trace id) keeps one corpus_id whichever flag was used. An index
that no corpus registers keeps none. Oracle: the corpora table's own corpus_id."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli
from mini_warehouse import mini_texts, mini_warehouse

from ingest.lake import Lake


def _passes(home: Path) -> list[tuple[str, str | None]]:
    return sorted(((r["trace_id"], r["corpus_id"]) for r in Lake(home).read("trace_runs").to_pylist()), key=str)


def test_index_and_corpus_flags_record_the_same_corpus(tmp_path: Path) -> None:
    home = tmp_path / "wh"
    mini_warehouse(home, seed=0)
    corpus_id = Lake(home).read("corpora").to_pylist()[0]["corpus_id"]
    gens = tmp_path / "gens.jsonl"
    gens.write_text("".join(json.dumps({"generation_id": f"g{i}", "text": t[40:300]}) + "\n"
                            for i, t in enumerate(mini_texts(0)[:3])))
    index = home / "sandbox" / "mini" / "index"
    for flags in (["--index", str(index)], ["--corpus", "mini"], ["--index", str(index)]):
        p = run_cli("trace", *flags, "--generations", str(gens), home=home)
        assert p.returncode == 0, p.stderr
        passes = _passes(home)
        assert len(passes) == 1 and passes[0][1] == corpus_id, (flags, passes)

    other = tmp_path / "other"  # an index no corpus of this warehouse registers: no corpus
    mini_warehouse(other, seed=1)
    p = run_cli("trace", "--index", str(other / "sandbox" / "mini" / "index"), "--generations", str(gens), home=home)
    assert p.returncode == 0, p.stderr
    assert sorted((c for _, c in _passes(home)), key=str) == sorted([corpus_id, None], key=str)
