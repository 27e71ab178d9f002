"""Prebuilt index sets attached read-only: several infini-gram folders become one corpus, nothing is written
into them, every file is checked, and counts over the set equal brute force over the documents."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from ingest.corpora import open_corpus
from ingest.index import build_index
from ingest.lake import Lake

from conftest import byte_level_bpe, run_cli


def _checksums(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def prebuilt(tmp_path_factory):
    """Two infini-gram folders as a public index set comes: shard files only (no lmaudit manifest), and
    read-only."""
    root = tmp_path_factory.mktemp("prebuilt")
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    docs = [" ".join(words[(i * 7 + j) % len(words)] for j in range(40 + i % 13)) + f" doc{i}" for i in range(80)]
    tok = byte_level_bpe(docs, 400)
    tok_path = root / "tokenizer.json"
    tok.save(str(tok_path))
    folders = []
    for part, chunk in enumerate((docs[:40], docs[40:])):
        src = root / f"src{part}"
        src.mkdir()
        (src / "docs.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in chunk))
        out = root / f"set{part}"
        build_index([src], str(tok_path), out, progress=False)
        for extra in ("lmaudit-index.json", "lmaudit-logprob.npy"):
            (out / extra).unlink()
        for p in [out, *out.iterdir()]:
            p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        folders.append(out)
    yield {"root": root, "docs": docs, "tokenizer": tok_path, "folders": folders, "raw": tok}
    for f in folders:
        for p in [f, *f.iterdir()]:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)


def test_attach_several_read_only_folders_as_one_corpus(prebuilt, tmp_path) -> None:
    home = tmp_path / "wh"
    before = {f: _checksums(f) for f in prebuilt["folders"]}
    p = run_cli("index", "attach", *map(str, prebuilt["folders"]), "--tokenizer", str(prebuilt["tokenizer"]),
                "--name", "public-set", home=home)
    assert p.returncode == 0, p.stderr
    assert "80 documents" in p.stdout
    assert {f: _checksums(f) for f in prebuilt["folders"]} == before  # nothing written into them
    side = list((home / "indexes").rglob("lmaudit-index.json"))
    assert len(side) == 2 and all(json.loads(s.read_text())["data_dir"] for s in side)

    corpus = open_corpus(Lake(home), "public-set")
    raw = prebuilt["raw"]
    for phrase in ("alpha beta", "gamma delta epsilon", "doc7", "lambda mu alpha beta gamma", "doc41"):
        ids = raw.encode(phrase).ids
        brute = sum(_occurrences(raw.encode(d).ids, ids) for d in prebuilt["docs"])
        assert corpus.engine.count(ids) == brute, phrase
    # tracing works against the attached set
    gens = tmp_path / "g.jsonl"
    gens.write_text(json.dumps({"generation_id": "g1", "text": prebuilt["docs"][45][:120]}) + "\n")
    t = run_cli("trace", "--generations", str(gens), "--corpus", "public-set", home=home)
    assert t.returncode == 0, t.stderr
    spans = Lake(home).read("spans").to_pylist()
    assert spans and max(s["length"] for s in spans) >= 20
    assert {f: _checksums(f) for f in prebuilt["folders"]} == before


def _occurrences(hay: list[int], needle: list[int]) -> int:
    n = len(needle)
    return sum(hay[i:i + n] == needle for i in range(len(hay) - n + 1))


def test_a_wrong_tokenizer_is_refused(prebuilt, tmp_path) -> None:
    other = byte_level_bpe(["completely different text about zebras and pianos " * 30], 400)
    path = tmp_path / "other.json"
    other.save(str(path))
    p = run_cli("index", "attach", str(prebuilt["folders"][0]), "--tokenizer", str(path), home=tmp_path / "wh")
    assert p.returncode == 2 and "error:" in p.stderr and "Traceback" not in p.stderr
    assert "tokenizer" in p.stderr


def test_a_damaged_folder_is_named_and_nothing_is_registered(prebuilt, tmp_path) -> None:
    import shutil

    bad = tmp_path / "bad-set"
    shutil.copytree(prebuilt["folders"][1], bad)
    for p in [bad, *bad.iterdir()]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    with open(bad / "table.0", "r+b") as f:
        f.truncate(os.path.getsize(bad / "table.0") - 3)
    home = tmp_path / "wh"
    p = run_cli("index", "attach", str(prebuilt["folders"][0]), str(bad), "--tokenizer", str(prebuilt["tokenizer"]),
                "--name", "x", home=home)
    assert p.returncode == 2 and "table.0" in p.stderr and "Traceback" not in p.stderr
    assert Lake(home).read("corpora").num_rows == 0
    assert not (home / "indexes").exists() or not any((home / "indexes").rglob("lmaudit-index.json"))


def test_a_built_index_keeps_its_own_manifest_and_tokenizer(prebuilt, tmp_path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "d.jsonl").write_text(json.dumps({"text": prebuilt["docs"][0]}) + "\n")
    out = tmp_path / "built"
    build_index([src], str(prebuilt["tokenizer"]), out, progress=False)
    p = run_cli("index", "attach", str(out), "--tokenizer", "bytes", home=tmp_path / "wh")
    assert p.returncode == 2 and "was built with tokenizer" in p.stderr
    ok = run_cli("index", "attach", str(out), "--tokenizer", str(prebuilt["tokenizer"]), home=tmp_path / "wh")
    assert ok.returncode == 0, ok.stderr


def _writable_copy(src: Path, dest: Path) -> Path:
    import shutil

    shutil.copytree(src, dest)
    for p in [dest, *dest.iterdir()]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    return dest


@pytest.mark.parametrize("damage, words", [
    ("offsets", "offset.0"),       # another set's offset.0 (same document count, wrong starts)
    ("metadata", "metadata.0"),    # metadata.0 cut short
    ("separators", "separators"),  # a document separator overwritten inside tokenized.0
])
def test_every_file_is_checked_on_attach(prebuilt, tmp_path, damage, words) -> None:
    import shutil

    bad = _writable_copy(prebuilt["folders"][0], tmp_path / "bad-set")
    if damage == "offsets":
        shutil.copyfile(prebuilt["folders"][1] / "offset.0", bad / "offset.0")
    elif damage == "metadata":
        with open(bad / "metadata.0", "r+b") as f:
            f.truncate(10)
    else:
        import numpy as np

        data = bytearray((bad / "tokenized.0").read_bytes())
        start = int(np.fromfile(bad / "offset.0", dtype="<u8")[5])
        data[start:start + 2] = b"\x05\x00"  # document 5's separator becomes token 5
        (bad / "tokenized.0").write_bytes(bytes(data))
    home = tmp_path / "wh"
    p = run_cli("index", "attach", str(bad), "--tokenizer", str(prebuilt["tokenizer"]), "--name", "x", home=home)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and words in p.stderr, p.stderr
    assert Lake(home).read("corpora").num_rows == 0


def test_the_tokenizer_rule_for_an_lmaudit_built_folder_is_documented() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "an explicit `--tokenizer` must match" in readme


def test_a_data_folder_moved_away_after_attach_is_one_line(prebuilt, tmp_path) -> None:
    import shutil

    from ingest.errors import UserError

    data = tmp_path / "mounted-set"
    shutil.copytree(prebuilt["folders"][0], data)
    home = tmp_path / "wh"
    p = run_cli("index", "attach", str(data), "--tokenizer", str(prebuilt["tokenizer"]), "--name", "mounted",
                home=home)
    assert p.returncode == 0, p.stderr
    open_corpus(Lake(home), "mounted").engine.close()
    for q in [data, *data.iterdir()]:
        q.chmod(q.stat().st_mode | stat.S_IWUSR)
    data.rename(tmp_path / "unmounted")  # the shared folder is gone (before: a raw FileNotFoundError)
    with pytest.raises(UserError, match="data folder is gone.*re-attach"):
        open_corpus(Lake(home), "mounted")


def test_a_corpora_row_without_index_folders_is_one_line(tmp_path) -> None:
    from ingest.corpora import current_index_dirs
    from ingest.errors import UserError

    lake = Lake(tmp_path / "wh")
    with pytest.raises(UserError, match="names no index folder.*index attach"):
        current_index_dirs(lake, {"name": "hand-made", "index_dirs": None, "manifest_hash": "x"})
