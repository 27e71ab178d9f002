"""The sandbox corpus is drawn from pinned files only: identical builds anywhere, nothing else read.

Why: a corpus read from the machine's files (stdlib, /usr/include, unpinned packages) changed the demo's
numbers between two days (unconditional R50 0.62 -> 0.29). These tests pin the fix down: two independent
builds are byte-identical, the committed hash matches on the reference platform, and the build opens no
file outside the pinned distributions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from ingest.errors import UserError
from ingest.sandbox import corpus_check, pinned
from ingest.sandbox.corpus import collect_corpus, collect_documents
from ingest.sandbox.sizes import get_size

REPO = Path(__file__).resolve().parents[2]

_BUILD = """
import sys
from pathlib import Path
from ingest.sandbox.corpus import collect_corpus
collect_corpus("tiny", Path(sys.argv[1]), seed=0)
"""


def test_pins_are_the_exact_pins_of_pyproject_without_markers():
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    want = sorted((pinned.normalize(d.split("==")[0].strip()), d.split("==")[1].split(";")[0].strip())
                  for d in deps if "==" in d and ";" not in d)
    assert pinned.pins() == want
    assert "numba" not in dict(pinned.pins())  # has a platform marker: not on every platform
    assert {"torch", "numpy", "pyarrow"} <= set(dict(pinned.pins()))  # the header domain's sources


def test_pinned_files_are_inside_the_pinned_distributions_only():
    files = pinned.pinned_files()
    assert files and [f.rel for f in files] == sorted({f.rel for f in files})
    names = dict(pinned.pins())
    assert {f.dist for f in files} <= set(names)
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    for f in files[:: max(1, len(files) // 500)]:
        assert not f.rel.startswith(("..", "/")) and f.version == names[f.dist]
        assert not f.path.resolve().is_relative_to(stdlib)
        assert not str(f.path).startswith("/usr/include")


def test_a_pin_installed_at_another_version_is_a_user_error(monkeypatch):
    monkeypatch.setattr(pinned, "pins", lambda: [("rich", "0.0.1")])
    pinned.pinned_distributions.cache_clear()
    try:
        with pytest.raises(UserError, match=r"rich==0\.0\.1.*pip install -e \."):
            pinned.pinned_distributions()
        monkeypatch.setattr(pinned, "pins", lambda: [("no-such-distribution-xyz", "1.0")])
        pinned.pinned_distributions.cache_clear()
        with pytest.raises(UserError, match="not installed"):
            pinned.pinned_distributions()
    finally:
        monkeypatch.undo()
        pinned.pinned_distributions.cache_clear()


def test_check_corpus_says_match_differs_or_unknown(monkeypatch):
    size = get_size("tiny")
    h = corpus_check.CorpusHashes("a" * 64, {"code": "1", "headers": "2"})
    key = corpus_check.expected_key(size, 0)
    monkeypatch.setattr(corpus_check, "EXPECTED", {key: h.to_json()})
    assert corpus_check.check_corpus(size, 0, h)["status"] == "match"
    other = corpus_check.CorpusHashes("b" * 64, {"code": "1", "headers": "3"})
    c = corpus_check.check_corpus(size, 0, other)
    assert c["status"] == "differs" and c["differing_domains"] == ["headers"] and "docs/sandbox.md" in c["message"]
    assert corpus_check.check_corpus(size, 1, h)["status"] == "unknown"  # another seed: nothing committed
    # a size renamed but with the same corpus knobs keeps its key's knobs; changed knobs do not match
    assert corpus_check.params_key(size.replace(code_bytes=1)) != corpus_check.params_key(size)


@pytest.mark.slow
def test_two_independent_builds_are_byte_identical_and_match_the_committed_hash(tmp_path):
    """One build here, one in a fresh interpreter with another cwd, hash seed and locale."""
    a, b = tmp_path / "a", tmp_path / "b"
    collect_corpus("tiny", a, seed=0)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONHASHSEED": "4242", "LC_ALL": "C", "TZ": "Pacific/Auckland"}
    subprocess.run([sys.executable, "-c", _BUILD, str(b)], check=True, cwd=elsewhere, env=env)
    for name in ("corpus.jsonl", "mixture.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    mixture = json.loads((a / "mixture.json").read_text())
    assert mixture["sha256"] == corpus_check.corpus_hashes(a / "corpus.jsonl").to_json()
    assert str(tmp_path) not in (a / "mixture.json").read_text()  # no machine paths
    key = corpus_check.expected_key(get_size("tiny"), 0)
    if key not in corpus_check.EXPECTED:
        pytest.skip(f"no committed corpus hash for {key[0]}, Python {key[1]} (the reference is linux-x86_64, "
                    "3.11): builds are identical here, nothing to compare with")
    assert mixture["check"]["status"] == "match", mixture["check"]["message"]


@pytest.mark.slow
def test_the_corpus_reads_no_file_outside_the_pinned_distributions():
    """An audit hook sees every file opened and directory listed while the documents are collected."""
    collect_documents("tiny", 0)  # warm: lazy imports open stdlib modules, which is not reading the corpus
    events: list[tuple[str, str]] = []
    active = [True]

    def hook(event, args):
        if active[0] and event in ("open", "os.listdir", "os.scandir") and args and args[0] is not None:
            events.append((event, os.fsdecode(args[0]) if isinstance(args[0], (str, bytes, os.PathLike)) else ""))

    pinned.pinned_distributions.cache_clear()  # from scratch: finding the distributions and reading RECORD too
    pinned.pinned_files.cache_clear()
    sys.addaudithook(hook)  # cannot be removed: switched off below
    try:
        docs, _ = collect_documents("tiny", 0)
    finally:
        active[0] = False
    allowed = {str(f.path) for f in pinned.pinned_files()}  # RECORD and METADATA list themselves
    opened = [p for e, p in events if e == "open"]
    assert opened, "the audit hook saw no open: the test would prove nothing"
    search_path = {os.path.abspath(p or ".") for p in sys.path}

    def metadata_lookup(p: str) -> bool:  # lmaudit's own metadata (the pins) and sys.path probes (python311.zip)
        parent = Path(p).parent.name
        return p in search_path or (parent.startswith("lmaudit") and parent.endswith((".egg-info", ".dist-info")))

    outside = sorted({p for p in opened if p not in allowed and not metadata_lookup(p)})
    assert outside == [], outside[:5]
    # importlib.metadata lists the sys.path folders to find the distributions; nothing else is listed
    listed = {os.path.abspath(p) for e, p in events if e != "open"}
    assert listed <= search_path, sorted(listed - search_path)[:5]
    assert not any(p.startswith("/usr/include") for p in opened)
    stdlib = sysconfig.get_paths()["stdlib"]
    assert not any(p.startswith(stdlib + "/") and "site-packages" not in p for p in opened)
    assert {d.domain for d in docs} == {"code", "boilerplate", "documentation", "headers", "canary"}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tiny", "small", "default"])
def test_every_size_fills_its_domain_budgets_from_pinned_files_only(name):
    size = get_size(name)
    docs, _ = collect_documents(size, 0)
    got: dict[str, int] = {}
    for d in docs:
        got[d.domain] = got.get(d.domain, 0) + len(d.text.encode("utf-8"))
    for domain, budget in size.domain_budgets.items():
        assert 0.95 * budget <= got.get(domain, 0) <= budget, (domain, got.get(domain), budget)


def test_document_ids_do_not_carry_the_installed_build_or_version():
    """torch-2.13.0+cpu.dist-info (CPU wheel) and torch-2.13.0.dist-info (CUDA wheel) name the same licences."""
    f = pinned.SourceFile("torch", "2.13.0", "torch-2.13.0+cpu.dist-info/licenses/LICENSE", Path("/x"))
    assert f.key == "torch.dist-info/licenses/LICENSE"
    g = pinned.SourceFile("dbt-core", "1.11.16", "dbt_core-1.11.16.dist-info/licenses/LICENSE", Path("/x"))
    assert g.key == "dbt_core.dist-info/licenses/LICENSE"
    assert pinned.SourceFile("torch", "2.13.0", "torch/version.py", Path("/x")).key == "torch/version.py"
    from ingest.sandbox.corpus import boilerplate_candidates

    ids = [c[0] for c in boilerplate_candidates(40_000)]
    assert ids and not [i for i in ids if "+cpu" in i or "-2.13.0" in i]


def test_the_registered_mixture_names_the_corpus_hash(tmp_path):
    """`mixtures_documented.source` of a sandbox says which corpus (by content hash) the truth belongs to."""
    from ingest.sandbox.reference import documented_mixture_rows

    p = tmp_path / "mixture.json"
    p.write_text(json.dumps({"size": "tiny", "seed": 0, "domains": {"code": {"docs": 1}, "headers": {"docs": 3}},
                             "sha256": {"corpus_jsonl": "395c83b51804" + "0" * 52, "domains": {}}}))
    assert {r["source"] for r in documented_mixture_rows(p, "m")} == {
        "sandbox mixture.json (tiny, seed 0, corpus sha256 395c83b51804): share of docs"}
