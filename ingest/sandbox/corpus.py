"""The sandbox corpus: real text whose content is pinned, labelled by domain.

Every document comes from the files of the dependencies pinned with ``==`` in pyproject.toml (their own
wheel files, listed by RECORD; ingest/sandbox/pinned.py), never from the interpreter's stdlib, unpinned
packages or ``/usr/include``: the same command gives the same corpus, model and numbers on every machine of
a platform. ``mixture.json`` records the corpus's sha256 and checks it (ingest/sandbox/corpus_check.py).

Domains (each capped by a byte budget from the size):

* ``code``          - Python source of the pinned distributions; tests dirs, generated files (lines > 1000
                      chars), editable-install shims and files larger than ``max_file_bytes`` are skipped.
* ``boilerplate``   - their licence files (``LICENSE*``, ``LICENCE*``, ``COPYING*`` anywhere in a package,
                      ``*.dist-info/licenses/*``). Naturally duplicated: many MIT/Apache/BSD copies, e.g. the
                      third-party licences torch ships.
* ``documentation`` - prose files shipped in the packages (``.rst``, ``.md``: scikit-learn's dataset
                      descriptions, READMEs) and module docstrings (>= 200 bytes) of modules that were *not*
                      selected for ``code`` (so the two domains do not share text).
* ``headers``       - C/C++ headers shipped inside the wheels (numpy, pyarrow, torch, scipy include dirs).
* ``canary``        - a ~950-byte nonsense paragraph of made-up words from a seeded RNG, planted
                      ``canary_copies`` times as separate documents.

Selection is deterministic and does not depend on the seed: candidates are enumerated from sorted RECORD
paths, then taken in the order of a hash of their id (``<domain>/<distribution>/<path>``, a ``*.dist-info`` folder
named without its version: a spread-out, reproducible sample; a pin bump moves only that distribution's
documents, and a CPU and a CUDA build of torch give the same ids) while they fit the domain's
budget. The seed picks the canary text and the document order (a seeded shuffle).

Outputs in ``out_dir``: ``corpus.jsonl`` (one ``{"id", "domain", "source", "text"}`` per line, in training
order) and ``mixture.json``, the documented ground truth of the mixture: docs, bytes and tokens per domain
(``tokens`` is null until :func:`fill_mixture_tokens` runs with the trained tokenizer), the distributions
read, and the content hashes with their check.

Documents that are not UTF-8, are empty, or contain the literal special token ``<|endoftext|>`` (it would be
read as a document separator) are skipped.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import io
import json
import os
import random
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from ingest.sandbox.pinned import SourceFile, distribution_list, pinned_files
from ingest.sandbox.sizes import SandboxSize, get_size

EOS_TOKEN = "<|endoftext|>"
DOMAINS = ("code", "boilerplate", "documentation", "headers")
CANARY_DOMAIN = "canary"
MIXTURE_FORMAT = 2  # 2: pinned sources, content hashes and their check; no machine paths

_SKIP_DIRS = {
    "test",
    "tests",
    "testing",
    "idle_test",
    "__pycache__",
    "site-packages",
    "dist-packages",
    "node_modules",
}
_MAX_LINE = 1000
_MIN_DOCSTRING_BYTES = 200


@dataclass(frozen=True)
class Document:
    id: str
    domain: str
    source: str
    text: str

    def to_json(self) -> str:
        return json.dumps(
            {"id": self.id, "domain": self.domain, "source": self.source, "text": self.text},
            ensure_ascii=False,
        )


@dataclass(frozen=True)
class CorpusSummary:
    out_dir: Path
    corpus_jsonl: Path
    mixture_json: Path
    docs: int
    bytes: int
    domains: dict[str, dict[str, int]] = field(default_factory=dict)  # domain -> {"docs", "bytes"}
    canary_text: str = ""
    canary_copies: int = 0
    sha256: str = ""  # of corpus.jsonl
    check: dict[str, Any] = field(default_factory=dict)  # corpus_check.check_corpus: match / differs / unknown


# --------------------------------------------------------------------------------------------------
# sources: the files of the pinned distributions only (ingest/sandbox/pinned.py says why)

Candidate = tuple[str, str, int, Any]  # (doc id, source, approximate bytes, handle for the loader)

HEADER_SUFFIXES = (".h", ".hpp")
PROSE_SUFFIXES = (".rst", ".md")


def order_key(doc_id: str) -> str:
    """The hash that orders candidates (the corpus fills in this order; references read it backwards)."""
    return hashlib.sha256(doc_id.encode()).hexdigest()


def read_text(path: Path) -> str | None:
    """A file as UTF-8 text, or None when it is unreadable, not UTF-8, empty or holds ``<|endoftext|>``."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.strip() or EOS_TOKEN in text or "\x00" in text:
        return None
    return text


def _fill(candidates: Iterable[Candidate], budget: int, load) -> list[Document]:
    """Greedy fill in hash order. candidates: (id, source, approx_size, handle); load(handle) -> text|None."""
    out: list[Document] = []
    remaining = budget
    stop = min(2000, budget // 100)  # close enough: stop scanning once the budget is 99% full
    for doc_id, source, approx, handle in sorted(candidates, key=lambda c: order_key(c[0])):
        if remaining <= stop:
            break
        if approx > remaining:
            continue
        text = load(handle)
        if text is None:
            continue
        n = len(text.encode("utf-8"))
        if n > remaining:
            continue
        domain = doc_id.split("/", 1)[0]
        out.append(Document(doc_id, domain, source, text))
        remaining -= n
    return out


def _skip_path(rel: str) -> bool:
    parts = rel.split("/")
    return any(part in _SKIP_DIRS or part.startswith(".") for part in parts[:-1]) or parts[0].endswith(
        (".dist-info", ".egg-info", ".data"))


def _sized(files: Iterable[SourceFile], domain: str, max_file_bytes: int) -> list[Candidate]:
    out = []
    for f in files:
        try:
            size = f.path.stat().st_size
        except OSError:
            continue
        if 0 < size <= max_file_bytes:
            out.append((f"{domain}/{f.dist}/{f.key}", f"{f.dist}=={f.version}/{f.key}", size, f.path))
    return out


def code_candidates(max_file_bytes: int) -> list[Candidate]:
    """Python source of the pinned distributions (no tests, no editable-install shims)."""
    files = [f for f in pinned_files() if f.rel.endswith(".py") and not _skip_path(f.rel)
             and not f.path.name.startswith(("__editable__", "test_"))]
    return _sized(files, "code", max_file_bytes)


def load_code(path: Path) -> str | None:
    """A code file's text, or None for what `read_text` rejects and generated files (a line > 1000 chars)."""
    text = read_text(path)
    if text is None:
        return None
    if max(map(len, text.splitlines()), default=0) > _MAX_LINE:
        return None  # generated tables, serialized protobufs, minified code
    return text


def _is_license_name(name: str) -> bool:
    up = name.upper()
    return up.startswith(("LICENSE", "LICENCE", "COPYING"))


def boilerplate_candidates(max_file_bytes: int) -> list[Candidate]:
    """Licence files of the pinned distributions: ``LICENSE*``/``LICENCE*``/``COPYING*`` anywhere in them
    (torch ships its third-party licences this way) and ``*.dist-info/licenses/*``."""
    files = []
    for f in pinned_files():
        parts = f.rel.split("/")
        in_licenses_dir = len(parts) >= 3 and parts[0].endswith(".dist-info") and parts[1] == "licenses"
        if not (in_licenses_dir or _is_license_name(f.path.name)):
            continue
        if f.path.suffix in (".py", ".pyc", ".so", ".json", ".pyi"):
            continue
        if not in_licenses_dir and any(p in _SKIP_DIRS or p.startswith(".") for p in parts[:-1]):
            continue
        files.append(f)
    return _sized(files, "boilerplate", max_file_bytes)


def header_candidates(max_file_bytes: int) -> list[Candidate]:
    """C/C++ headers shipped inside the pinned wheels (numpy, pyarrow, torch, scipy include dirs)."""
    files = [f for f in pinned_files() if f.rel.endswith(HEADER_SUFFIXES) and not _skip_path(f.rel)]
    return _sized(files, "headers", max_file_bytes)


def _prose_candidates(max_file_bytes: int) -> list[Candidate]:
    files = [f for f in pinned_files() if f.rel.endswith(PROSE_SUFFIXES) and not _skip_path(f.rel)
             and not _is_license_name(f.path.name)]
    return [(f"documentation/prose/{doc_id[len('documentation/'):]}", source, size, ("file", path))
            for doc_id, source, size, path in _sized(files, "documentation", max_file_bytes)]


def _module_docstring(path: Path) -> str | None:
    """The module docstring, read with `tokenize` from the head of the file (no full parse)."""
    text = read_text(path)
    if text is None:
        return None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENCODING):
                continue
            if tok.type != tokenize.STRING:
                return None
            value = ast.literal_eval(tok.string)
            if not isinstance(value, str):
                return None
            doc = inspect.cleandoc(value)
            if len(doc.encode("utf-8")) < _MIN_DOCSTRING_BYTES or EOS_TOKEN in doc:
                return None
            return doc + "\n"
    except (tokenize.TokenError, SyntaxError, ValueError, IndentationError):
        return None
    return None


def documentation_candidates(code_cands: list[Candidate], code_ids: set[str], max_file_bytes: int):
    """Prose files (.rst, .md) shipped in the pinned packages and the module docstrings of code files not
    used as `code` (so the two domains share no text), with their loader: ``(candidates, load)``."""
    candidates: list[Candidate] = _prose_candidates(max_file_bytes)
    for doc_id, source, _size, path in code_cands:
        if doc_id in code_ids:
            continue
        # the docstring's size is unknown until it is read (0 here); _fill checks the real size
        candidates.append(("documentation/docstring/" + doc_id[len("code/"):], source, 0, ("docstring", path)))

    def load(handle):
        kind, path = handle
        return _module_docstring(path) if kind == "docstring" else load_code(path)

    return candidates, load


def domain_sources(max_file_bytes: int, code_ids: set[str]) -> dict[str, tuple[list[Candidate], Any]]:
    """Every real-text domain's candidates and loader; `code_ids` are the code documents used (their
    docstrings are not documentation candidates). Shared with the held-out reference documents."""
    code = code_candidates(max_file_bytes)
    doc_cands, doc_load = documentation_candidates(code, code_ids, max_file_bytes)
    return {
        "code": (code, load_code),
        "boilerplate": (boilerplate_candidates(max_file_bytes), read_text),
        "documentation": (doc_cands, doc_load),
        "headers": (header_candidates(max_file_bytes), read_text),
    }


def split_pieces(text: str, max_bytes: int) -> list[str]:
    """Cut `text` at line ends into pieces of at most `max_bytes` UTF-8 bytes (a longer line is a piece of
    its own). Whitespace-only pieces are dropped; nothing else is lost or reordered."""
    pieces: list[str] = []
    cur: list[str] = []
    size = 0
    for line in text.splitlines(keepends=True):
        n = len(line.encode("utf-8"))
        if cur and size + n > max_bytes:
            pieces.append("".join(cur))
            cur, size = [], 0
        cur.append(line)
        size += n
    if cur:
        pieces.append("".join(cur))
    return [p for p in pieces if p.strip()]


def _chunked(docs: list[Document], max_bytes: int) -> list[Document]:
    if max_bytes <= 0:
        return docs
    out = []
    for d in docs:
        for k, piece in enumerate(split_pieces(d.text, max_bytes)):
            out.append(Document(f"{d.id}#{k:04d}", d.domain, d.source, piece))
    return out


# --------------------------------------------------------------------------------------------------
# canary

_ONSETS = "b d f g k l m n p r s t v z br dr gl kr pl st tr zv qu th".split()
_NUCLEI = ["a", "e", "i", "o", "u", "ai", "ou", "ei", "oa", "y"]
_CODAS = ["", "", "", "n", "r", "s", "x", "lk", "mp", "nd", "rt", "sh"]


def make_canary(seed: int, target_bytes: int = 950) -> str:
    """A fixed nonsense paragraph of made-up words (seeded), at most `target_bytes` bytes, ending in '.'."""
    rng = random.Random(f"lmaudit-canary-{seed}")

    def word() -> str:
        return "".join(
            rng.choice(_ONSETS) + rng.choice(_NUCLEI) + rng.choice(_CODAS) for _ in range(rng.randint(1, 3))
        )

    # word by word, so the paragraph lands within a few bytes of the target
    text = ""
    sentence_left = 0
    while True:
        w = word()
        if sentence_left == 0:
            w = (" " if text else "") + w.capitalize()
            sentence_left = rng.randint(6, 13)
        else:
            w = " " + w
        sentence_left -= 1
        piece = w + ("." if sentence_left == 0 else "")
        if len((text + piece).encode()) + 1 > target_bytes:
            break
        text += piece
    if not text.endswith("."):
        text += "."
    return text + "\n"


# --------------------------------------------------------------------------------------------------
# main entry points


def collect_documents(size: SandboxSize | str, seed: int) -> tuple[list[Document], str]:
    """All documents (real text + canary copies) in training order, and the canary text."""
    size = get_size(size)
    budgets = size.domain_budgets
    docs: list[Document] = []

    code_cands = code_candidates(size.max_file_bytes)
    code_docs = _fill(code_cands, budgets["code"], load_code) if budgets["code"] > 0 else []
    docs += code_docs
    if budgets["boilerplate"] > 0:
        docs += _fill(boilerplate_candidates(size.max_file_bytes), budgets["boilerplate"], read_text)
    if budgets["documentation"] > 0:
        cands, load = documentation_candidates(code_cands, {d.id for d in code_docs}, size.max_file_bytes)
        docs += _fill(cands, budgets["documentation"], load)
    if budgets["headers"] > 0:
        docs += _fill(header_candidates(size.max_file_bytes), budgets["headers"], read_text)
    docs = _chunked(docs, size.chunk_bytes)

    canary = make_canary(seed, size.canary_bytes)
    probe = " ".join(canary.split()[:3])
    if any(probe in d.text for d in docs):  # pragma: no cover - astronomically unlikely
        raise RuntimeError("the canary text occurs in the corpus; choose another seed")
    width = max(4, len(str(size.canary_copies)))
    docs += [
        Document(f"canary/{i:0{width}d}", CANARY_DOMAIN, "canary", canary) for i in range(size.canary_copies)
    ]

    docs.sort(key=lambda d: d.id)
    random.Random(f"lmaudit-shuffle-{seed}").shuffle(docs)
    return docs, canary


def mixture_of(docs: Iterable[Document]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for d in docs:
        m = out.setdefault(d.domain, {"docs": 0, "bytes": 0})
        m["docs"] += 1
        m["bytes"] += len(d.text.encode("utf-8"))
    return dict(sorted(out.items()))


def write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def collect_corpus(size: SandboxSize | str, out_dir: Path, seed: int = 0) -> CorpusSummary:
    """Collect the corpus for `size` and write ``corpus.jsonl`` and ``mixture.json`` into `out_dir`.

    mixture.json records the corpus's content hashes and their check against the committed ones
    (ingest/sandbox/corpus_check.py); nothing in it depends on the machine's paths."""
    from ingest.sandbox.corpus_check import check_corpus, corpus_hashes

    size = get_size(size)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    docs, canary = collect_documents(size, seed)

    corpus_jsonl = out_dir / "corpus.jsonl"
    with open(corpus_jsonl, "w", encoding="utf-8", newline="\n") as f:
        for d in docs:
            f.write(d.to_json())
            f.write("\n")

    domains = mixture_of(docs)
    hashes = corpus_hashes(corpus_jsonl)
    check = check_corpus(size, seed, hashes)
    mixture = {
        "format": MIXTURE_FORMAT,
        "size": size.name,
        "seed": seed,
        "budgets": size.domain_budgets,
        "max_file_bytes": size.max_file_bytes,
        "chunk_bytes": size.chunk_bytes,
        "domains": {k: {**v, "tokens": None} for k, v in domains.items()},
        "total": {
            "docs": sum(v["docs"] for v in domains.values()),
            "bytes": sum(v["bytes"] for v in domains.values()),
            "tokens": None,
            "separator_tokens": None,
        },
        "canary": {
            "copies": size.canary_copies,
            "bytes": len(canary.encode("utf-8")),
            "tokens": None,
            "sha256": hashlib.sha256(canary.encode("utf-8")).hexdigest(),
            "text": canary,
        },
        "tokenizer": None,
        "distributions": distribution_list(),
        "sha256": hashes.to_json(),
        "check": check,
    }
    write_json_atomic(out_dir / "mixture.json", mixture)
    return CorpusSummary(
        out_dir=out_dir,
        corpus_jsonl=corpus_jsonl,
        mixture_json=out_dir / "mixture.json",
        docs=mixture["total"]["docs"],
        bytes=mixture["total"]["bytes"],
        domains=domains,
        canary_text=canary,
        canary_copies=size.canary_copies,
        sha256=hashes.corpus_jsonl,
        check=check,
    )


def read_corpus(corpus_jsonl: Path) -> Iterator[Document]:
    with open(corpus_jsonl, encoding="utf-8") as f:
        for line in f:
            o = json.loads(line)
            yield Document(o["id"], o["domain"], o["source"], o["text"])


def fill_mixture_tokens(mixture_json: Path, corpus_jsonl: Path, tokenizer, tokenizer_key: str | None = None) -> dict:
    """Fill the ``tokens`` fields of mixture.json using a trained `tokenizers.Tokenizer` (atomic rewrite).

    Tokens per domain count document tokens only; ``total.separator_tokens`` is the number of
    ``<|endoftext|>`` separators in the training stream (one before each document and one at the end).
    """
    mixture = json.loads(Path(mixture_json).read_text(encoding="utf-8"))
    docs = list(read_corpus(corpus_jsonl))
    encs = tokenizer.encode_batch([d.text for d in docs], add_special_tokens=False)
    per: dict[str, int] = {}
    canary_tokens = None
    for d, e in zip(docs, encs):
        per[d.domain] = per.get(d.domain, 0) + len(e.ids)
        if d.domain == CANARY_DOMAIN and canary_tokens is None:
            canary_tokens = len(e.ids)
    for dom, m in mixture["domains"].items():
        m["tokens"] = per.get(dom, 0)
    mixture["total"]["tokens"] = sum(per.values())
    mixture["total"]["separator_tokens"] = len(docs) + 1
    mixture["canary"]["tokens"] = canary_tokens
    mixture["tokenizer"] = {"vocab_size": tokenizer.get_vocab_size(), "key": tokenizer_key}
    write_json_atomic(Path(mixture_json), mixture)
    return mixture
