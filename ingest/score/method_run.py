"""Score texts with the Table-2 baselines of ingest/score/methods.py into `text_method_scores`: batched,
resumable, any executor.

Like `text_scores` (ingest/score/run.py) items are sorted by id and cut into chunks; each (method, chunk) is
one atomic partition whose name hashes the model, the method, the item source, the method's configuration
(the ReCaLL prefix, the DC-PDD frequency table, ...) and the chunk's ids and texts, so a re-run skips what is
done, a changed text or configuration is scored again and the partitions of the old configuration are
deleted (one configuration per model, method and source: the marts never see two). Methods are scored under
the `authors` convention only (no start token, <= 512 tokens, a text of fewer than 2 tokens has no score),
as the authors' scripts for these methods ran. The model is recorded as in `text_scores` (`stored_model`:
relative to the warehouse inside it), and partitions written under its absolute path before are re-recorded
(`take_over`), not scored again.

What the methods need besides the model is fixed before any worker starts, in the main process:
- DC-PDD's token frequencies: by default the pooled reference documents (the authors' script's default,
  `--freq_strategy global`), or the unigram table of a registered corpus's index (`--dcpdd-corpus`);
- ReCaLL's prefix: by default RECALL_SHOTS reference documents drawn with seed 0 (the authors' script's
  default: shots sampled from the pooled category samples), or a file of known non-member text
  (`--recall-prefix`, the ReCaLL paper's setting);
- Neighbor's random-fill word pool: the reference documents' words (the authors' script's default), or a
  masked LM that fills the neighbours (`--neighbor-model`, the paper's way; ingest/score/neighbors.py).
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ingest.errors import UserError
from ingest.executors import WorkerSpec, get_executor
from ingest.lake import Lake, make_key, text_hash
from ingest.registry import Registry
from ingest.score import methods as M

TABLE = "text_method_scores"
MAX_TOKENS = 512  # the authors' scripts' --max_tokens (exp_scripts/{dcpdd,recall}.sh)
MIN_TOKENS = 2  # their scripts give a text of fewer tokens no score
RECALL_SEED = 0  # run_recall_threshold.py's --seed default


@dataclass(frozen=True)
class MethodInfo:
    name: str
    title: str  # as Table 2 of LLMSurgeon names it
    source: str  # what the definition follows


METHODS: Registry[MethodInfo] = Registry("MIA method")
for _info in (MethodInfo("dcpdd", "DC-PDD", "authors' run_dcpdd_threshold.py"),
              MethodInfo("recall", "ReCaLL", "authors' run_recall_threshold.py"),
              MethodInfo("gradnorm", "GradNorm", "Wang et al. 2024 (no authors' script)"),
              MethodInfo("jointlogit", "Joint-Logit", "Carlini et al. 2022 (no authors' script)"),
              MethodInfo("neighbor", "Neighbor", "authors' run_neighborhood_threshold.py")):
    METHODS.add(_info.name, _info)


def parse_methods(spec: str | None) -> tuple[str, ...]:
    """`dcpdd,recall` -> ("dcpdd", "recall"); an unknown name is one line."""
    if not spec:
        return ()
    names = tuple(dict.fromkeys(n.strip() for n in spec.split(",") if n.strip()))
    for n in names:
        METHODS.get(n)
    return names


@dataclass(frozen=True)
class MethodJob:
    model: str
    methods: tuple[str, ...]
    batch_size: int = 8
    device: str = "cpu"
    dtype: str = "float32"
    freq: np.ndarray | None = field(default=None, compare=False, repr=False)  # DC-PDD token frequencies
    freq_source: str = "reference"
    prefix: str | None = None  # ReCaLL prefix text
    prefix_source: str = "reference"
    dcpdd_a: float = M.DCPDD_A
    fill: tuple[str, ...] = field(default=(), compare=False, repr=False)  # Neighbor's random-fill word pool
    neighbor_seed: int = 0  # run_neighborhood_threshold.py's --seed default
    neighbor_model: str | None = None  # a masked LM fills the neighbours (the paper's way) instead of random words
    neighbor_model_digest: str = ""  # its files' names, sizes and times: a changed model is scored again
    recorded_model: str | None = None  # the model as rows record it (`stored_model`); default `model`

    @property
    def row_model(self) -> str:
        return self.model if self.recorded_model is None else self.recorded_model

    def score_id(self, kind: str, item_id: str, digest: str, method: str) -> str:
        """A row's key: the model as recorded, the text (`digest`: its hash), the method and the convention."""
        return make_key(self.row_model, kind, item_id, digest, method, "authors")

    def config(self, method: str) -> dict:
        """What changes `method`'s scores besides the model and the text (its row `params`)."""
        base = {"scoring": "authors", "max_tokens": MAX_TOKENS, "dtype": self.dtype}
        if method == "dcpdd":
            digest = hashlib.sha256(np.ascontiguousarray(self.freq).tobytes()).hexdigest()[:16]
            return {**base, "a": self.dcpdd_a, "freq_source": self.freq_source, "freq_sha256": digest}
        if method == "recall":
            return {**base, "prefix_source": self.prefix_source,
                    "prefix_sha256": hashlib.sha256((self.prefix or "").encode()).hexdigest()[:16]}
        if method == "gradnorm":
            return {**base, "p": M.GRADNORM_P, "aggregate": "mean over parameter tensors"}
        if method == "neighbor":
            return {**base, "n": M.NEIGHBOR_N, "pct_words": M.NEIGHBOR_PCT, "span_words": M.NEIGHBOR_SPAN,
                    "seed": self.neighbor_seed} | (
                {"fill": "masked LM", "neighbor_model": self.neighbor_model,
                 "neighbor_model_digest": self.neighbor_model_digest} if self.neighbor_model else
                {"fill": "random words", "fill_sha256": hashlib.sha256("\n".join(self.fill).encode()).hexdigest()[:16]})
        return base


class MethodWorker:
    """Loads the model once per process or Ray actor; scores one chunk with the methods asked for."""

    def __init__(self, job: MethodJob):
        from ingest.score.logprobs import HFScorer

        self.job = job
        self.scorer = HFScorer(job.model, batch_size=job.batch_size, device=job.device, dtype=job.dtype,
                               start_token=False, max_tokens=MAX_TOKENS, min_tokens=MIN_TOKENS)
        self.filler = None
        if job.neighbor_model and "neighbor" in job.methods:
            from ingest.score.neighbors import MaskedLMFiller

            self.filler = MaskedLMFiller(job.neighbor_model, job.device)

    def __call__(self, task: tuple[Sequence[tuple[str, str, str]], Sequence[str]]) -> dict[str, list[dict]]:
        chunk, methods = task
        s = self.scorer
        enc = [s.encode(t)[0] for _, _, t in chunk]
        base = s.score_ids(enc)
        cond = self._conditional(enc) if "recall" in methods else {}
        neigh = self._neighbours(chunk, enc) if "neighbor" in methods else {}
        out: dict[str, list[dict]] = {m: [] for m in methods}
        for i, ((item_id, kind, text), ids, b) in enumerate(zip(chunk, enc, base)):
            for m in methods:
                r = (M.neighbor(float(np.mean(b.logprobs)) if b.logprobs else None, neigh.get(i, []))
                     if m == "neighbor" else self._score(m, ids, b.logprobs, cond.get(i)))
                out[m].append({
                    "method_score_id": self.job.score_id(kind, item_id, text_hash(text), m),
                    "model": self.job.row_model, "item_id": item_id, "item_kind": kind, "text_hash": text_hash(text),
                    "method": m, "scoring": "authors", "n_tokens": max(len(ids) - 1, 0), "raw_score": r.raw,
                    "member_score": r.member, "params": json.dumps(self.job.config(m), sort_keys=True),
                })
        return out

    def _score(self, method: str, ids: list[int], logprobs: list[float], ll_cond: float | None) -> M.MethodScore:
        if len(ids) < MIN_TOKENS:
            return M.NONE
        if method == "dcpdd":
            return M.dcpdd(ids[1:], logprobs, self.job.freq, self.job.dcpdd_a)
        if method == "recall":
            return M.recall(ll_cond, float(np.mean(logprobs)))
        if method == "gradnorm":
            return M.gradnorm(self._grad_norms(ids))
        return M.joint_logit(logprobs)

    def _conditional(self, enc: list[list[int]]) -> dict[int, float]:
        """Average log-likelihood of each text's tokens after the ReCaLL prefix, as run_recall_threshold.py
        builds the input: the prefix encoded with truncation to the room the text leaves (none: no prefix),
        then the text; every text token is scored (the first one given the prefix)."""
        s, seqs, starts = self.scorer, [], []
        for ids in enc:
            if len(ids) < MIN_TOKENS:
                continue
            room = s.limit - len(ids)
            pre = list(s.tok.encode(self.job.prefix, truncation=True, max_length=room)) if room > 0 else []
            pre = pre[-room:] if len(pre) > room else pre  # their guard: keep the prefix's end if still too long
            seqs.append(pre + ids)
            starts.append(max(len(pre), 1) - 1)
        scored = iter(zip(s.score_ids(seqs), starts))
        out = {}
        for i, ids in enumerate(enc):
            if len(ids) >= MIN_TOKENS:
                ts, start = next(scored)
                out[i] = float(np.mean(ts.logprobs[start:]))
        return out

    def _neighbours(self, chunk, enc: list[list[int]]) -> dict[int, list[float]]:
        """Average log-likelihoods of each text's NEIGHBOR_N neighbours (a text of fewer than 2 words or
        tokens has none). Each text draws from its own random.Random seeded by the seed and its hash, so a
        chunk scores the same alone or with others; the script's one generator over all texts in file order
        cannot be resumed."""
        owners, texts = [], []
        for i, ((_, _, text), ids) in enumerate(zip(chunk, enc)):
            words = text.split()
            if len(ids) < MIN_TOKENS or len(words) < 2:
                continue
            rng = random.Random(f"{self.job.neighbor_seed}:{text_hash(text)}")
            if self.filler is not None:
                from ingest.score.neighbors import masked_positions

                masks = [masked_positions(len(words), rng) for _ in range(M.NEIGHBOR_N)]
                neighbours = [" ".join(n) for n in self.filler.fill(words, masks)]
            else:
                neighbours = [" ".join(M.perturb_words(words, self.job.fill, rng)) for _ in range(M.NEIGHBOR_N)]
            owners += [i] * len(neighbours)
            texts += neighbours
        out: dict[int, list[float]] = {}
        for i, ts in zip(owners, self.scorer.score(texts)):
            if ts.logprobs:
                out.setdefault(i, []).append(float(np.mean(ts.logprobs)))
        return out

    def _grad_norms(self, ids: list[int]) -> list[float]:
        import torch

        model = self.scorer.model
        with torch.enable_grad():
            model.zero_grad(set_to_none=True)
            x = torch.tensor([ids], device=self.scorer.device)
            model(input_ids=x, labels=x).loss.backward()
            norms = [float(p.grad.detach().float().norm(M.GRADNORM_P)) for p in model.parameters()
                     if p.grad is not None]
            model.zero_grad(set_to_none=True)
        return norms


def recall_prefix(items: Sequence[tuple[str, str, str]], shots: int = M.RECALL_SHOTS, seed: int = RECALL_SEED) -> str:
    """The authors' default prefix: `shots` texts drawn with `random.Random(seed).sample` from the pool (with
    replacement when the pool is smaller), joined by a blank line. The pool is sorted by id here; their
    script's pool is in the order of their files, so the documents drawn differ, the rule does not."""
    pool = [t for _, _, t in sorted(items)]
    rng = random.Random(seed)
    shots_ = rng.sample(pool, k=shots) if len(pool) >= shots else [pool[rng.randrange(len(pool))] for _ in range(shots)]
    return M.RECALL_SEPARATOR.join(shots_)


def corpus_frequencies(lake: Lake, corpus: str, vocab_size: int) -> np.ndarray:
    """DC-PDD frequencies from a registered corpus's unigram table(s); its tokenizer must be the model's."""
    from ingest.corpora import corpus_row
    from ingest.index.manifest import IndexManifest

    dirs = corpus_row(lake, corpus)["index_dirs"]
    manifests = [IndexManifest.load(d) for d in dirs]
    for m in manifests:
        if m.vocab_size != vocab_size:
            raise UserError(f"corpus {corpus!r} is tokenized with a vocabulary of {m.vocab_size} ids, the model's "
                            f"tokenizer has {vocab_size}; DC-PDD needs the corpus indexed with the model's tokenizer")
    return M.index_frequencies([m.load_logprobs(d) for m, d in zip(manifests, dirs)], [m.n_tokens for m in manifests])


@dataclass(frozen=True)
class MethodSummary:
    n_items: int
    n_partitions: int
    n_skipped: int
    seconds: float


def score_methods(lake: Lake, job: MethodJob, items: Sequence[tuple[str, str, str]], source: str,
                  chunk_size: int = 64, workers: int = 1, executor=None) -> MethodSummary:
    """Score `items` [(item_id, item_kind, text)] from `source` with every method of `job`."""
    from ingest.home import stored_model

    if not items:
        raise UserError(f"nothing to score: {source} has no texts")
    if chunk_size < 1:
        raise UserError("--chunk-size must be at least 1")
    items = sorted(items)
    chunks = [items[i:i + chunk_size] for i in range(0, len(items), chunk_size)]
    ids = [make_key(*(f"{i}:{text_hash(t)}" for i, _, t in c)) for c in chunks]
    job = replace(job, recorded_model=stored_model(lake.home, job.model))
    todo: dict[int, list[str]] = {}
    names: dict[tuple[str, int], str] = {}
    for m in job.methods:
        prefix = f"mscore--{make_key(job.row_model, m, 'authors')[:12]}--{make_key(source)[:12]}--"
        config = json.dumps(job.config(m), sort_keys=True)
        for c, cid in enumerate(ids):
            names[m, c] = prefix + make_key(config, cid)[:16]
        current = {names[m, c] for c in range(len(chunks))}
        for part in lake.partitions(TABLE):  # an older text or configuration of this method and source
            if part.startswith(prefix) and part not in current:
                lake.delete(TABLE, part)
        for part in moved_model_partitions(lake, job.row_model, m, source, prefix):
            if not take_over(lake, job, part, [names[m, c] for c in range(len(chunks))], source, m):
                lake.delete(TABLE, part)
        for c in range(len(chunks)):
            if not lake.is_done(TABLE, names[m, c]):
                todo.setdefault(c, []).append(m)
    t0 = time.perf_counter()
    order = sorted(todo)
    if order:
        ex = executor or get_executor("local", workers=workers)
        for c, rows in zip(order, ex.map(WorkerSpec(MethodWorker, (job,)), [(chunks[c], todo[c]) for c in order])):
            for m, part_rows in rows.items():
                lake.write(TABLE, names[m, c], part_rows, meta={"source": source, "method": m})
    n_parts = len(chunks) * len(job.methods)
    return MethodSummary(len(items), n_parts, n_parts - sum(len(v) for v in todo.values()), time.perf_counter() - t0)


def moved_model_partitions(lake: Lake, model: str, method: str, source: str, prefix: str) -> list[str]:
    """Partitions of this method and source scored under the same model as the marts read it
    (`ingest.home.model_key`) but named by another path of it: the sandbox model's folder in the place the
    warehouse was moved from. The staging models read both as one model, so scoring again after a move
    replaces those rows instead of doubling them."""
    from ingest.home import model_key

    ours, stem = model_key(lake.home, model), f"--{make_key(source)[:12]}--"
    out = []
    for part in lake.partitions(TABLE):
        if not part.startswith("mscore--") or stem not in part or part.startswith(prefix):
            continue
        if (lake.record(TABLE, part) or {}).get("method") != method:
            continue
        first = lake.read(TABLE, part).select(["model"]).slice(0, 1).to_pylist()
        if first and model_key(lake.home, first[0]["model"]) == ours:
            out.append(part)
    return out


def take_over(lake: Lake, job: MethodJob, part: str, names: Sequence[str], source: str, method: str) -> bool:
    """Re-record `part`, a partition of `method` under the same model (`moved_model_partitions`) spelled
    otherwise (its absolute folder, as lmaudit recorded it before), as this job's partition of the same chunk
    and configuration (the name's tail hashes both): only the model's name in the rows, their ids and the
    partition's name change. False (nothing done) when no name of this job has its tail or that one is done:
    the caller deletes it."""
    name = {n.rsplit("--", 1)[1]: n for n in names}.get(part.rsplit("--", 1)[1])
    if name is None or lake.is_done(TABLE, name):
        return False
    rows = [{**r, "model": job.row_model,
             "method_score_id": job.score_id(r["item_kind"], r["item_id"], r["text_hash"], method)}
            for r in lake.read(TABLE, part).to_pylist()]
    with lake.transaction():
        lake.write(TABLE, name, rows, meta={"source": source, "method": method})
        lake.delete(TABLE, part)
    return True


def method_job(lake: Lake, model: str, methods: tuple[str, ...], batch_size: int = 8, device: str = "cpu",
               dtype: str = "float32", recall_prefix_file: str | None = None,
               dcpdd_corpus: str | None = None, neighbor_model: str | None = None) -> MethodJob:
    """A MethodJob with DC-PDD's frequencies and ReCaLL's prefix fixed (see the module docstring); bad
    input is one line before any model weights load."""
    from pathlib import Path

    freq, freq_source, prefix, prefix_source = None, "reference", None, "reference"
    if "recall" in methods:
        if recall_prefix_file:
            try:
                prefix = Path(recall_prefix_file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise UserError(f"cannot read --recall-prefix {recall_prefix_file} ({e}); pass a UTF-8 text file of "
                                "non-member text") from None
            if not prefix.strip():
                raise UserError(f"--recall-prefix {recall_prefix_file} is empty; pass a file of non-member text")
            prefix_source = f"file:{Path(recall_prefix_file).name}"
        else:
            from ingest.score.run import reference_items

            prefix = recall_prefix(reference_items(lake))
    if "dcpdd" in methods:
        if dcpdd_corpus:
            from ingest.corpora import corpus_row

            corpus_row(lake, dcpdd_corpus)  # an unknown corpus is one line before transformers loads
        from transformers import AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(model)
        except (OSError, ValueError) as e:
            raise UserError(f"cannot load the tokenizer of {model!r} ({str(e).splitlines()[0]}); pass a local folder "
                            "written by save_pretrained") from None
        if dcpdd_corpus:
            freq, freq_source = corpus_frequencies(lake, dcpdd_corpus, len(tok)), f"corpus:{dcpdd_corpus}"
        else:
            from ingest.score.run import reference_items

            freq = reference_frequencies_of(tok, reference_items(lake))
    fill: tuple[str, ...] = ()
    digest = ""
    if "neighbor" in methods and neighbor_model:
        from ingest.score.neighbors import MaskedLMFiller

        MaskedLMFiller(neighbor_model)  # a folder that is not a masked LM is one line before any scoring
        digest = folder_digest(neighbor_model)
    elif "neighbor" in methods:
        from ingest.score.run import reference_items

        fill = tuple(M.fill_words([t for _, _, t in sorted(reference_items(lake))]))
    return MethodJob(model, methods, batch_size, device, dtype, freq, freq_source, prefix, prefix_source,
                     fill=fill, neighbor_model=neighbor_model, neighbor_model_digest=digest)


def folder_digest(folder: str) -> str:
    """A cheap fingerprint of a model folder (every file's relative name, size and modification time)."""
    from pathlib import Path

    root = Path(folder)
    parts = [f"{p.relative_to(root)}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in sorted(root.rglob("*"))
             if p.is_file()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def reference_frequencies_of(tokenizer, items: Sequence[tuple[str, str, str]]) -> np.ndarray:
    """The authors' frequency pool: every reference document (their run capped it at --max_ref_texts 2000
    sampled at random; lmaudit uses all of them)."""
    return M.reference_frequencies(tokenizer, [t for _, _, t in sorted(items)], MAX_TOKENS)
