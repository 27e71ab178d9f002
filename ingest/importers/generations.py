"""`lmaudit import generations`: generations made elsewhere into `runs`, `prompts`, `generations`."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ingest import __version__
from ingest.corpora import corpus_id_for, unregistered_corpus_fix
from ingest.errors import UserError
from ingest.home import stored_model
from ingest.importers.records import iter_records
from ingest.lake import ALL_SETTINGS, PURPOSES, Lake, make_key, partition_name


@dataclass(frozen=True)
class ImportSummary:
    run_id: str
    n_generations: int
    n_new_prompts: int
    replaced: bool
    n_blank: int = 0  # empty or whitespace-only texts: real outputs, kept (the marts count them)


def _opt_str(path: Path, i: int, rec: dict, field: str) -> str | None:
    v = rec.get(field)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise UserError(f"{path}, row {i}: {field!r} must be a string or integer, got {type(v).__name__}")
    return _utf8(path, i, field, str(v))


_INT_MAX = {"seed": 2**63 - 1, "sample_idx": 2**31 - 1, "n_tokens": 2**31 - 1}  # the lake's int64 / int32


def _opt_int(path: Path, i: int, rec: dict, field: str) -> int | None:
    v = rec.get(field)
    if v is None:
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise UserError(f"{path}, row {i}: {field!r} must be a non-negative integer, got {v!r}")
    if v > _INT_MAX.get(field, 2**63 - 1):
        raise UserError(f"{path}, row {i}: {field!r} is {v}, larger than the warehouse stores "
                        f"(at most {_INT_MAX.get(field, 2**63 - 1)})")
    return v


def _utf8(path: Path, i: int, field: str, text: str) -> str:
    """Text the lake can store: a lone surrogate (e.g. a JSON "\\ud800" escape) has no UTF-8 form."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise UserError(f"{path}, row {i}: {field!r} has a character with no UTF-8 form ({e.reason} at "
                        f"position {e.start}); fix the text or its escapes") from None
    return text


def import_generations(lake: Lake, file: str | Path, *, run_id: str, model: str, setting: str,
                       corpus: str | None = None, purpose: str = "propme") -> ImportSummary:
    """Validate the whole file, then write the run, its new prompts and its generations.

    Empty and whitespace-only texts are kept: a model's empty output is a result, as `lmaudit generate`
    records it, and the marts count such outputs (blank_rate) and show FMR without them (fmr_nonblank)."""
    file = Path(file)
    if setting not in ALL_SETTINGS:
        raise UserError(f"unknown setting {setting!r}; choose one of {', '.join(ALL_SETTINGS)}")
    if purpose not in PURPOSES:
        raise UserError(f"unknown purpose {purpose!r}; choose one of {', '.join(PURPOSES)}")
    from ingest.names import check_name

    check_name("run id", run_id)
    corpus_id = None
    if corpus is not None:
        corpus_id = corpus_id_for(corpus)
        known = {r["corpus_id"] for r in lake.read("corpora").select(["corpus_id"]).to_pylist()}
        if corpus_id not in known:
            raise UserError(f"corpus {corpus!r} is not registered; {unregistered_corpus_fix(corpus)} first, or "
                            "omit --corpus")

    rows: list[dict[str, Any]] = []
    prompts: dict[str, str | None] = {}
    next_idx: dict[str | None, int] = {}
    seen: dict[tuple[str | None, int], int] = {}
    for i, rec in iter_records(file):
        if "text" not in rec or rec["text"] is None:
            raise UserError(f"{file}, row {i}: missing 'text'; every row needs the generated continuation")
        text = rec["text"]
        if not isinstance(text, str):
            raise UserError(f"{file}, row {i}: 'text' must be a string, got {type(text).__name__}")
        _utf8(file, i, "text", text)
        prompt = rec.get("prompt")
        if prompt is not None and not isinstance(prompt, str):
            raise UserError(f"{file}, row {i}: 'prompt' must be a string, got {type(prompt).__name__}")
        if prompt is not None:
            _utf8(file, i, "prompt", prompt)
        prompt_id = _opt_str(file, i, rec, "prompt_id")
        if prompt_id is None and prompt is not None:
            prompt_id = make_key(setting, prompt)
        if prompt_id is not None:
            known = prompts.get(prompt_id)
            if prompt is not None and known is not None and known != prompt:
                raise UserError(f"{file}, row {i}: prompt_id {prompt_id!r} has two different prompt texts")
            prompts[prompt_id] = known if prompt is None else prompt
        sample_idx = _opt_int(file, i, rec, "sample_idx")
        if sample_idx is None:
            sample_idx = next_idx.get(prompt_id, 0)
        next_idx[prompt_id] = max(next_idx.get(prompt_id, 0), sample_idx + 1)
        if (prompt_id, sample_idx) in seen:
            raise UserError(f"{file}, row {i}: duplicate (prompt_id={prompt_id}, sample_idx={sample_idx}), "
                            f"first seen at row {seen[(prompt_id, sample_idx)]}")
        seen[(prompt_id, sample_idx)] = i
        finish = _opt_str(file, i, rec, "finish_reason")
        rows.append({
            "generation_id": make_key(run_id, prompt_id, sample_idx), "run_id": run_id,
            "prompt_id": prompt_id, "sample_idx": sample_idx, "seed": _opt_int(file, i, rec, "seed"),
            "text": text, "n_tokens": _opt_int(file, i, rec, "n_tokens"), "finish_reason": finish,
        })
    if not rows:
        raise UserError(f"{file}: no generations found; the file is empty")

    # Prompts are shared between runs (two models on the same prompts): add only the new ones.
    existing = {r["prompt_id"]: r["text"] for r in lake.read("prompts").select(["prompt_id", "text"]).to_pylist()}
    for pid, text in prompts.items():
        if pid in existing and None not in (existing[pid], text) and existing[pid] != text:
            raise UserError(f"prompt_id {pid!r} is already in the warehouse with a different text; "
                            "use distinct prompt ids")
    new_prompts = [{"prompt_id": pid, "setting": setting, "text": text, "source": f"import:{file.name}",
                    "corpus_id": corpus_id} for pid, text in sorted(prompts.items()) if pid not in existing]

    sha = hashlib.sha256(file.read_bytes()).hexdigest()
    now = datetime.now(timezone.utc)
    run = {  # a model folder inside the warehouse relative to it, as `lmaudit generate` records it
        "run_id": run_id, "model": stored_model(lake.home, model), "corpus_id": corpus_id, "setting": setting,
        "backend": "import",
        "n_samples": max(next_idx.values()), "sampling_params": json.dumps({"imported_sha256": sha}),
        "source": str(file.resolve()), "code_version": __version__, "started_at": now, "finished_at": now,
        "purpose": purpose,
    }
    part = partition_name("run", run_id)
    replaced = bool(lake.partitions("runs")) and part in lake.partitions("runs")
    # One transaction: prompts, generations and the runs row become visible together or not at all (a crash,
    # a full disk); a commit cut short is finished by the next lake use.
    with lake.transaction():
        if new_prompts:
            lake.write("prompts", partition_name("import", run_id, make_key(*sorted(p["prompt_id"] for p in new_prompts))), new_prompts)
        lake.write("generations", part, rows, meta={"source_sha256": sha})
        lake.write("runs", part, [run])
    return ImportSummary(run_id, len(rows), len(new_prompts), replaced,
                         n_blank=sum(not r["text"].strip() for r in rows))
