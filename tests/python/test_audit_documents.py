"""`lmaudit audit documents` on an attached, read-only, two-folder infini-gram index (no lmaudit manifest, as a
public index comes): selection by metadata and by ids, the document numbers it stores against the engine's own
lookup and the tracer's `span_documents`, replacement under the same name, prefix prompts drawn only from the
set, and every bad input as one line, exit 2, nothing written."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from ingest.audit.store import AuditRequest, audit_documents
from ingest.corpora import attach_corpus, open_corpus
from ingest.errors import UserError
from ingest.index import build_index
from ingest.lake import Lake

from conftest import byte_level_bpe, run_cli

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho".split()


def _doc(i: int) -> dict:
    pkg = ("pkgA", "pkgB", "pkgC")[i % 3]
    text = " ".join(WORDS[(i * 5 + j * (1 + i % 4)) % len(WORDS)] for j in range(150)) + f" end of doc{i}"
    return {"text": text, "id": f"{pkg}/file{i}.py", "source": f"{pkg}==1.0/file{i}.py", "domain": "code",
            "repo": f"https://example.org/{pkg}"}


DOCS = [_doc(i) for i in range(30)]


@pytest.fixture(scope="module")
def attached(tmp_path_factory):
    """Two read-only folders (documents 0-14 and 15-29) attached as corpus `pub` of a fresh warehouse."""
    root = tmp_path_factory.mktemp("audit_index")
    tok = byte_level_bpe([d["text"] for d in DOCS], 400)
    tok_path = root / "tokenizer.json"
    tok.save(str(tok_path))
    folders = []
    for part, chunk in enumerate((DOCS[:15], DOCS[15:])):
        src = root / f"src{part}"
        src.mkdir()
        (src / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in chunk))
        out = root / f"set{part}"
        build_index([src], str(tok_path), out, progress=False)
        for extra in ("lmaudit-index.json", "lmaudit-logprob.npy"):
            (out / extra).unlink()
        for p in [out, *out.iterdir()]:
            p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        folders.append(out)
    home = root / "wh"
    attach_corpus(Lake(home), "pub", folders, str(tok_path))
    yield {"home": home, "folders": folders, "root": root}
    for f in folders:
        for p in [f, *f.iterdir()]:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)


def _set(home: Path, name: str) -> list[dict]:
    return sorted((r for r in Lake(home).read("document_sets").to_pylist() if r["document_set"] == name),
                  key=lambda r: r["doc_ix"])


def test_where_selects_by_metadata_and_numbers_documents_as_the_engine_does(attached) -> None:
    home = attached["home"]
    res = audit_documents(Lake(home), AuditRequest("pub", where="source like 'pkgB==%'", name="b"))
    assert res.selection.documents.num_rows == 10 and res.n_corpus_docs == 30
    rows = _set(home, "b")
    assert [r["doc_id"] for r in rows] == sorted((d["id"] for d in DOCS if d["id"].startswith("pkgB/")),
                                                 key=lambda i: int(i.split("file")[1].split(".")[0]))
    corpus = open_corpus(Lake(home), "pub")
    try:  # the engine's own document lookup (another code path than the metadata files read here)
        for r in rows:
            doc = corpus.engine.doc(r["doc_ix"], max_len=0)
            assert doc.metadata["id"] == r["doc_id"] and doc.shard == r["shard"]
            assert json.loads(r["metadata"])["repo"] == "https://example.org/pkgB"
    finally:
        corpus.engine.close()
    assert {r["shard"] for r in rows} == {0, 1}  # both folders
    assert all(r["selection"] == "where:source like 'pkgB==%'" and r["prompt_set"] is None for r in rows)
    # metadata fields beyond id/source/domain are reachable as JSON
    res = audit_documents(Lake(home), AuditRequest("pub", where="json_extract_string(metadata, '$.repo') like "
                                                                 "'%pkgC'", dry_run=True))
    assert res.selection.documents.num_rows == 10 and res.selection.name.startswith("json_extract_string")


def test_the_same_name_replaces_the_set_whole(attached) -> None:
    home = attached["home"]
    audit_documents(Lake(home), AuditRequest("pub", where="doc_ix < 6", name="rep"))
    audit_documents(Lake(home), AuditRequest("pub", where="doc_ix between 20 and 22", name="rep"))
    assert [r["doc_ix"] for r in _set(home, "rep")] == [20, 21, 22]


def test_an_id_file_selects_ids_and_doc_numbers(attached, tmp_path) -> None:
    home = attached["home"]
    ids = tmp_path / "mine.txt"
    ids.write_text("# my files\npkgA/file3.py\n\ndoc:16\npkgA/file3.py\n")
    res = audit_documents(Lake(home), AuditRequest("pub", file=ids))
    assert res.selection.name == "mine" and res.selection.selection == "ids:mine.txt"
    assert [r["doc_ix"] for r in _set(home, "mine")] == [3, 16]


@pytest.mark.parametrize("kwargs, words", [
    ({"where": "source like 'nobody%'"}, "empty"),
    ({"where": "   "}, "empty"),
    ({"where": "source like"}, "does not parse"),
    ({"where": "true; select 1"}, "one SQL condition"),
    ({"where": "no_such_column = 1"}, "failed"),
    ({"where": "(select count(*) from read_csv('/etc/passwd')) > 0"}, "failed"),
    ({"where": "true) union all (select 99999"}, "not documents"),
    ({"where": "true) union all (select doc_ix from documents"}, "not documents"),
    ({}, "exactly one"),
    ({"where": "true", "name": "a/b"}, "path separator"),
    ({"where": "true", "prefix_prompts": -1}, "--prefix-prompts"),
])
def test_bad_selections_are_one_line_errors_and_write_nothing(attached, kwargs, words) -> None:
    home = attached["home"]
    before = Lake(home).read("document_sets").num_rows
    with pytest.raises(UserError, match=words):
        audit_documents(Lake(home), AuditRequest("pub", **kwargs))
    assert Lake(home).read("document_sets").num_rows == before


def test_unknown_ids_are_named(attached, tmp_path) -> None:
    ids = tmp_path / "ids.txt"
    ids.write_text("pkgA/file3.py\nnot/there.py\ndoc:999\n")
    with pytest.raises(UserError, match=r"2 of 3 ids .*'not/there.py', 'doc:999'"):
        audit_documents(Lake(attached["home"]), AuditRequest("pub", file=ids))
    with pytest.raises(UserError, match="not found"):
        audit_documents(Lake(attached["home"]), AuditRequest("pub", file=tmp_path / "missing.txt"))


@pytest.mark.slow
def test_cli_prefix_prompts_come_from_the_set_and_the_tracer_names_its_documents(attached, tmp_path) -> None:
    home = attached["home"]
    p = run_cli("audit", "documents", "--corpus", "pub", "--where", "source like 'pkgC==%'", "--name", "c",
                "--prefix-prompts", "4", home=home)
    assert p.returncode == 0, p.stderr
    assert "10 of the 30 documents" in p.stdout and "--prompt-set" in p.stdout and "c-attack-prefix" in p.stdout
    rows = _set(home, "c")
    prompts = [r for r in Lake(home).read("prompts").to_pylist() if r["prompt_set"] == rows[0]["prompt_set"]]
    assert len(prompts) == 4 and {r["setting"] for r in prompts} == {"prefix"}
    assert {r["source_doc"] for r in prompts} <= {r["doc_id"] for r in rows}
    # the tracer's span_documents name a set document by the same doc_ix
    gens = tmp_path / "g.jsonl"
    target = rows[-1]
    text = next(d["text"] for d in DOCS if d["id"] == target["doc_id"])
    gens.write_text(json.dumps({"generation_id": "g1", "text": text[100:400]}) + "\n")
    t = run_cli("trace", "--generations", str(gens), "--corpus", "pub", home=home)
    assert t.returncode == 0, t.stderr
    found = {(d["doc_ix"], d["doc_id"]) for d in Lake(home).read("span_documents").to_pylist()}
    assert (target["doc_ix"], target["doc_id"]) in found
    # a bad input from the command line: one line, exit 2
    bad = run_cli("audit", "documents", "--corpus", "pub", "--where", "source like", home=home)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


def test_a_damaged_document_record_is_one_line(attached, tmp_path) -> None:
    import shutil

    from ingest.audit.documents import corpus_documents
    from ingest.index.engine import IndexEngine

    folder = tmp_path / "copy"
    shutil.copytree(attached["folders"][0], folder)
    build_index([attached["root"] / "src0"], str(attached["root"] / "tokenizer.json"), tmp_path / "built",
                progress=False)
    for f in folder.iterdir():
        f.chmod(0o644)
    shutil.copy(tmp_path / "built" / "lmaudit-index.json", folder / "lmaudit-index.json")
    engine = IndexEngine(str(folder))
    try:
        assert corpus_documents(engine).num_rows == 15
        meta = folder / "metadata.0"
        lines = meta.read_bytes().split(b"\n")
        lines[3] = b"[" + lines[3][1:]  # same length: the offsets stay valid
        meta.write_bytes(b"\n".join(lines))
        with pytest.raises(UserError, match=r"metadata.0: line 4 is not JSON"):
            corpus_documents(engine)
    finally:
        engine.close()


def test_generate_without_prompt_set_never_takes_a_document_sets_prompts(attached) -> None:
    """`generate --settings prefix` without `--prompt-set` takes the latest prefix set; after `audit documents
    --prefix-prompts` that was the set's own targeted prompts, so an ordinary prefix run silently became the set's
    attack. A set's prompts are now used only when named."""
    from types import SimpleNamespace

    from ingest.generate.plan import prompt_units

    home = attached["home"]
    lake = Lake(home)
    backend = SimpleNamespace(bos_id=None, encode=lambda text: list(text.encode()))
    assert run_cli("prompts", "build", "--corpus", "pub", "--setting", "prefix", "--n", "3", home=home).returncode == 0
    general = {r["prompt_set"] for r in lake.read("prompts").to_pylist() if r["setting"] == "prefix"}
    made = run_cli("audit", "documents", "--corpus", "pub", "--where", "source like 'pkgB==%'", "--name", "b-plan",
                   "--prefix-prompts", "2", home=home)
    assert made.returncode == 0, made.stderr
    targeted = _set(home, "b-plan")[0]["prompt_set"]
    assert targeted not in general
    units = prompt_units(lake, "pub", "prefix", backend, n_samples=1, n_generations=1)
    assert {u.prompt_id for u in units} <= {r["prompt_id"] for r in lake.read("prompts").to_pylist()
                                             if r["prompt_set"] in general}
    named = prompt_units(lake, "pub", "prefix", backend, n_samples=1, n_generations=1, prompt_set=targeted)
    assert len(named) == 2
