"""Numbers depend on the content of the data, never on how it arrived.

The same texts reach the warehouse three ways: as `lmaudit generate` writes them (the model's token counts
in n_tokens), imported with a wrong n_tokens, and imported without it. After tracing and building, every
PropMe metric is identical. Then one run is re-imported with new texts under the same ids: until it is
traced again the marts say so (no stale spans are used), and tracing again redoes the work instead of
reporting it done. Each of these failed before traced_generations existed (FMR50 undercounted without
n_tokens; a re-imported run kept its old spans)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from ingest.build import build
from ingest.corpora import corpus_id_for, register_corpus
from ingest.generate.backends import GenOutput, SamplingConfig
from ingest.generate.runner import PromptUnit, RunSpec, run_generation
from ingest.home import db_path
from ingest.importers.generations import import_generations
from ingest.lake import Lake
from ingest.trace.params import TraceParams
from ingest.trace.run import TraceJob, trace_generations

pytestmark = pytest.mark.slow
SELECT = ["+fct_setting_metrics", "stg_corpora"]


class _Replay:
    """Hands back fixed texts as a backend would (the shape of `lmaudit generate`'s rows is what is tested)."""

    name = "replay"
    bos_id = 0

    def __init__(self, texts):
        self.texts = texts

    def generate(self, requests, sampling):
        return [GenOutput(r.key, tuple(range(7)), self.texts[int(r.seed) - 42], "length") for r in requests]

    def encode(self, text):
        return []


def _texts(mini_stack) -> list[str]:
    docs = [d["text"] for d in mini_stack["docs"]]
    return [docs[0][:600], docs[1][:400], docs[2][200:700], " ", "", "\n\n", "Quantum zebras juggle violet pianos.",
            docs[3][:120] + " and then something no corpus has ever said, surely"]


def _trace(lake: Lake, mini_stack, run_id: str):
    gens = [(g["generation_id"], g["text"]) for g in lake.read("generations").to_pylist() if g["run_id"] == run_id]
    job = TraceJob((str(mini_stack["index"]),), TraceParams())
    return trace_generations(lake, job, gens, f"run:{run_id}", corpus_id=corpus_id_for("mini"), progress=False,
                             batch_size=3)


def _metrics(home: Path) -> dict[tuple[str, str], tuple]:
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        return {(r, m): (v, n, reason) for r, m, v, n, reason in con.execute(
            "select run_id, metric, value, n_units, null_reason from fct_setting_metrics").fetchall()}


def test_same_texts_same_marts_and_changed_texts_are_retraced(mini_stack, home: Path, tmp_path: Path) -> None:
    lake = Lake(home)
    register_corpus(lake, "mini", [mini_stack["index"]])
    texts = _texts(mini_stack)

    lake.write("prompts", "start", [{"prompt_id": "start", "setting": "unconditional", "text": "",
                                     "corpus_id": corpus_id_for("mini")}])
    spec = RunSpec("gen", "m", "unconditional", "hf", corpus_id_for("mini"), SamplingConfig(), chunk_size=3)
    run_generation(lake, _Replay(texts), spec, [PromptUnit("start", (0,), len(texts))], progress=False)
    with_n, without_n = tmp_path / "with.jsonl", tmp_path / "without.jsonl"
    with_n.write_text("".join(json.dumps({"text": t, "n_tokens": 3}) + "\n" for t in texts))
    without_n.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    import_generations(lake, with_n, run_id="imp-n", model="m", setting="unconditional", corpus="mini")
    import_generations(lake, without_n, run_id="imp", model="m", setting="unconditional", corpus="mini")
    for run_id in ("gen", "imp-n", "imp"):
        _trace(lake, mini_stack, run_id)
    result = build(home, progress=False, select=SELECT)
    assert result.success, result.failures

    got = _metrics(home)
    metrics = sorted({m for _, m in got})
    for m in metrics:
        assert got[("gen", m)] == got[("imp-n", m)] == got[("imp", m)], m
    # the long verbatim texts are full matches of >= 50 index tokens whatever n_tokens said (3, 7 or nothing)
    assert got[("imp", "fmr50")][0] == pytest.approx(3 / 8)
    # three of eight outputs are empty or whitespace-only; the whitespace ones occur in the corpus
    assert got[("imp", "blank_rate")][0] == pytest.approx(3 / 8)
    assert got[("imp", "fmr_nonblank")][0] == pytest.approx(3 / 5)
    assert got[("imp", "fmr")][0] == pytest.approx(3 / 8)  # the whitespace outputs never count as matches

    # new texts under the same ids: nothing of the old trace may be used
    novel = [f"novel output number {i} about quantum zebras and violet pianos" for i in range(len(texts))]
    without_n.write_text("".join(json.dumps({"text": t}) + "\n" for t in novel))
    import_generations(lake, without_n, run_id="imp", model="m", setting="unconditional", corpus="mini")
    assert build(home, progress=False, select=SELECT).success
    stale = _metrics(home)
    assert stale[("imp", "fmr")][0] is None
    assert stale[("imp", "fmr")][2].startswith("not traced: its texts changed")
    assert stale[("imp", "blank_rate")][0] == 0  # text-only metrics follow the new texts at once

    again = _trace(lake, mini_stack, "imp")
    assert again.n_skipped == 0 and again.n_batches == 3  # traced again, not "already done"
    assert build(home, progress=False, select=SELECT).success
    fresh = _metrics(home)
    assert fresh[("imp", "fmr")][0] == 0 and fresh[("imp", "r20")][0] == 0
    assert fresh[("gen", "fmr50")] == got[("gen", "fmr50")]  # the other runs are untouched
    # one row per (trace, generation): the old trace partitions of this run are gone
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        (n, d) = con.execute("select count(*), count(distinct generation_id) from stg_traced_generations").fetchone()
    assert n == d == 3 * len(texts)
