"""The sandbox corpus: real text that every machine with this project installed has, labelled by domain.

Domains (each capped by a byte budget from the size):

* ``code``          - Python source of the running interpreter's stdlib and of the project's installed
                      dependencies (the transitive ``Requires-Dist`` closure of ``lmaudit``, no extras, read
                      from their RECORD files; all of site-packages when the project is not installed);
                      tests dirs, generated files (lines > 1000 chars), editable-install shims and files
                      larger than ``max_file_bytes`` are skipped.
* ``boilerplate``   - license files of the same distributions (``LICENSE*``, ``LICENCE*``, ``COPYING*``,
                      ``*.dist-info/licenses/*``) and the stdlib's ``LICENSE.txt``. Naturally duplicated
                      (many MIT/Apache/BSD copies).
* ``documentation`` - ``pydoc_data.topics`` entries and module docstrings (>= 200 bytes) of modules that
                      were *not* selected for ``code`` (so the two domains do not share text).
* ``headers``       - C headers in the Python include dir and ``/usr/include`` (omitted where absent).
* ``canary``        - a ~950-byte nonsense paragraph of made-up words from a seeded RNG, planted
                      ``canary_copies`` times as separate documents.

Selection is deterministic and does not depend on the seed: candidates are enumerated from sorted paths,
then taken in the order of a hash of their id (a spread-out, reproducible sample: a small budget does not
end up being all of ``a*.py``) while they fit the domain's budget. The seed picks the canary text and the
document order (a seeded shuffle).

Outputs in ``out_dir``: ``corpus.jsonl`` (one ``{"id", "domain", "source", "text"}`` per line, in training
order) and ``mixture.json``, the documented ground truth of the mixture: docs, bytes and tokens per domain
(``tokens`` is null until :func:`fill_mixture_tokens` runs with the trained tokenizer).

Documents that are not UTF-8, are empty, or contain the literal special token ``<|endoftext|>`` (it would be
read as a document separator) are skipped.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import io
import json
import os
import random
import sys
import sysconfig
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from ingest.sandbox.sizes import SandboxSize, get_size

EOS_TOKEN = "<|endoftext|>"
DOMAINS = ("code", "boilerplate", "documentation", "headers")
CANARY_DOMAIN = "canary"
MIXTURE_FORMAT = 1

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


# --------------------------------------------------------------------------------------------------
# sources


def source_roots() -> dict[str, Path]:
    """The roots the corpus reads from: label -> directory (only those that exist)."""
    paths = sysconfig.get_paths()
    roots = {
        "stdlib": Path(paths["stdlib"]),
        "site-packages": Path(paths["purelib"]),
        "python-include": Path(paths["include"]),
        "usr-include": Path("/usr/include"),
    }
    return {k: v for k, v in roots.items() if v.is_dir()}


PROJECT_DISTRIBUTION = "lmaudit"


@functools.lru_cache(maxsize=1)
def pinned_distributions() -> tuple[tuple[str, str, Any], ...] | None:
    """The installed distributions this project depends on (transitively, no extras), sorted by name.

    Returns ``(name, version, Distribution)`` triples, or None when the project itself is not installed
    (a bare source checkout): then all of site-packages is read. Restricting site-packages to the
    dependency closure keeps the corpus the same when someone installs an optional extra (ray, vllm, ...).
    """
    from importlib import metadata

    try:
        root = metadata.distribution(PROJECT_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    try:
        from packaging.requirements import InvalidRequirement, Requirement
    except ImportError:  # pragma: no cover - packaging ships with pip/setuptools
        return None

    seen: dict[str, Any] = {}
    queue = list(root.requires or [])
    while queue:
        try:
            req = Requirement(queue.pop())
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        key = req.name.lower().replace("_", "-").replace(".", "-")
        if key in seen:
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue
        seen[key] = dist
        queue.extend(dist.requires or [])
    return tuple((k, seen[k].version, seen[k]) for k in sorted(seen))


def _site_packages_files(roots: dict[str, Path]) -> list[tuple[str, Path]]:
    """(relative posix path, path) of the files site-packages candidates come from, sorted, deduplicated.

    With the project installed: the RECORD-listed files of its dependency closure. Otherwise: every file.
    """
    sp = roots.get("site-packages")
    if sp is None:
        return []
    dists = pinned_distributions()
    if dists is None:
        return [(rel, p) for rel, p, _size in _walk(sp, None, _SKIP_DIRS - {"site-packages"})]
    out: dict[str, Path] = {}
    for _name, _version, dist in dists:
        for f in dist.files or []:
            rel = f.as_posix() if hasattr(f, "as_posix") else str(f)
            if rel.startswith(("..", "/")):
                continue  # scripts and data outside site-packages
            out.setdefault(rel, sp / rel)
    return sorted(out.items())


def source_fingerprint() -> str:
    """A cheap fingerprint of what the corpus reads: interpreter, roots and the distributions read.

    Hashing every file would cost seconds; the distributions' names and versions catch any upgrade.
    """
    roots = source_roots()
    h = hashlib.sha256()
    h.update(sys.version.encode())
    for label, root in sorted(roots.items()):
        h.update(f"{label}={root}\n".encode())
    dists = pinned_distributions()
    if dists is not None:
        for name, version, _ in dists:
            h.update(f"{name}=={version}\n".encode())
    elif "site-packages" in roots:
        for name in sorted(os.listdir(roots["site-packages"])):
            if name.endswith(".dist-info"):
                h.update(name.encode() + b"\n")
    return h.hexdigest()[:16]


def _order_key(doc_id: str) -> str:
    return hashlib.sha256(doc_id.encode()).hexdigest()


def _walk(root: Path, suffixes: tuple[str, ...] | None, skip_dirs: set[str]) -> Iterator[tuple[str, Path, int]]:
    """Yield (relative posix path, path, size) for files under root in sorted order."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip_dirs and not d.startswith("."))
        for fn in sorted(filenames):
            if suffixes is not None and not fn.endswith(suffixes):
                continue
            p = Path(dirpath, fn)
            try:
                st = p.stat()
            except OSError:
                continue
            if not p.is_file():
                continue
            yield p.relative_to(root).as_posix(), p, st.st_size


def _read_text(path: Path) -> str | None:
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


def _fill(candidates: Iterable[tuple[str, str, int, Any]], budget: int, load) -> list[Document]:
    """Greedy fill in hash order. candidates: (id, source, approx_size, handle); load(handle) -> text|None."""
    out: list[Document] = []
    remaining = budget
    stop = min(2000, budget // 100)  # close enough: stop scanning once the budget is 99% full
    for doc_id, source, approx, handle in sorted(candidates, key=lambda c: _order_key(c[0])):
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
    return any(part in _SKIP_DIRS or part.startswith(".") for part in parts[:-1])


def _code_candidates(roots: dict[str, Path], max_file_bytes: int) -> list[tuple[str, str, int, Path]]:
    out = []
    std = roots.get("stdlib")
    files: list[tuple[str, str, Path]] = []
    if std is not None:
        files += [("stdlib", rel, p) for rel, p, _ in _walk(std, (".py",), _SKIP_DIRS)]
    files += [("site-packages", rel, p) for rel, p in _site_packages_files(roots) if rel.endswith(".py")]
    for label, rel, p in files:
        name = p.name
        if _skip_path(rel) or name.startswith(("__editable__", "test_")) or rel.startswith("pydoc_data/"):
            continue
        if rel.split("/", 1)[0].endswith(".dist-info"):
            continue
        try:
            size = p.stat().st_size
        except OSError:
            continue
        if size == 0 or size > max_file_bytes:
            continue
        out.append((f"code/{label}/{rel}", f"{label}/{rel}", size, p))
    return out


def _load_code(path: Path) -> str | None:
    text = _read_text(path)
    if text is None:
        return None
    if max(map(len, text.splitlines()), default=0) > _MAX_LINE:
        return None  # generated tables, serialized protobufs, minified code
    return text


def _is_license_name(name: str) -> bool:
    up = name.upper()
    return up.startswith(("LICENSE", "LICENCE", "COPYING"))


def _boilerplate_candidates(roots: dict[str, Path], max_file_bytes: int) -> list[tuple[str, str, int, Path]]:
    out = []
    std = roots.get("stdlib")
    if std is not None:
        for name in sorted(os.listdir(std)):
            p = std / name
            if _is_license_name(name) and p.is_file():
                size = p.stat().st_size
                if 0 < size <= max_file_bytes:
                    out.append((f"boilerplate/stdlib/{name}", f"stdlib/{name}", size, p))
    for rel, p in _site_packages_files(roots):
        parts = rel.split("/")
        in_licenses_dir = len(parts) >= 3 and parts[0].endswith(".dist-info") and parts[1] == "licenses"
        if not (in_licenses_dir or _is_license_name(p.name)):
            continue
        if p.suffix in (".py", ".pyc", ".so", ".json", ".pyi") or _skip_path(rel):
            continue
        try:
            size = p.stat().st_size
        except OSError:
            continue
        if 0 < size <= max_file_bytes:
            out.append((f"boilerplate/site-packages/{rel}", f"site-packages/{rel}", size, p))
    return out


def _header_candidates(roots: dict[str, Path], max_file_bytes: int) -> list[tuple[str, str, int, Path]]:
    out = []
    for label in ("python-include", "usr-include"):
        root = roots.get(label)
        if root is None:
            continue
        for rel, p, size in _walk(root, (".h",), set()):
            if 0 < size <= max_file_bytes:
                out.append((f"headers/{label}/{rel}", f"{label}/{rel}", size, p))
    return out


def _module_docstring(path: Path) -> str | None:
    """The module docstring, read with `tokenize` from the head of the file (no full parse)."""
    text = _read_text(path)
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


def _documentation_docs(
    roots: dict[str, Path], budget: int, code_candidates, code_ids: set[str]
) -> list[Document]:
    candidates, load = _documentation_candidates(code_candidates, code_ids)
    return _fill(candidates, budget, load)


def _documentation_candidates(code_candidates, code_ids: set[str]):
    """pydoc topics and the module docstrings of code files not used as `code`, with their loader."""
    candidates: list[tuple[str, str, int, Any]] = []
    try:
        from pydoc_data.topics import topics
    except ImportError:  # pragma: no cover - stripped interpreters
        topics = {}
    for key in sorted(topics):
        text = topics[key]
        if text.strip() and EOS_TOKEN not in text:
            candidates.append((f"documentation/pydoc-topics/{key}", "pydoc_data.topics", len(text.encode()), text))
    for doc_id, source, _size, path in code_candidates:
        if doc_id in code_ids:
            continue
        # the docstring's size is unknown until it is read (0 here); _fill checks the real size
        candidates.append(("documentation/docstring/" + doc_id[len("code/"):], source, 0, path))

    def load(handle):
        return handle if isinstance(handle, str) else _module_docstring(handle)

    return candidates, load


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
    roots = source_roots()
    budgets = size.domain_budgets
    docs: list[Document] = []

    code_cands = _code_candidates(roots, size.max_file_bytes)
    code_docs = _fill(code_cands, budgets["code"], _load_code) if budgets["code"] > 0 else []
    docs += code_docs
    if budgets["boilerplate"] > 0:
        docs += _fill(_boilerplate_candidates(roots, size.max_file_bytes), budgets["boilerplate"], _read_text)
    if budgets["documentation"] > 0:
        docs += _documentation_docs(roots, budgets["documentation"], code_cands, {d.id for d in code_docs})
    if budgets["headers"] > 0:
        docs += _fill(_header_candidates(roots, size.max_file_bytes), budgets["headers"], _read_text)
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
    """Collect the corpus for `size` and write ``corpus.jsonl`` and ``mixture.json`` into `out_dir`."""
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
        "sources": {k: str(v) for k, v in sorted(source_roots().items())},
        "distributions": _distribution_list(),
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
    )


def _distribution_list() -> list[str] | None:
    dists = pinned_distributions()
    return None if dists is None else [f"{name}=={version}" for name, version, _ in dists]


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
