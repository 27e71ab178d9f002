"""`lmaudit trace --generations FILE`: the lake's rows depend on the file's content, never on its path.

Oracles: the rows of the first trace (a copy traced from anywhere must add nothing), and a fresh trace of the
edited file in an empty warehouse (an edited file traced again must leave exactly those rows: no duplicate
(generation, span) keys, no batch of the old texts). The text hashes are checked against hashlib's md5 of the
texts written here. A lake written before files were keyed by content (partitions named from the file's
absolute path, possibly twice from two paths) must end up the same way after one trace.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import byte_level_bpe

from ingest.cli.trace_cmds import load_generations
from ingest.lake import Lake, make_key
from ingest.trace.params import TraceParams
from ingest.trace.run import TraceJob, trace_generations

TABLES = ("spans", "span_documents", "span_counts", "traced_generations")
VOLATILE = {"created_at", "traced_at"}
WORDS = ["river", "stone", "lamp", "orchard", "winter", "signal", "copper", "harbor", "meadow", "engine"]


def _corpus() -> list[str]:
    return [" ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] + str((i + j) % 5) for j in range(60)) for i in range(8)]


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> str:
    from ingest.index import build_index

    root = tmp_path_factory.mktemp("file-source")
    (root / "corpus").mkdir()
    texts = _corpus()
    (root / "corpus" / "docs.jsonl").write_text("".join(json.dumps({"text": t, "id": f"d{i}"}) + "\n"
                                                        for i, t in enumerate(texts)))
    byte_level_bpe(texts, 300).save(str(root / "tokenizer.json"))
    build_index([root / "corpus"], str(root / "tokenizer.json"), root / "index", progress=False)
    return str(root / "index")


def _gens(ids=range(6)) -> dict[str, str]:
    corpus = _corpus()
    return {f"g{i}": corpus[i][20 + 3 * i:260] + " a tail of its own" for i in ids}


def _write(path: Path, gens: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"generation_id": g, "text": t}) + "\n" for g, t in gens.items()))
    return path


def _trace(home: Path, index: str, file: Path):
    """What `lmaudit trace --index I --generations FILE --batch-size 2` does, in-process."""
    lake = Lake(home)
    gens, source = load_generations(lake, None, file)
    return trace_generations(lake, TraceJob((index,), TraceParams()), gens, source, batch_size=2, progress=False)


def _rows(home: Path) -> dict[str, list[str]]:
    lake = Lake(home)
    return {t: sorted(json.dumps({k: v for k, v in r.items() if k not in VOLATILE}, sort_keys=True, default=str)
                      for r in lake.read(t).to_pylist()) for t in TABLES}


def _fresh(tmp_path: Path, index: str, file: Path) -> dict[str, list[str]]:
    home = tmp_path / "fresh" / file.stem
    _trace(home, index, file)
    return _rows(home)


def _check_keys(home: Path, texts: dict[str, str]) -> None:
    """One traced row per generation of `texts`, with its text's md5; span ids unique; no other generation."""
    lake = Lake(home)
    traced = lake.read("traced_generations").to_pylist()
    assert sorted(r["generation_id"] for r in traced) == sorted(texts)
    assert {r["generation_id"]: r["text_hash"] for r in traced} == \
        {g: hashlib.md5(t.encode()).hexdigest() for g, t in texts.items()}
    spans = lake.read("spans").to_pylist()
    assert len({s["span_id"] for s in spans}) == len(spans)
    assert len({(s["generation_id"], s["start_tok"], s["end_tok"]) for s in spans}) == len(spans)


def test_a_copy_traced_from_anywhere_adds_nothing(index, tmp_path: Path) -> None:
    home = tmp_path / "wh"
    first = _write(tmp_path / "a" / "gens.jsonl", _gens())
    s = _trace(home, index, first)
    assert s.n_batches == 3 and s.n_skipped == 0
    before = _rows(home)
    assert before["span_documents"], "the generations copy the corpus: documents must be found"
    # the same content under another folder and name, and as Parquet with a column the trace ignores
    copy = tmp_path / "b" / "renamed.jsonl"
    copy.parent.mkdir()
    shutil.copy(first, copy)
    as_parquet = tmp_path / "c" / "gens.parquet"
    as_parquet.parent.mkdir()
    gens = _gens()
    pq.write_table(pa.table({"text": list(gens.values()), "generation_id": list(gens),
                             "model": ["m"] * len(gens)}), as_parquet)
    for again in (copy, as_parquet, first):
        s = _trace(home, index, again)
        assert s.n_skipped == s.n_batches == 3, again
        assert _rows(home) == before, again
    _check_keys(home, _gens())


def test_an_edited_file_replaces_its_earlier_rows(index, tmp_path: Path) -> None:
    home = tmp_path / "wh"
    others = {"h0": _corpus()[7][:200], "h1": "nothing from the corpus"}
    other = _write(tmp_path / "other.jsonl", others)
    _trace(home, index, other)
    other_rows = _rows(home)
    file = _write(tmp_path / "gens.jsonl", _gens())
    _trace(home, index, file)

    # one text changed in place: its batch is traced again, the old batch is gone
    edited = {**_gens(), "g3": _corpus()[5][10:200] + " edited"}
    _write(file, edited)
    s = _trace(home, index, file)
    assert s.n_batches == 3 and s.n_skipped == 2
    _check_keys(home, {**edited, **others})
    fresh = _fresh(tmp_path, index, file)
    got = _rows(home)
    for t in TABLES:  # the lake = the other file's rows + a fresh trace of the edited file, nothing else
        assert got[t] == sorted(other_rows[t] + fresh[t]), t

    # edited again and traced from another path: one changed, one removed, one added generation
    moved = {**{g: t for g, t in edited.items() if g != "g5"}, "g0": "g0 rewritten, river stone lamp",
             "g9": _corpus()[6][:150]}
    elsewhere = _write(tmp_path / "moved" / "gens-v2.jsonl", moved)
    _trace(home, index, elsewhere)
    fresh = _fresh(tmp_path, index, elsewhere)
    got = _rows(home)
    for t in TABLES:
        assert got[t] == sorted(other_rows[t] + fresh[t]), t
    _check_keys(home, {**moved, **others})


def test_a_lake_keyed_by_path_is_replaced_by_one_trace(index, tmp_path: Path) -> None:
    """Partitions as written before this change (named from the file's absolute path, `file:<path>`), from
    two paths (the duplicates the path key caused): the next trace of the file removes both sets and leaves
    a fresh trace's rows."""
    home = tmp_path / "wh"
    lake = Lake(home)
    gens = _gens()
    paths = [_write(tmp_path / d / "gens.jsonl", gens) for d in ("old", "copied")]
    _trace(home, index, paths[0])
    for table in TABLES:  # the same rows under the old code's partition names, once per path
        for part in lake.partitions(table):
            pass_key, _, batch = part.split("--")
            rows = lake.read(table, part)
            for p in paths:
                lake.write(table, f"{pass_key}--{make_key(f'file:{p.resolve()}')[:12]}--{batch}", rows)
            lake.delete(table, part)
    assert len(lake.read("traced_generations")) == 2 * len(gens)
    s = _trace(home, index, paths[0])
    assert s.n_skipped == 0
    assert _rows(home) == _fresh(tmp_path, index, paths[0])
    _check_keys(home, gens)


def test_a_file_reusing_a_runs_ids_replaces_that_runs_batch(index, tmp_path: Path) -> None:
    """What docs/footguns.md says: within one pass the last trace of an id wins, with its whole batch."""
    home = tmp_path / "wh"
    gens = _gens(range(4))
    trace_generations(Lake(home), TraceJob((index,), TraceParams()), sorted(gens.items()), "run:r", batch_size=2,
                      progress=False)
    _trace(home, index, _write(tmp_path / "exported.jsonl", {"g1": gens["g1"] + " edited"}))
    # the run's batch (g0, g1) is gone, (g2, g3) stays; g1 once, with the file's text
    _check_keys(home, {"g1": gens["g1"] + " edited", "g2": gens["g2"], "g3": gens["g3"]})


def test_a_run_traced_after_a_file_with_its_ids_replaces_the_files_batch(index, tmp_path: Path) -> None:
    """The other order: a file exported from a run (its ids) is traced, then `lmaudit trace --run` is run again
    (a resume that found the run's first batch gone). The run's rows win; the file's batch holding g1 must go,
    or g1 has two traced rows and two sets of spans in the pass and `lmaudit build` fails its unique tests."""
    home = tmp_path / "wh"
    gens = _gens(range(4))

    def trace_run():
        return trace_generations(Lake(home), TraceJob((index,), TraceParams()), sorted(gens.items()), "run:r",
                                 batch_size=2, progress=False)

    trace_run()
    _trace(home, index, _write(tmp_path / "exported.jsonl", {"g1": gens["g1"] + " edited"}))
    s = trace_run()
    assert s.n_skipped == 1  # (g2, g3) stayed; (g0, g1) is traced again
    _check_keys(home, gens)


def test_a_trace_after_a_crash_in_a_commit_replaces_the_committed_batch(index, tmp_path: Path, monkeypatch) -> None:
    """A trace killed after its batch's transaction committed (the journal written) but before its renames were
    applied leaves the journal; the next lake use applies it. The next trace of the file (edited again) must see
    that batch before it decides what to replace: planned from the lake as it was, it kept the crashed trace's
    batch beside its own (g0 and g1 twice) once the journal was applied under it."""
    home = tmp_path / "wh"
    file = _write(tmp_path / "gens.jsonl", _gens())
    _trace(home, index, file)

    class Killed(Exception):
        pass

    def killed(self, journal):  # kill -9 right after the commit point
        raise Killed

    monkeypatch.setattr(Lake, "_apply", killed)
    with pytest.raises(Killed):
        _trace(home, index, _write(file, {**_gens(), "g1": _gens()["g1"] + " edited"}))
    monkeypatch.undo()
    again = {**_gens(), "g1": _gens()["g1"] + " edited again"}
    _trace(home, index, _write(file, again))
    _check_keys(home, again)
    assert _rows(home) == _fresh(tmp_path, index, file)
