"""A warehouse moved (`mv`) to another folder traces, and opens its corpora, exactly as before the move.

Oracle: the rows the warehouse's own trace gave before the move. After the move the copied trace
partitions are removed and the same generations traced again: every span, document, count and traced-
generation row must come back equal. To show the old folder is never read, a different warehouse (other
documents, another tokenizer, same layout) is then built where the original was: a moved warehouse that
read it would fail the manifest check or find other spans. A corpus row as registered before paths were
relative (absolute folders) must find the moved index the same way, and one whose folder is gone for good
is one line naming it and the command that registers it again.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import run_cli
from mini_warehouse import mini_prebuilt, mini_texts, mini_warehouse

from ingest.lake import Lake

TABLES = ("spans", "span_documents", "span_counts", "traced_generations")
VOLATILE = {"created_at", "traced_at", "started_at", "finished_at"}


def _trace(home: Path, gens: Path) -> dict[str, list[dict]]:
    p = run_cli("trace", "--corpus", "mini", "--generations", str(gens), home=home)
    assert p.returncode == 0, p.stderr
    lake = Lake(home)
    return {t: sorted(json.dumps({k: v for k, v in r.items() if k not in VOLATILE}, sort_keys=True, default=str)
                      for r in lake.read(t).to_pylist()) for t in TABLES}


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """A warehouse traced in its first place: (its folder, the generations file, the rows)."""
    base = tmp_path_factory.mktemp("moved")
    home = base / "old" / "warehouse"
    mini_warehouse(home, seed=0)
    gens = base / "gens.jsonl"  # outside the warehouse: the same source before and after the move
    texts = mini_texts(0)
    with open(gens, "w") as fh:
        fh.writelines(json.dumps({"generation_id": f"g{i}", "text": t[50 + i:400] + " unrelated tail"}) + "\n" for i, t in enumerate(texts[:6]))
    rows = _trace(home, gens)
    assert rows["span_documents"], "the generations copy the corpus: documents must be found"
    return home, gens, rows


def _move(home: Path, to: Path) -> Path:
    """`mv` the warehouse, then drop its trace partitions so the next trace computes everything again."""
    to.parent.mkdir(parents=True)
    shutil.move(str(home), str(to))
    for t in (*TABLES, "trace_runs"):
        shutil.rmtree(to / "lake" / t, ignore_errors=True)
    return to


@pytest.mark.slow
def test_moved_warehouse_traces_the_same_rows_and_never_reads_the_old_folder(traced, tmp_path: Path) -> None:
    from ingest.corpora import corpus_row
    from ingest.index.manifest import IndexManifest

    old, gens, before = traced
    old_row = Lake(old).read("corpora").to_pylist()[0]
    assert old_row["index_dirs"] == ["sandbox/mini/index"]  # recorded relative to the warehouse
    new = _move(old, tmp_path / "elsewhere" / "wh")
    mini_warehouse(old, seed=1)  # another corpus and tokenizer where the original lay
    assert IndexManifest.path_in(old / "sandbox/mini/index").read_bytes() != \
        IndexManifest.path_in(new / "sandbox/mini/index").read_bytes()
    assert corpus_row(Lake(new), "mini")["index_dirs"] == [str((new / "sandbox/mini/index").resolve())]
    assert _trace(new, gens) == before
    pass_row = Lake(new).read("trace_runs").to_pylist()[0]
    assert json.loads(pass_row["index_dir"]) == ["sandbox/mini/index"]
    # a pass recorded before paths were relative (the old place, absolute): the same trace command again traces
    # nothing and records where the index is now (what provenance opens)
    Lake(new).write("trace_runs", f"trace--{pass_row['trace_id']}",
                    [{**pass_row, "index_dir": json.dumps([str(old.resolve() / "sandbox/mini/index")])}])
    assert _trace(new, gens) == before
    assert json.loads(Lake(new).read("trace_runs").to_pylist()[0]["index_dir"]) == ["sandbox/mini/index"]

    # a row registered before paths were relative: absolute folders of the old place (now another index)
    lake = Lake(new)
    legacy = {**old_row, "index_dirs": [str(old.resolve() / "sandbox/mini/index")]}
    lake.write("corpora", "corpus--mini", [legacy])
    # what `trace --corpus` opens (the trace itself is the one above: same manifest, same tokenizer)
    assert corpus_row(lake, "mini")["index_dirs"] == [str((new / "sandbox/mini/index").resolve())]

    # not here any more: the old place's other index is refused, then (gone there too) named, with the fix
    shutil.rmtree(new / "sandbox")
    for what in ("not the one registered", "does not exist"):
        p = run_cli("trace", "--corpus", "mini", "--generations", str(gens), home=new)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
        assert what in p.stderr and "lmaudit index attach" in p.stderr and str(old.resolve()) in p.stderr
        shutil.rmtree(old, ignore_errors=True)


def test_paths_inside_the_warehouse_are_stored_relative(tmp_path: Path) -> None:
    from ingest.home import from_stored, stored_path
    from ingest.index.manifest import moved_with

    home = tmp_path / "wh"
    (home / "a" / "b").mkdir(parents=True)
    assert stored_path(home, home / "a" / "b") == "a/b"
    assert stored_path(home, tmp_path / "outside") == str((tmp_path / "outside").resolve())
    assert from_stored(tmp_path / "moved", "a/b") == tmp_path / "moved" / "a" / "b"
    assert from_stored(tmp_path / "moved", "/data/x") == Path("/data/x")
    # a recorded path that moved with the index is found beside it, if its content is the recorded one
    (home / "a" / "tok.json").write_text("t")
    recorded = str(tmp_path / "gone" / "a" / "tok.json")
    assert moved_with(recorded, home / "a" / "b", lambda p: p.read_text() == "t") == str(home / "a" / "tok.json")
    assert moved_with(recorded, home / "a" / "b", lambda p: False) == recorded


def test_attached_index_inside_the_warehouse_moves_with_it(tmp_path: Path) -> None:
    """An attached prebuilt folder (no lmaudit manifest: the manifest goes to `indexes/`, pointing at the data
    folder by its absolute path) and its tokenizer, both inside the warehouse: after `mv` the corpus opens the
    moved data folder and tokenizer; the documents read back are the ones read before."""
    from ingest.corpora import open_corpus

    home = tmp_path / "a" / "wh"
    texts, _ = mini_prebuilt(home, 2, with_ids=False)

    def docs(h: Path) -> tuple[list[str], list[str]]:
        c = open_corpus(Lake(h), "pub")
        return c.engine.data_dirs, [c.tokenizer.decode(c.engine.doc(i).tokens) for i in range(len(texts))]

    data_before, before = docs(home)
    assert before == texts
    new = tmp_path / "b" / "wh"
    new.parent.mkdir()
    shutil.move(str(home), str(new))
    data_after, after = docs(new)
    assert after == before
    assert data_before == [str((home / "prebuilt" / "data").resolve())]
    assert data_after == [str((new / "prebuilt" / "data").resolve())]
