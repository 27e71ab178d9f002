"""Score many texts under a model into the lake: batched, resumable, any executor.

Items (reference documents or a run's generations) are sorted by id and cut into chunks; each chunk is one
atomic `text_scores` partition whose name hashes the model, the item source and the chunk's ids and texts,
so a re-run skips finished chunks and a changed text is scored again (its old row stays keyed by the old
text's hash and no mart reads it). With a reference model (the "Ref" baseline) each text is scored under
both and the row keeps both losses.

The model is recorded as runs record it (`ingest.home.stored_model`: a folder inside the warehouse relative to
it), in the rows, their ids and the partition names, so a moved or copied warehouse finds its scores done.
Partitions written before, under the folder's absolute path, are re-recorded so when they hold a chunk of
this job (`take_over`), not scored again.

The scoring convention (`authors`, the default, or `lmaudit`; ingest/score/features.py) changes the scores
of the same text, so it is part of the row key, of the partition names and of `params`: rows of the two
conventions live side by side and never replace each other. `lmaudit` rows keep the key they had before
conventions existed (and rows without a convention in `params` read as `lmaudit`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ingest.errors import UserError
from ingest.executors import WorkerSpec, get_executor
from ingest.lake import Lake, make_key, text_hash
from ingest.score.features import SCORINGS, Scoring, score_text

K_FRACTION = 0.2  # Min-K% and Min-K%++ average the lowest 20% of the tokens


@dataclass(frozen=True)
class ScoreJob:
    model: str
    ref_model: str | None = None
    batch_size: int = 8
    device: str = "cpu"
    dtype: str = "float32"
    scoring: str = "authors"
    recorded_model: str | None = None  # the model as rows record it (`stored_model`); default `model`
    recorded_ref_model: str | None = None  # the reference model so recorded; default `ref_model`

    def __post_init__(self) -> None:
        """The options every command that scores shares (`score`, `mia-benchmark score`), checked once here."""
        if self.batch_size < 1:
            raise UserError("--batch-size must be at least 1")
        if self.device not in ("cpu", "cuda", "auto"):
            raise UserError(f"--device must be cpu, cuda or auto, not {self.device!r}")
        if self.dtype not in ("float32", "bfloat16", "float16"):
            raise UserError(f"--dtype must be float32, bfloat16 or float16, not {self.dtype!r}")

    @property
    def convention(self) -> Scoring:
        return SCORINGS.get(self.scoring)

    def key_parts(self) -> tuple[str, ...]:
        """What keys a row or partition besides its model and text: nothing for `lmaudit` (the key rows had
        before conventions existed), the convention's name otherwise."""
        return () if self.scoring == "lmaudit" else (self.scoring,)

    @property
    def row_model(self) -> str:
        return self.model if self.recorded_model is None else self.recorded_model

    @property
    def row_ref_model(self) -> str | None:
        return self.ref_model if self.recorded_ref_model is None else self.recorded_ref_model

    def score_id(self, kind: str, item_id: str, digest: str) -> str:
        """A row's key: the model as recorded, the text (`digest`: its hash) and the convention, not the
        reference model (the model's own scores do not change with it)."""
        return make_key(self.row_model, kind, item_id, digest, *self.key_parts())

    def params(self, device: str | None = None) -> str:
        """A row's `params`: how it was scored. `device`: the one the scorer ran on (`--device auto` resolved),
        default the one asked for."""
        return json.dumps({"k": K_FRACTION, "batch_size": self.batch_size, "device": device or self.device,
                           "dtype": self.dtype, **self.convention.params()}, sort_keys=True)


class ScoreWorker:
    """Loads the model (and the reference model) once per process or Ray actor."""

    def __init__(self, job: ScoreJob):
        from ingest.score.logprobs import HFScorer

        self.job = job
        c = job.convention
        kw = {"batch_size": job.batch_size, "device": job.device, "dtype": job.dtype, "start_token": c.start_token,
              "max_tokens": c.max_tokens, "min_tokens": c.min_tokens}
        self.scorer = HFScorer(job.model, **kw)
        self.ref = HFScorer(job.ref_model, **kw) if job.ref_model else None

    def __call__(self, chunk: Sequence[tuple[str, str, str]]) -> list[dict]:
        texts = [t for _, _, t in chunk]
        main = self.scorer.score(texts)
        ref = self.ref.score(texts) if self.ref else [None] * len(texts)
        rows, c = [], self.job.convention
        for (item_id, kind, text), s, r in zip(chunk, main, ref):
            f = score_text(text, s.logprobs, s.mu, s.sigma, K_FRACTION, c)
            h = text_hash(text)
            rows.append({
                "score_id": self.job.score_id(kind, item_id, h),
                "model": self.job.row_model, "item_id": item_id,
                "item_kind": kind, "text_hash": h, "n_tokens": f.n_tokens, "truncated": s.truncated,
                "loss": f.loss, "zlib_loss": f.zlib_loss, "mink": f.mink, "minkpp": f.minkpp,
                "ref_model": self.job.row_ref_model,
                "ref_loss": score_text(text, r.logprobs, r.mu, r.sigma, K_FRACTION, c).loss if r is not None else None,
                "token_logprobs": s.logprobs, "params": self.job.params(str(self.scorer.device)),
            })
        return rows


@dataclass(frozen=True)
class ScoreSummary:
    n_items: int
    n_chunks: int
    n_skipped: int
    seconds: float


def score_items(lake: Lake, job: ScoreJob, items: Sequence[tuple[str, str, str]], source: str,
                chunk_size: int = 64, workers: int = 1, executor=None, progress: bool = True) -> ScoreSummary:
    """Score `items` [(item_id, item_kind, text)] from `source` (e.g. "reference" or "run:R")."""
    from ingest.home import stored_model

    if not items:
        raise UserError(f"nothing to score: {source} has no texts")
    if chunk_size < 1:
        raise UserError("--chunk-size must be at least 1")
    items = sorted(items)
    chunks = [items[i:i + chunk_size] for i in range(0, len(items), chunk_size)]
    job.convention  # an unknown convention fails before anything is read or deleted
    # the reference model too (a sandbox model in the Ref baseline): absolute, a moved warehouse scored it all again
    job = replace(job, recorded_model=stored_model(lake.home, job.model),
                  recorded_ref_model=None if job.ref_model is None else stored_model(lake.home, job.ref_model))
    model_part = make_key(job.row_model, job.row_ref_model, *job.key_parts())[:12]
    prefix = f"score--{model_part}--{make_key(source)[:12]}--"
    names = [prefix + make_key(*(f"{i}:{text_hash(t)}" for i, _, t in c))[:16] for c in chunks]
    for part in lake.partitions("text_scores"):  # chunks of an older version of this input
        if part.startswith(prefix) and part not in names:
            lake.delete("text_scores", part)
    for part in other_reference_partitions(lake, job, source, prefix):
        if not take_over(lake, job, part, names, source):
            lake.delete("text_scores", part)
    todo = [(n, c) for n, c in zip(names, chunks) if not lake.is_done("text_scores", n)]
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from ingest.progress import progress_bar

    t0 = time.perf_counter()
    with progress_bar(TextColumn("[bold]score"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      enabled=progress) as bar:
        task = bar.add_task("", total=len(items), completed=len(items) - sum(len(c) for _, c in todo))
        ex = executor or get_executor("local", workers=workers)
        for (name, chunk), rows in zip(todo, ex.map(WorkerSpec(ScoreWorker, (job,)), [c for _, c in todo])):
            lake.write("text_scores", name, rows, meta={"source": source})
            bar.advance(task, len(chunk))
    return ScoreSummary(len(items), len(chunks), len(chunks) - len(todo), time.perf_counter() - t0)


def other_reference_partitions(lake: Lake, job: ScoreJob, source: str, prefix: str) -> list[str]:
    """Partitions of this source scored under the same model and convention with another `--ref-model` (or
    none). Their rows have the same keys as this job's (the reference model is not part of a score's key:
    the model's own scores do not change with it), so scoring again with another reference model replaces
    them; kept, they would be a second row per text and the build's unique test would fail. The same model
    is the same as the marts read it (`ingest.home.model_key`): the folder in the place the warehouse was moved
    from counts, so scoring again after a move replaces the rows written there instead of doubling them."""
    from ingest.home import model_key

    ours = model_key(lake.home, job.row_model)
    stem = f"--{make_key(source)[:12]}--"
    out = []
    for part in lake.partitions("text_scores"):
        if not part.startswith("score--") or stem not in part or part.startswith(prefix):
            continue
        first = lake.read("text_scores", part).select(["model", "params"]).slice(0, 1).to_pylist()
        if first and model_key(lake.home, first[0]["model"]) == ours and \
                json.loads(first[0]["params"] or "{}").get("scoring", "lmaudit") == job.scoring:
            out.append(part)
    return out


def take_over(lake: Lake, job: ScoreJob, part: str, names: Sequence[str], source: str) -> bool:
    """Re-record `part`, a partition of the same model (`other_reference_partitions`) under another spelling
    of it (the folder's absolute path, as lmaudit recorded it before), as this job's partition of the same
    chunk: its scores are this job's (the same model, texts, convention and reference model, the last also
    read by `model_key`), only the models' names in the rows, their ids and the partition's name change. False
    (nothing done) for another reference model, a chunk this job does not have, or one it has done: the caller
    deletes that partition."""
    ours = {n.rsplit("--", 1)[1]: n for n in names}
    name = ours.get(part.rsplit("--", 1)[1])
    rows = lake.read("text_scores", part).to_pylist()
    from ingest.home import model_key

    def ref_key(ref: str | None) -> str | None:
        return None if ref is None else model_key(lake.home, ref)

    ours_ref = ref_key(job.row_ref_model)
    if name is None or lake.is_done("text_scores", name) or any(ref_key(r["ref_model"]) != ours_ref for r in rows):
        return False
    rows = [{**r, "model": job.row_model, "ref_model": job.row_ref_model,
             "score_id": job.score_id(r["item_kind"], r["item_id"], r["text_hash"])} for r in rows]
    with lake.transaction():
        lake.write("text_scores", name, rows, meta={"source": source})
        lake.delete("text_scores", part)
    return True


def reference_items(lake: Lake) -> list[tuple[str, str, str]]:
    """Every labelled reference document, as (ref_doc_id, "reference", text)."""
    rows = lake.read("reference_docs").select(["ref_doc_id", "text"]).to_pylist()
    if not rows:
        raise UserError("no reference documents in the warehouse; run `lmaudit reference import` (or "
                        "`lmaudit sandbox reference`) first")
    return [(r["ref_doc_id"], "reference", r["text"]) for r in rows]


def run_items(lake: Lake, run_id: str) -> list[tuple[str, str, str]]:
    """The generations of one run, as (generation_id, "generation", text); empty texts are left out."""
    from ingest.lake.runs import run_texts

    return [(gid, "generation", text) for gid, text in run_texts(lake, run_id) if text.strip()]
