"""Run a generation job into the lake: resumable, never duplicating a sample.

The work list (prompt x sample index) is fixed by the run's parameters and cut into chunks; each chunk is
one atomic lake partition. A killed run is re-run with the same command: finished chunks are skipped,
the others are generated again from the same seeds, so the final rows equal an uninterrupted run's.

The runs row is written last and commits the run: the staging views show no generation whose run has no
runs row, so a run killed half way is invisible (not half counted) until its re-run finishes. Chunks
record the run's fingerprint; chunks of an unfinished run with other parameters are removed, not reused.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

from ingest import __version__
from ingest.checkpoints import revision_of
from ingest.errors import UserError
from ingest.home import model_location, stored_model
from ingest.generate.backends import Backend, GenRequest, SamplingConfig
from ingest.lake import Lake, make_key, partition_name


@dataclass(frozen=True)
class PromptUnit:
    """One prompt to sample from (token ids as the model sees them) and how many samples it gets: samples
    first_sample .. first_sample + n_samples - 1, sample g seeded with seed_base + g. A minimal-cue draw is one
    sample whose index is its rank among the draws of its word (ingest/generate/plan.py)."""

    prompt_id: str
    token_ids: tuple[int, ...]
    n_samples: int
    first_sample: int = 0


@dataclass(frozen=True)
class RunSpec:
    run_id: str
    model: str
    setting: str
    backend: str
    corpus_id: str | None
    sampling: SamplingConfig
    seed_base: int = 42
    chunk_size: int = 256
    purpose: str = "propme"  # propme / mixture / other: PropMe marts read only propme runs
    tokenizer: str | None = None  # the model's own tokenizer (prompts are text, each model encodes its own ids)
    engine: str = "{}"  # JSON of what changes the samples besides sampling: device, dtype, vLLM engine args

    def __post_init__(self) -> None:
        from ingest.lake import PURPOSES
        from ingest.names import check_name

        check_name("run id", self.run_id)

        if self.purpose not in PURPOSES:
            raise UserError(f"unknown purpose {self.purpose!r}; choose one of {', '.join(PURPOSES)}")

    def fingerprint(self, units: Sequence[PromptUnit], model: str | None = None) -> str:
        """What the samples depend on: a resumed run whose fingerprint differs (another backend, device,
        dtype or engine argument as well as other sampling) drops its chunks instead of mixing them. `model`:
        the model as the run records it (`ingest.home.stored_model`, default `self.model`), so a moved
        warehouse resumes its runs of a model inside it."""
        engine = () if self.engine == "{}" else (self.backend, self.engine)
        model = self.model if model is None else model
        return make_key(model, self.setting, self.corpus_id, json.dumps(asdict(self.sampling), sort_keys=True),
                        self.seed_base, self.chunk_size, *engine, *(f"{u.prompt_id}:{u.n_samples}" + (f"+{u.first_sample}" if u.first_sample else "") for u in units))


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    n_generations: int
    n_chunks: int
    n_chunks_skipped: int
    seconds: float
    tokens: int


def _legacy_fingerprint(lake: Lake, spec: RunSpec, units: Sequence[PromptUnit], recorded: str,
                        old_fp: str | None) -> str | None:
    """The fingerprint of a run recorded before model paths were relative (its model as then given: an
    absolute folder, perhaps of the place the warehouse was moved from) when it is this run's: the recorded
    model is the one given now (`model_location`, or the same path under the warehouse's old place) and the
    fingerprint with it is the recorded one. Else None. The re-run records the model relative and the
    fingerprint made with it (the old one names a folder it no longer records: kept, the next re-run could not
    check it), as re-running `lmaudit trace` re-records an old pass's folders."""
    import os
    from pathlib import Path

    if old_fp is None:
        return None
    given, key = Path(spec.model).expanduser(), stored_model(lake.home, spec.model)
    inside = given.is_dir() and not Path(key).is_absolute()  # a folder in this warehouse, not a hub name
    # the same tail names this folder only where the recorded one is gone (the place the warehouse left): a
    # folder still there (outside, another warehouse's) is another model with the same name
    same = Path(model_location(lake.home, recorded)).resolve() == given.resolve() or (
        inside and Path(recorded).is_absolute() and recorded.endswith(f"/{key}") and not os.path.lexists(recorded))
    return old_fp if same and spec.fingerprint(units, recorded) == old_fp else None


def _work_list(spec: RunSpec, units: Sequence[PromptUnit]) -> list[tuple[PromptUnit, int]]:
    return [(u, g) for u in units for g in range(u.first_sample, u.first_sample + u.n_samples)]


def _run_row(spec: RunSpec, fingerprint: str, n_samples: int, started: datetime, finished: datetime | None,
             model: str | None = None, tokenizer: str | None = None) -> dict:
    """The run's `runs` row; `model` and `tokenizer` as recorded (relative to the warehouse when inside it),
    default as given."""
    model = spec.model if model is None else model
    if tokenizer is None:
        tokenizer = spec.tokenizer if spec.tokenizer is not None else model
    return {
        "run_id": spec.run_id, "model": model, "revision": revision_of(spec.model), "corpus_id": spec.corpus_id,
        "setting": spec.setting, "backend": spec.backend, "temperature": spec.sampling.temperature,
        "top_p": spec.sampling.top_p, "max_new_tokens": spec.sampling.max_new_tokens, "n_samples": n_samples,
        "seed_base": spec.seed_base,
        "sampling_params": json.dumps({**asdict(spec.sampling), "fingerprint": fingerprint,
                                       "chunk_size": spec.chunk_size, "engine": json.loads(spec.engine)},
                                      sort_keys=True),
        "source": "lmaudit generate", "code_version": __version__, "started_at": started, "finished_at": finished,
        "purpose": spec.purpose, "tokenizer": tokenizer,
    }


class GenerateWorker:
    """Loads the model once (in a worker process or a Ray actor) and generates chunks of requests."""

    def __init__(self, backend: str, model: str, backend_kwargs: dict | None = None):
        from ingest.generate.backends import get_backend

        self.backend = get_backend(backend, model, **(backend_kwargs or {}))

    def __call__(self, job: tuple[list[GenRequest], SamplingConfig]) -> list:
        requests, sampling = job
        return self.backend.generate(requests, sampling)


def _drop_stale_chunks(lake: Lake, run_id: str, fingerprints: set[str], n_chunks: int) -> None:
    """Chunks left by an unfinished (uncommitted) run of this id with other parameters or more chunks: not
    ours to resume, and they would become visible with our runs row."""
    ours = {partition_name("run", run_id, f"chunk-{ci:06d}") for ci in range(n_chunks)}
    for part in lake.partitions("generations"):
        rec = lake.record("generations", part) or {}
        if part in ours and rec.get("fingerprint") in fingerprints:
            continue
        if part in ours or rec.get("run_id") == run_id:
            lake.delete("generations", part)


PROGRESS_EVERY_S = 60.0


def _eta(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600} h {(s % 3600) // 60:02d} min" if s >= 3600 else f"{s // 60} min {s % 60:02d} s"


def run_generation(lake: Lake, backend: Backend | None, spec: RunSpec, units: Sequence[PromptUnit],
                   progress: bool = True, executor=None, backend_kwargs: dict | None = None,
                   progress_every_s: float = PROGRESS_EVERY_S) -> RunSummary:
    """Generate every (prompt, sample) of the run. With an `executor`, workers load the model themselves
    (`spec.backend`, `spec.model`, `backend_kwargs`); otherwise the given `backend` runs in-process.

    With `progress`, a terminal gets a progress bar; any other stdout (a log file, a pipe, nohup, CI), where
    a bar is invisible, gets a plain progress line after the first chunk and then every `progress_every_s`."""
    if not units:
        raise UserError(f"run {spec.run_id}: no prompts for setting {spec.setting}; run `lmaudit prompts build` first")
    model = stored_model(lake.home, spec.model)
    fp = spec.fingerprint(units, model)
    run_part = partition_name("run", spec.run_id)
    existing = [r for r in lake.read("runs").to_pylist() if r["run_id"] == spec.run_id]
    if existing:
        old_fp = json.loads(existing[0]["sampling_params"] or "{}").get("fingerprint")
        fp = _legacy_fingerprint(lake, spec, units, existing[0]["model"], old_fp) or fp
        if old_fp != fp:
            raise UserError(f"run {spec.run_id!r} already exists with other parameters or prompts; choose another "
                            "--run-id (or delete the old run) instead of mixing two runs")
        fp = spec.fingerprint(units, model)  # re-recorded with the model as recorded now (relative)
    started = existing[0]["started_at"] if existing else datetime.now(timezone.utc)
    n_samples = max(u.n_samples for u in units)

    work = _work_list(spec, units)
    chunks = [work[i:i + spec.chunk_size] for i in range(0, len(work), spec.chunk_size)]
    if not existing:  # chunks of a run killed before model paths were relative fingerprint the model as given
        _drop_stale_chunks(lake, spec.run_id, {fp, spec.fingerprint(units)}, len(chunks))
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    from rich.console import Console

    skipped = 0
    tokens = 0
    t0 = time.perf_counter()
    out = Console()
    lines = progress and not out.is_terminal
    last_line, done_before, done_now = None, 0, 0
    with Progress(TextColumn(f"[bold]generate {spec.setting}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                  disable=not progress or lines, transient=True, console=out) as bar:
        task = bar.add_task("", total=len(work), rate="")
        todo = []
        for ci, chunk in enumerate(chunks):
            part = partition_name("run", spec.run_id, f"chunk-{ci:06d}")
            if lake.is_done("generations", part):
                skipped += 1
                done_before += len(chunk)
                bar.advance(task, len(chunk))
            else:
                todo.append((part, chunk))
        if lines and todo:
            out.print(f"generate {spec.run_id}: {len(work):,} generations in {len(chunks):,} chunks of up to "
                      f"{spec.chunk_size} ({skipped} already done); a progress line after the first chunk, then at "
                      f"most one every {progress_every_s:g} s", markup=False, highlight=False, soft_wrap=True)
        jobs = [([GenRequest(make_key(spec.run_id, u.prompt_id, g), u.token_ids, spec.seed_base + g)
                  for u, g in chunk], spec.sampling) for _, chunk in todo]
        if executor is None:
            if backend is None:
                raise ValueError("run_generation needs a backend or an executor")
            results = (backend.generate(reqs, sampling) for reqs, sampling in jobs)
        else:
            from ingest.executors import WorkerSpec

            results = executor.map(WorkerSpec(GenerateWorker, (spec.backend, spec.model, backend_kwargs)), jobs)
        for (part, chunk), outs in zip(todo, results):
            rows = [{"generation_id": o.key, "run_id": spec.run_id, "prompt_id": u.prompt_id, "sample_idx": g,
                     "seed": spec.seed_base + g, "text": o.text, "n_tokens": len(o.token_ids),
                     "finish_reason": o.finish_reason} for (u, g), o in zip(chunk, outs)]
            lake.write("generations", part, rows, meta={"fingerprint": fp, "run_id": spec.run_id})
            tokens += sum(len(o.token_ids) for o in outs)
            el = time.perf_counter() - t0
            bar.update(task, advance=len(chunk), rate=f"{tokens / el:,.0f} tok/s" if el > 0 else "")
            done_now += len(chunk)
            if lines and (last_line is None or el - last_line >= progress_every_s):
                last_line = el
                left = len(work) - done_before - done_now
                eta = f", ~{_eta(left * el / done_now)} left" if left and el > 0 else ""
                out.print(f"generate {spec.run_id}: {done_before + done_now:,}/{len(work):,} generations "
                          f"({100 * (done_before + done_now) / len(work):.0f} %), {tokens / el if el > 0 else 0:,.0f} "
                          f"tokens/s{eta}", markup=False, highlight=False, soft_wrap=True)
    tokenizer = None if spec.tokenizer is None else stored_model(lake.home, spec.tokenizer)
    lake.write("runs", run_part, [_run_row(spec, fp, n_samples, started, datetime.now(timezone.utc), model=model,
                                           tokenizer=tokenizer)])
    return RunSummary(spec.run_id, len(work), len(chunks), skipped, time.perf_counter() - t0, tokens)
