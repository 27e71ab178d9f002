"""Index builder and engine wrapper against brute force, on small real-text indexes built in tmp_path.

The corpus is Python standard-library source (always present), spread over .jsonl, .jsonl.gz, .jsonl.zst
and .parquet files in nested folders. Brute force tokenizes each document independently (raw UTF-8 bytes,
or the `tokenizers` object itself) and counts n-gram occurrences inside documents with numpy.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from ingest.errors import UserError
from ingest.index import (
    LOGPROB_NAME,
    MANIFEST_NAME,
    IndexEngine,
    IndexManifest,
    attach_index,
    build_index,
    dtype_for_vocab,
    iter_documents,
    load_tokenizer,
)

N_DOCS = 36
MAX_DOC_CHARS = 8000


# ------------------------------------------------------------------------------------------ fixtures


def _stdlib_texts() -> list[str]:
    files = sorted(Path(os.__file__).parent.glob("*.py"))
    texts = []
    for f in files:
        t = f.read_text(encoding="utf-8", errors="replace")[:MAX_DOC_CHARS]
        if len(t) > 200:
            texts.append(t)
        if len(texts) == N_DOCS - 2:
            break
    texts.append("naïve café — 東京 ünïcödé text with emoji 🐍 and the word import os\n" * 3)
    texts.append("")  # an empty document is legal: only its separator is stored
    return texts


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Write the documents over four files and formats; return (folder, {id: record})."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard

    root = tmp_path_factory.mktemp("corpus")
    (root / "nested").mkdir()
    texts = _stdlib_texts()
    records = [{"text": t, "id": f"doc-{i:03d}", "domain": ["code", "web", "books"][i % 3]} for i, t in enumerate(texts)]
    groups = [records[0::4], records[1::4], records[2::4], records[3::4]]

    def jsonl(rows):
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")

    (root / "part1.jsonl").write_bytes(jsonl(groups[0]) + b"\n")  # trailing blank line is skipped
    with gzip.open(root / "nested" / "part2.jsonl.gz", "wb") as f:
        f.write(jsonl(groups[1]))
    (root / "nested" / "part3.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(jsonl(groups[2])))
    pq.write_table(pa.Table.from_pylist(groups[3]), root / "part4.parquet")
    (root / "README.txt").write_text("not a corpus file: skipped inside folders")
    by_id = {r["id"]: r for r in records}
    return root, by_id


@pytest.fixture(scope="module")
def bpe_path(corpus, tmp_path_factory):
    from conftest import byte_level_bpe

    _, by_id = corpus
    tok = byte_level_bpe([r["text"] for r in by_id.values()], 1000)
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return path


def _reference_encoder(kind, bpe_path):
    if kind == "bytes":
        return lambda text: list(text.encode("utf-8"))
    from tokenizers import Tokenizer

    raw = Tokenizer.from_file(str(bpe_path))
    return lambda text: raw.encode(text, add_special_tokens=False).ids


_INDEX_CACHE: dict = {}


@pytest.fixture(scope="module")
def indexes(corpus, bpe_path, tmp_path_factory):
    """Build (tokenizer kind, shards) -> index folder lazily, once per module."""
    root, _ = corpus
    base = tmp_path_factory.mktemp("indexes")

    def get(kind: str, shards: int) -> Path:
        key = (kind, shards)
        if key not in _INDEX_CACHE:
            out = base / f"{kind}-{shards}"
            spec = "bytes" if kind == "bytes" else str(bpe_path)
            build_index([root], spec, out, shards=shards, progress=False)
            _INDEX_CACHE[key] = out
        return _INDEX_CACHE[key]

    yield get
    _INDEX_CACHE.clear()


class Brute:
    """All documents concatenated with -1 separators; counts occurrences with numpy."""

    def __init__(self, docs: dict[str, list[int]]):
        self.docs = docs
        parts = []
        for ids in docs.values():
            parts.append([-1])
            parts.append(ids)
        parts.append([-1] * 25)  # padding so shifted comparisons stay in bounds
        self.arr = np.concatenate([np.asarray(p, dtype=np.int64) for p in parts])

    def positions(self, q: list[int]) -> np.ndarray:
        pos = np.flatnonzero(self.arr == q[0])
        for k, t in enumerate(q[1:], start=1):
            pos = pos[self.arr[pos + k] == t]
        return pos

    def count(self, q: list[int]) -> int:
        return len(self.positions(q))

    def longest_prefix(self, q: list[int]) -> int:
        pos = np.flatnonzero(self.arr == q[0])
        n = 0
        while len(pos) and n < len(q):
            n += 1
            if n < len(q):
                pos = pos[self.arr[pos + n] == q[n]]
        return n


def _queries(brute: Brute, vocab: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    docs = [d for d in brute.docs.values() if len(d) > 25]
    out = []
    for _ in range(120):  # present n-grams of length 1..20
        d = rng.choice(docs)
        n = rng.randint(1, 20)
        i = rng.randrange(len(d) - n)
        out.append(d[i:i + n])
    for q in list(out[:40]):  # mutated: mostly absent
        q = list(q)
        q[rng.randrange(len(q))] = rng.randrange(vocab)
        out.append(q)
    for _ in range(20):  # random token sequences: absent beyond length ~3
        out.append([rng.randrange(vocab) for _ in range(rng.randint(1, 20))])
    return out


@pytest.fixture(scope="module", params=["bytes", "bpe"])
def setup(request, corpus, bpe_path, indexes):
    kind = request.param
    _, by_id = corpus
    enc = _reference_encoder(kind, bpe_path)
    brute = Brute({doc_id: enc(r["text"]) for doc_id, r in by_id.items()})
    return kind, brute, indexes


# ------------------------------------------------------------------------------------------ counts


def test_counts_match_brute_force_and_shards_agree(setup):
    kind, brute, indexes = setup
    vocab = 255 if kind == "bytes" else 1000
    queries = _queries(brute, vocab, seed=1)
    with IndexEngine(indexes(kind, 1)) as one, IndexEngine(indexes(kind, 3)) as three:
        assert three.num_shards == 3
        absent = 0
        for q in queries:
            expected = brute.count(q)
            absent += expected == 0
            assert one.count(q) == expected, q
            assert three.count(q) == expected, q
            found = three.find(q)
            assert found["cnt"] == expected
            assert sum(hi - lo for lo, hi in found["segment_by_shard"]) == expected
        assert absent >= 20  # the query set really exercises misses


def test_several_index_dirs_add_up(setup):
    kind, brute, indexes = setup
    with IndexEngine([indexes(kind, 1), indexes(kind, 3)]) as both:
        assert both.num_shards == 4 and both.n_docs == 2 * N_DOCS
        assert both.shard_files(1) == (str(indexes(kind, 3)), 0)
        for q in _queries(brute, 255, seed=6)[:40]:
            assert both.count(q) == 2 * brute.count(q)
        assert both.doc(N_DOCS).metadata == both.doc(0).metadata  # doc numbering continues across folders


def test_longest_prefix_len_matches_brute_force(setup):
    kind, brute, indexes = setup
    vocab = 255 if kind == "bytes" else 1000
    rng = random.Random(2)
    queries = [q + [rng.randrange(vocab) for _ in range(5)] + q for q in _queries(brute, vocab, seed=3)]
    with IndexEngine(indexes(kind, 3)) as eng:
        for q in queries:
            assert eng.longest_prefix_len(q) == brute.longest_prefix(q), q


def test_manifest_and_unigrams(setup, corpus):
    kind, brute, indexes = setup
    folder = indexes(kind, 3)
    m = IndexManifest.load(folder)
    total = sum(len(d) for d in brute.docs.values())
    assert (m.dtype, m.separator_id) == (("u8", 255) if kind == "bytes" else ("u16", 65535))
    assert m.n_docs == N_DOCS and m.n_tokens == total
    assert sorted(s.n_docs for s in m.shards) == [12, 12, 12]  # round robin
    root, _ = corpus
    assert [Path(s.path).relative_to(root).as_posix() for s in m.sources] == [
        "nested/part2.jsonl.gz", "nested/part3.jsonl.zst", "part1.jsonl", "part4.parquet"]
    for s in m.sources:
        assert s.sha256 == hashlib.sha256(Path(s.path).read_bytes()).hexdigest()
    # unigram.s counts every token of the shard, separators included (the engine checks the total)
    for info in m.shards:
        lines = (folder / f"unigram.{info.shard}").read_text().split("\n")[:-1]
        if kind == "bytes":
            counts = {i: int(c) for i, c in enumerate(lines)}
        else:
            counts = {int(a): int(b) for a, b in (ln.split() for ln in lines)}
        assert counts[m.separator_id] == info.n_docs
        assert sum(counts.values()) == info.n_tokens + info.n_docs
    logp = m.load_logprobs(folder)
    freq = np.bincount(np.concatenate([np.asarray(d, dtype=np.int64) for d in brute.docs.values()]),
                       minlength=len(logp))
    seen = freq > 0
    assert np.allclose(logp[seen], np.log(freq[seen] / total))
    assert np.all(logp[~seen] == m.unigram_floor) and m.unigram_floor == pytest.approx(np.log(0.5 / total))


# ------------------------------------------------------------------------------------------ documents


def test_document_retrieval(setup, corpus, bpe_path):
    kind, brute, indexes = setup
    _, by_id = corpus
    tok = load_tokenizer("bytes" if kind == "bytes" else bpe_path)
    rng = random.Random(4)
    # a zero memory budget reopens at every check (every 7 queries): reopening must not change answers
    with IndexEngine(indexes(kind, 3), reopen_every=7, memory_budget=0) as eng:
        for q in _queries(brute, 255, seed=5)[:40]:
            expected = brute.count(q)
            if expected > 300:  # frequent single bytes: slow to fetch, nothing new to check
                continue
            got = list(eng.iter_matches(q, max_ctx_len=30))
            assert len(got) == expected
            for rec in got:
                doc_tokens = brute.docs[rec.metadata["id"]]
                assert rec.doc_len == len(doc_tokens)
                assert doc_tokens[rec.match_pos:rec.match_pos + len(q)] == q
                assert rec.tokens == doc_tokens[rec.window_start:rec.window_start + len(rec.tokens)]
                assert rec.tokens[rec.needle_offset:rec.needle_offset + len(q)] == q
                assert rec.window_start == max(0, rec.match_pos - 30)
                assert rec.metadata["domain"] == by_id[rec.metadata["id"]]["domain"]
        for doc_ix in rng.sample(range(eng.n_docs), 10) + [eng.n_docs - 1]:
            rec = eng.doc(doc_ix)
            source = by_id[rec.metadata["id"]]
            assert rec.is_full and tok.decode(rec.tokens) == source["text"]
            assert rec.path.endswith((".jsonl", ".gz", ".zst", ".parquet")) and rec.linenum >= 0
        # ranks at the end of each shard are document separators: refused, never garbage
        with pytest.raises(ValueError):
            eng.docs(0, eng.tok_cnt(0) - 1, eng.tok_cnt(0))
        with pytest.raises(ValueError):
            eng.rank_to_ptr(0, eng.tok_cnt(0))


def test_readers_order_and_metadata(corpus):
    root, by_id = corpus
    docs = list(iter_documents([root]))
    assert len(docs) == N_DOCS
    assert [d.source_file.name for d in docs][:1] == ["part2.jsonl.gz"]
    first = docs[0]
    assert first.line_no == 1 and set(first.metadata) == {"id", "domain"}
    assert first.text == by_id[first.metadata["id"]]["text"]


# ------------------------------------------------------------------------------------------ bad input


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


GOOD = b'{"text": "hello world"}\n'


@pytest.mark.parametrize(
    ("name", "data", "needle"),
    [
        ("empty.jsonl", b"", "empty"),
        ("nofield.jsonl", GOOD + b'{"content": "x"}\n', "--text-field"),
        ("nonstr.jsonl", b'{"text": 5}\n', "not a string"),
        ("latin1.jsonl", GOOD + '{"text": "caf\u00e9"}\n'.encode("latin-1"), ":2:"),
        ("badjson.jsonl", GOOD + GOOD + b'{"text": "unterminated\n', "invalid JSON"),
        ("notes.txt", GOOD, "unsupported"),
    ],
)
def test_bad_inputs_raise_one_line_user_error(tmp_path, name, data, needle):
    src = _write(tmp_path / "in" / name, data)
    out = tmp_path / "out" / "idx"
    with pytest.raises(UserError) as err:
        build_index([src], "bytes", out, progress=False)
    msg = str(err.value)
    assert "\n" not in msg and needle in msg and name in msg
    assert not out.exists()
    assert not out.parent.exists() or list(out.parent.iterdir()) == []  # no partial index, no temp dir


def test_bad_document_after_good_ones_leaves_nothing(tmp_path):
    good = _write(tmp_path / "in" / "a.jsonl", GOOD * 100)
    _write(tmp_path / "in" / "b.jsonl", GOOD + b'{"txt": 1}\n')
    out = tmp_path / "idx"
    with pytest.raises(UserError, match=r"b\.jsonl:2"):
        build_index([good.parent], "bytes", out, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def test_forbidden_paths(tmp_path, indexes):
    src = _write(tmp_path / "in" / "a.jsonl", GOOD)
    with pytest.raises(UserError, match="'table'"):
        build_index([src], "bytes", tmp_path / "tables" / "idx", progress=False)
    bad = tmp_path / "my_table_index"
    shutil.copytree(indexes("bytes", 1), bad)
    with pytest.raises(UserError, match="rename the folder"):
        IndexEngine(bad)  # the C++ engine would segfault here
    stray = tmp_path / "stray"
    shutil.copytree(indexes("bytes", 1), stray)
    (stray / "notes-metadata.txt").write_text("x")
    with pytest.raises(UserError, match="notes-metadata.txt"):
        IndexEngine(stray)


def test_damaged_index_refused_before_engine(tmp_path, indexes):
    good = indexes("bpe", 3)
    cases = {
        "truncated": lambda d: os.truncate(d / "table.1", (d / "table.1").stat().st_size - 7),
        "missing_table": lambda d: (d / "table.2").unlink(),
        "missing_manifest": lambda d: (d / MANIFEST_NAME).unlink(),
        "short_tokens": lambda d: os.truncate(d / "tokenized.0", (d / "tokenized.0").stat().st_size - 2),
    }
    for name, damage in cases.items():
        d = tmp_path / name
        shutil.copytree(good, d)
        damage(d)
        with pytest.raises(UserError) as err:
            IndexEngine(d)
        assert "\n" not in str(err.value), name
    with pytest.raises(UserError, match="does not exist"):
        IndexEngine(tmp_path / "nowhere")


def test_attach_prebuilt_index(tmp_path, indexes, bpe_path):
    built = indexes("bpe", 3)
    d = tmp_path / "prebuilt"
    shutil.copytree(built, d)
    (d / MANIFEST_NAME).unlink()
    (d / LOGPROB_NAME).unlink()
    m = attach_index(d, bpe_path)
    ref = IndexManifest.load(built)
    assert (m.dtype, m.n_docs, m.n_tokens, m.attached) == (ref.dtype, ref.n_docs, ref.n_tokens, True)
    assert np.allclose(m.load_logprobs(d), ref.load_logprobs(built))
    q = [int(x) for x in np.fromfile(d / "tokenized.0", dtype=np.uint16)[5:12]]
    with IndexEngine(d) as a, IndexEngine(built) as b:
        assert a.count(q) == b.count(q) > 0
    with pytest.raises(UserError, match="tokenizer"):
        attach_index(d, "bytes")  # u8 tokenizer on a u16 index


def test_u32_index_refused_without_32_gib(tmp_path, monkeypatch):
    from tokenizers import Tokenizer, models, pre_tokenizers

    import ingest.index.build as build

    vocab = {f"w{i}": i for i in range(70_000)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(tmp_path / "tokenizer.json"))
    assert load_tokenizer(tmp_path / "tokenizer.json").dtype == "u32"
    monkeypatch.setattr(build, "_physical_memory", lambda: 16 << 30)
    src = _write(tmp_path / "in" / "a.jsonl", b'{"text": "w1 w69999"}\n')
    with pytest.raises(UserError, match="36 GiB"):
        build_index([src], tmp_path / "tokenizer.json", tmp_path / "idx", progress=False)


def test_tokenizer_dtypes(bpe_path):
    assert load_tokenizer("bytes").dtype == "u8"
    tok = load_tokenizer(bpe_path)
    assert (tok.dtype, tok.vocab_size, tok.eos_token_id) == ("u16", 1000, 0)
    assert load_tokenizer(bpe_path.parent).sha256 == hashlib.sha256(bpe_path.read_bytes()).hexdigest()
    assert tok.decode(tok.encode(" def __init__(self):")) == " def __init__(self):"
    assert [dtype_for_vocab(v) for v in (255, 256, 65535, 65536)] == ["u8", "u16", "u16", "u32"]
    with pytest.raises(UserError, match="no-such-org/no-such-tokenizer"):
        load_tokenizer("no-such-org/no-such-tokenizer")


def test_reopening_is_bounded_by_measured_memory_not_a_count(setup):
    """The engine measures this process's mapped memory (RssFile + VmPTE) every `reopen_every` queries and
    reopens only past its budget; answers are the same either way."""
    from ingest.index.memory import default_budget, mapped_bytes, parse_bytes

    kind, brute, indexes = setup
    used = mapped_bytes()
    assert used is not None and used > 0  # Linux: /proc/self/status
    assert parse_bytes("4G") == 4 << 30 and parse_bytes("512m") == 512 << 20 and parse_bytes("1000") == 1000
    assert 256 << 20 <= default_budget() <= 8 << 30
    queries = _queries(brute, 255, seed=9)[:60]
    with IndexEngine(indexes(kind, 2), reopen_every=5, memory_budget=1 << 50) as roomy, \
            IndexEngine(indexes(kind, 2), reopen_every=5, memory_budget=1) as tight:
        assert [roomy.count(q) for q in queries] == [tight.count(q) for q in queries] == \
            [brute.count(q) for q in queries]
        assert roomy.reopens == 0 and tight.reopens >= 5
        assert not roomy.reopen_if_over_budget() and tight.reopen_if_over_budget()
    with IndexEngine(indexes(kind, 2), reopen_every=None, memory_budget=1) as manual:
        for q in queries:
            manual.count(q)
        assert manual.reopens == 0  # never inside a query: the caller decides (between trace batches)


def test_engine_memory_budget_from_the_environment(monkeypatch):
    from ingest.errors import UserError
    from ingest.index.memory import default_budget

    monkeypatch.setenv("LMAUDIT_ENGINE_MEMORY", "2G")
    assert default_budget() == 2 << 30
    monkeypatch.setenv("LMAUDIT_ENGINE_MEMORY", "lots")
    with pytest.raises(UserError):
        default_budget()

