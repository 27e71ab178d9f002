"""Review of the moved-warehouse change: what a copied warehouse's later steps read.

Oracles are hand-made: the documents provenance read in the original warehouse before the copy, and the
tokenizer file the index was built with as it lies in the warehouse now.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import byte_level_bpe, run_cli
from mini_warehouse import mini_prebuilt, mini_texts, mini_warehouse

from ingest.lake import Lake


def _provenance_texts(home: Path) -> dict[int, str]:
    p = run_cli("provenance", "--min-span", "8", home=home)
    assert p.returncode == 0, p.stderr
    return {r["doc_ix"]: r["doc_id"] for r in Lake(home).read("document_provenance").to_pylist()}


@pytest.mark.slow  # two index builds, an import, a trace, provenance three times (~20 s)
def test_provenance_of_a_legacy_pass_in_a_copy_never_reads_the_original_rebuilt(tmp_path: Path) -> None:
    """cp -r of a warehouse whose pass was recorded with absolute folders (before paths were relative); the
    original is then rebuilt with other documents. Provenance in the copy must read the copy's own index (the
    one the pass traced), or refuse in one line: never the documents of the original's new index."""
    old = tmp_path / "a" / "wh"
    mini_warehouse(old, seed=0)
    gens = tmp_path / "gens.jsonl"
    gens.write_text("".join(json.dumps({"text": t[40:500]}) + "\n" for t in mini_texts(0)[:4]))
    run_cli("import", "generations", str(gens), "--run-id", "r1", "--model", "m", "--setting", "unconditional",
            "--corpus", "mini", home=old, check=True)
    run_cli("trace", "--run", "r1", home=old, check=True)
    before = _provenance_texts(old)
    assert before and all(v.startswith("s0-") for v in before.values())

    new = tmp_path / "b" / "wh"
    shutil.copytree(old, new, symlinks=True)
    lake = Lake(new)
    for part in lake.partitions("document_provenance"):
        lake.delete("document_provenance", part)
    (pass_row,) = lake.read("trace_runs").to_pylist()
    legacy = [str(old.resolve() / d) for d in json.loads(pass_row["index_dir"])]  # as recorded before the change
    lake.write("trace_runs", f"trace--{pass_row['trace_id']}", [{**pass_row, "index_dir": json.dumps(legacy)}])
    shutil.rmtree(old)
    mini_warehouse(old, seed=1)  # the original, rebuilt: other documents at the same place

    assert _provenance_texts(new) == before  # the copy's own index, found where the pass's folder moved to

    # the copy's index rebuilt in place (other documents): the pass's documents are not there any more
    for part in lake.partitions("document_provenance"):
        lake.delete("document_provenance", part)
    shutil.rmtree(new / "sandbox")
    mini_warehouse(new, seed=1)
    p = run_cli("provenance", "--min-span", "8", home=new)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert "not the one generations were traced against" in p.stderr
    assert Lake(new).read("document_provenance").num_rows == 0


def test_registering_again_after_a_move_records_the_tokenizer_where_it_is_now(tmp_path: Path) -> None:
    """`lmaudit sandbox build` in a moved warehouse registers the (reused) index again: its manifest still names
    the old place's tokenizer file, but the corpus row must name the moved one, relative like the index."""
    from ingest.corpora import register_corpus

    old = tmp_path / "a" / "wh"
    mini_warehouse(old, seed=0)
    assert Lake(old).read("corpora").to_pylist()[0]["tokenizer"] == "sandbox/mini/tok/tokenizer.json"
    new = tmp_path / "b" / "wh"
    new.parent.mkdir()
    shutil.move(str(old), str(new))
    register_corpus(Lake(new), "mini", [new / "sandbox" / "mini" / "index"])
    (row,) = Lake(new).read("corpora").to_pylist()
    assert row["index_dirs"] == ["sandbox/mini/index"]
    assert row["tokenizer"] == "sandbox/mini/tok/tokenizer.json"


def _tokenizer_folder(folder: Path, seed: int) -> None:
    """A tokenizer folder without tokenizer.json (vocab.json + merges.txt, converted by transformers): the
    manifest's sha256 is of the converted form, so the folder's files cannot be compared with it."""
    folder.mkdir(parents=True)
    byte_level_bpe(mini_texts(seed), 300 + seed).model.save(str(folder))
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "GPT2Tokenizer"}))


@pytest.mark.slow  # transformers converts three tokenizer folders (~25 s)
def test_a_tokenizer_folder_that_did_not_move_is_not_swapped_for_another_of_the_same_name(tmp_path: Path) -> None:
    """An index built with a tokenizer folder outside the warehouse (it never moved): a folder of the same
    name but another tokenizer above the index (here the warehouse's own `tok`) is not the index's tokenizer."""
    from ingest.index import build_index
    from ingest.index.manifest import IndexManifest
    from ingest.index.tokenizer import load_tokenizer

    recorded = tmp_path / "models" / "tok"
    _tokenizer_folder(recorded, seed=0)
    corpus = tmp_path / "wh" / "corpus"
    corpus.mkdir(parents=True)
    (corpus / "docs.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in mini_texts(0)))
    index = tmp_path / "wh" / "index"
    build_index([corpus], str(recorded), index, progress=False)
    _tokenizer_folder(tmp_path / "wh" / "tok", seed=1)  # another tokenizer, same folder name, above the index
    spec = IndexManifest.load(index).tokenizer_spec(index)
    assert load_tokenizer(spec).describe()["sha256"] == load_tokenizer(recorded).describe()["sha256"]
    assert spec == str(recorded.resolve())


@pytest.mark.slow  # an index build, two attaches, an import, a trace, provenance (~15 s)
def test_provenance_of_a_legacy_pass_after_the_same_index_is_attached_again(tmp_path: Path) -> None:
    """A pass named the old way (`legacy_trace_id`: the manifest's raw bytes, build time included), then the
    same prebuilt folder attached again (a new manifest, the same documents, as the move messages advise):
    the documents are the traced ones, so provenance reads them (no id can be recomputed for such a pass)."""
    import time

    from ingest.corpora import attach_corpus, corpus_row
    from ingest.trace.params import TraceParams
    from ingest.trace.run import TraceJob

    home = tmp_path / "wh"
    texts, tok = mini_prebuilt(home, 3)
    gens = tmp_path / "gens.jsonl"
    gens.write_text("".join(json.dumps({"text": t[40:500]}) + "\n" for t in texts[:4]))
    run_cli("import", "generations", str(gens), "--run-id", "r1", "--model", "m", "--setting", "unconditional",
            "--corpus", "pub", home=home, check=True)
    row = corpus_row(Lake(home), "pub")
    legacy = TraceJob(tuple(row["index_dirs"]), TraceParams()).legacy_trace_id
    Lake(home).write("trace_runs", f"trace--{legacy}", [{  # what a warehouse from before 2026-12-03 holds
        "trace_id": legacy, "corpus_id": row["corpus_id"], "index_dir": json.dumps(row["index_dirs"]),
        "mode": "mixed", "params": TraceParams().to_json(), "code_version": "0.1.0"}])
    run_cli("trace", "--run", "r1", home=home, check=True)
    assert {r["trace_id"] for r in Lake(home).read("trace_runs").to_pylist()} == {legacy}
    time.sleep(1.1)
    attach_corpus(Lake(home), "pub", [home / "prebuilt" / "data"], str(tok))  # same folder: a new manifest
    read = _provenance_texts(home)
    assert read and all(v == f"d{k}" for k, v in read.items())
