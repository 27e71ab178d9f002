"""The `corpora` table: which indexed corpora the warehouse knows, and how to open one by name.

Later steps (prompts, generate, trace) refer to a corpus by its name; this module turns the name into an
open index engine and the index's tokenizer, with one-line errors when the index moved or changed.

An index folder inside the warehouse (a sandbox's, an attached index's manifest) is recorded relative to
the warehouse, so a moved or copied warehouse opens its own copy (`corpus_row` hands out the folders as
they lie now). Rows registered before that hold absolute paths: one that names another warehouse's folder
is looked for at the same place in this one and used there if its manifests are the registered ones.
The corpus id is the name's key, never a path, so it is the same wherever the warehouse lives.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ingest.errors import UserError
from ingest.home import from_stored, stored_path
from ingest.lake import Lake, make_key, partition_name


def corpus_id_for(name: str) -> str:
    return make_key(name)


def sandbox_build_command(name: str) -> str | None:
    """The `lmaudit sandbox build ...` that registers corpus `name`, for a name that `build_and_register`
    gives (`sandbox-<size>[-<mixture>][-canary<N>][-<N>steps][-seed<N>][-llama]`); None for any other name."""
    import re

    from ingest.sandbox.sizes import MIXTURES, SIZES

    m = re.fullmatch(r"sandbox-(?P<size>[a-z]+)(?P<rest>(?:-[a-z0-9]+)*?)(?:-seed(?P<seed>\d+))?(?P<llama>-llama)?",
                     name)
    if m is None or m["size"] not in SIZES:
        return None
    rest, opts = m["rest"], []
    if (steps := re.search(r"-(\d+)steps$", rest)) is not None:
        rest, opts = rest[:steps.start()], [f"--steps {steps[1]}"]
    if (canary := re.search(r"-canary(\d+)$", rest)) is not None:
        rest, opts = rest[:canary.start()], [f"--canary-copies {canary[1]}", *opts]
    if rest:
        label = rest[1:]
        weights = re.fullmatch(r"mix((?:-[a-z]+\d+)+)", label)
        if label in MIXTURES:
            opts.insert(0, f"--mixture {label}")
        elif weights is not None:
            pairs = re.findall(r"-([a-z]+)(\d+)", weights[1])
            opts.insert(0, "--mixture " + ",".join(f"{d}={int(w) / 100:g}" for d, w in pairs))
        else:
            return None
    if m["seed"]:
        opts.append(f"--seed {m['seed']}")
    if m["llama"]:
        opts.append("--index-tokenizer llama-style")
    return " ".join(["lmaudit sandbox build", f"--size {m['size']}", *opts])


def unregistered_corpus_fix(name: str) -> str:
    """How to register corpus `name`: the sandbox command that builds it, or an index build or attach."""
    sandbox = sandbox_build_command(name)
    if sandbox is not None:
        return f"run `{sandbox}` (it builds the sandbox and registers its corpus)"
    return f"run `lmaudit index build ... --name {name}` or `lmaudit index attach ... --name {name}`"


def register_corpus(lake: Lake, name: str, index_dirs: list[str | Path]) -> dict[str, Any]:
    """Write (or replace) the corpus row for an index; the manifest is the source of every number."""
    from ingest.index.manifest import IndexManifest

    from ingest.names import check_name

    check_name("corpus name", name)
    dirs = [str(Path(d).resolve()) for d in index_dirs]
    manifests = [IndexManifest.load(d) for d in dirs]
    first = manifests[0]
    tok = first.tokenizer
    row = {
        "corpus_id": corpus_id_for(name), "name": name,
        # the tokenizer file where it lies now (the manifest names where it was when the index was built)
        "tokenizer": stored_path(lake.home, first.tokenizer_spec(dirs[0])) if tok.get("path") else tok.get("name"),
        "token_dtype": first.dtype, "vocab_size": first.vocab_size, "eos_token_id": first.eos_token_id,
        "n_docs": sum(m.n_docs for m in manifests), "n_tokens": sum(m.n_tokens for m in manifests),
        "n_shards": sum(len(m.shards) for m in manifests),
        "index_dirs": [stored_path(lake.home, d) for d in dirs],
        "manifest_hash": _manifest_hash(dirs),
        "registered_at": datetime.now(timezone.utc),
    }
    lake.write("corpora", partition_name("corpus", name), [row])
    return {**row, "index_dirs": dirs}


def _manifest_hash(dirs: list[str]) -> str:
    from ingest.index.manifest import IndexManifest

    return hashlib.sha256(b"".join(IndexManifest.path_in(d).read_bytes() for d in dirs)).hexdigest()


def attach_corpus(lake: Lake, name: str, index_dirs: list[str | Path], tokenizer: str,
                  dtype: str | None = None) -> dict[str, Any]:
    """Register prebuilt index folders as one corpus, writing nothing into them.

    A folder built by lmaudit already has its manifest (the tokenizer given must be the one it names); its
    files are checked against it (sizes, pointer width, sampled offsets, metadata and suffix-array ranks, the
    tokenizer on sampled documents, the unigram table: `check_index_folder`). For
    a prebuilt infini-gram folder the manifest and unigram table are computed from its files (every file
    checked: sizes, pointer and token width, the tokenizer on sampled documents) and kept in the
    warehouse, `<warehouse>/indexes/<corpus key>/part-<k>/`, pointing at the folder: prebuilt indexes are
    often read-only and shared between users."""
    import shutil
    import uuid

    from ingest.index.build import attach_index, check_index_folder
    from ingest.index.manifest import IndexManifest
    from ingest.index.tokenizer import load_tokenizer
    from ingest.names import check_name

    check_name("corpus name", name)
    if not index_dirs:
        raise UserError("give at least one index folder")
    tok = load_tokenizer(tokenizer)
    base = lake.home / "indexes" / corpus_id_for(name)[:16]
    staged = base.parent / f".{base.name}.{uuid.uuid4().hex}.tmp"
    described: list[str] = []
    try:
        for k, d in enumerate(index_dirs):
            d = Path(d).resolve()
            if IndexManifest.path_in(d).exists():
                m = IndexManifest.load(d)
                ours, theirs = tok.describe(), m.tokenizer
                same = (ours.get("sha256") == theirs.get("sha256")) if ours.get("sha256") and theirs.get("sha256") \
                    else ours.get("name") == theirs.get("name")
                if not same:
                    raise UserError(f"{d} was built with tokenizer {theirs.get('name')!r}, not {tokenizer!r}; pass "
                                    "the index's own tokenizer")
                check_index_folder(d, tok)  # every file, as for a prebuilt folder (spot checks: stays fast)
                described.append(str(d))
            else:
                attach_index(d, tok, dtype=dtype, sidecar=staged / f"part-{k}")
                described.append(str(base / f"part-{k}"))
        if staged.exists():
            if base.exists():
                shutil.rmtree(base)
            staged.rename(base)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return register_corpus(lake, name, described)


def corpus_row(lake: Lake, name: str) -> dict[str, Any]:
    """The corpus's row, its `index_dirs` as absolute folders where they lie now (see `current_index_dirs`)."""
    rows = [r for r in lake.read("corpora").to_pylist() if r["name"] == name]
    if not rows:
        known = sorted(r["name"] for r in lake.read("corpora").to_pylist())
        hint = f"known: {', '.join(known)}" if known else "none is registered yet"
        raise UserError(f"corpus {name!r} is not registered ({hint}); {unregistered_corpus_fix(name)}")
    return {**rows[0], "index_dirs": current_index_dirs(lake, rows[0])}


def current_index_dirs(lake: Lake, row: dict[str, Any]) -> list[str]:
    """A corpus row's index folders, absolute, in this warehouse.

    A relative folder is under this warehouse. An absolute one recorded before paths were relative may name
    the folder of the warehouse this one was moved or copied from: if the same tail exists here (e.g.
    `sandbox/<size>/index`) and the manifests there are the registered ones, that is the corpus's index,
    and the original warehouse is never read (it may be gone, or hold another index by now).
    Folders whose manifests are not the registered ones are refused (one line); missing ones are left to the
    caller, which names them (`missing_index_message`)."""
    if not row.get("index_dirs"):  # a corpora row written by hand (or by a tool) without its folders
        raise UserError(f"corpus {row['name']!r} names no index folder in the lake's corpora table; register its "
                        f"index again (`lmaudit index attach FOLDER --tokenizer TOKENIZER --name {row['name']}`)")
    stored = list(row["index_dirs"])
    dirs = [str(from_stored(lake.home, d)) for d in stored]
    moved = [moved_into(lake.home, d) if os.path.isabs(s) else d for s, d in zip(stored, dirs)]
    if moved != dirs and _manifest_hash_or_none(moved) == row["manifest_hash"]:
        return moved
    current = _manifest_hash_or_none(dirs)
    if current is not None and current != row["manifest_hash"]:
        raise UserError(f"corpus {row['name']!r}: the index in {', '.join(dirs)} is not the one registered (it "
                        "changed, or the warehouse was moved and that folder now holds another); register it again "
                        "(`lmaudit index attach`) so results stay traceable")
    return dirs


def corpus_of_index(lake: Lake, index_dirs: list[str] | tuple[str, ...]) -> str | None:
    """The id of the registered corpus whose index is exactly these folders (in this order), else None: a
    `trace --index DIR` of a registered index records the same corpus as `trace --corpus NAME` does (before,
    the pass's corpus_id flipped to NULL and back with the flag used)."""
    wanted = [str(Path(d).resolve()) for d in index_dirs]
    found = []
    for row in lake.read("corpora").to_pylist():
        try:
            dirs = current_index_dirs(lake, row)
        except UserError:  # a corpus whose folder now holds another index is not this one
            continue
        if [str(Path(d).resolve()) for d in dirs] == wanted:
            found.append(row["corpus_id"])
    return found[0] if len(set(found)) == 1 else None


def moved_into(home: Path, recorded: str) -> str:
    """`recorded` as the longest tail of it that is an index folder in this warehouse, else as recorded."""
    from ingest.index.manifest import IndexManifest

    home = Path(home).resolve()
    if home == Path(recorded) or home in Path(recorded).parents:
        return recorded
    parts = Path(recorded).parts[1:]
    for i in range(len(parts)):
        candidate = home.joinpath(*parts[i:])
        if IndexManifest.path_in(candidate).is_file():
            return str(candidate)
    return recorded


def _manifest_hash_or_none(dirs: list[str]) -> str | None:
    try:
        return _manifest_hash(dirs)
    except OSError:
        return None


def missing_index_message(name: str, folder: str, home: Path) -> str:
    """One line for a corpus whose index folder is gone: where it was looked for, and how to register it again."""
    inside = not os.path.isabs(stored_path(home, folder))
    why = "" if inside else (" (an absolute path recorded before this warehouse was moved or copied, or a folder "
                             "that was moved since)")
    return (f"corpus {name!r}: index folder {folder} is gone or has no manifest{why}; register the index again "
            f"where it is now (`lmaudit index attach FOLDER --tokenizer TOKENIZER --name {name}`, or "
            f"`lmaudit sandbox build --size SIZE` for a sandbox corpus) or rebuild it (`lmaudit index build`)")


@dataclass
class OpenCorpus:
    row: dict[str, Any]
    engine: Any  # ingest.index.engine.IndexEngine
    tokenizer: Any  # ingest.index.tokenizer.Tokenizer

    @property
    def corpus_id(self) -> str:
        return self.row["corpus_id"]


def open_corpus(lake: Lake, name: str, **engine_kwargs) -> OpenCorpus:
    """Open a registered corpus; refuses an index whose manifest changed since registration."""
    from ingest.index.manifest import IndexManifest
    from ingest.index.engine import IndexEngine
    from ingest.index.tokenizer import load_tokenizer

    row = corpus_row(lake, name)
    dirs = row["index_dirs"]
    for d in dirs:
        if not IndexManifest.path_in(d).exists():
            raise UserError(missing_index_message(name, d, lake.home))
    engine = IndexEngine(dirs, **engine_kwargs)
    tokenizer = load_tokenizer(engine.manifest.tokenizer_spec(dirs[0]))
    return OpenCorpus(row, engine, tokenizer)


def manifest_summary(index_dir: str | Path) -> str:
    from ingest.index.manifest import IndexManifest

    m = IndexManifest.load(index_dir)
    return json.dumps({"docs": m.n_docs, "tokens": m.n_tokens, "shards": len(m.shards), "dtype": m.dtype})
