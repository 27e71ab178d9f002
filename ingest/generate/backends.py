"""Generation backends behind one interface, with a registry.

Both backends take the same requests (prompt token ids + one seed per sample) and the same sampling
parameters, so a run is reproducible on either: transformers draws every sample from its own seeded
`torch.Generator`, vLLM gets a per-request `SamplingParams(seed=...)`. A backend returns only the
continuation.

Test hook: with LMAUDIT_LOAD_LOG set to a file path, every model or engine a backend builds (and every
tokenizer-only driver) appends one line `PID<TAB>KIND` to that file (KIND: hf, vllm, tokenizer). Worker processes
and Ray actors inherit the variable, so a test can count the models each process built
(tests/python/test_engine_count.py). Unset, nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ingest.errors import UserError
from ingest.registry import Registry


@dataclass(frozen=True)
class SamplingConfig:
    temperature: float = 0.7
    top_p: float = 0.95
    max_new_tokens: int = 256

    def __post_init__(self) -> None:
        if self.temperature < 0 or not 0 < self.top_p <= 1 or self.max_new_tokens < 1:
            raise UserError(f"invalid sampling parameters {self}; need temperature >= 0, 0 < top_p <= 1, "
                            "max_new_tokens >= 1")


@dataclass(frozen=True)
class GenRequest:
    key: str  # the caller's id for this sample (e.g. the generation_id)
    prompt_ids: tuple[int, ...]
    seed: int


@dataclass(frozen=True)
class GenOutput:
    key: str
    token_ids: tuple[int, ...]
    text: str
    finish_reason: str  # "stop" (end-of-text) or "length"


class Backend(Protocol):
    name: str

    def generate(self, requests: Sequence[GenRequest], sampling: SamplingConfig) -> list[GenOutput]: ...

    def encode(self, text: str) -> list[int]: ...

    @property
    def bos_id(self) -> int: ...


BACKENDS: Registry[Callable[..., Backend]] = Registry("backend", sort_names=True)
register = BACKENDS.register


def get_backend(name: str, model: str, **kwargs) -> Backend:
    return BACKENDS.get(name)(model, **kwargs)


def list_backends() -> list[str]:
    return BACKENDS.names()


DTYPES = ("auto", "float32", "bfloat16", "float16")


def resolve_device(device: str) -> str:
    """`auto` -> `cuda` when torch sees a GPU, else `cpu`; `cuda` (or `cuda:N`) without a GPU is a
    `UserError` (torch would fail later with a long CUDA trace, or a CPU-only wheel with an assert)."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        return "cpu"
    if device == "cuda" or (device.startswith("cuda:") and device[5:].isdigit()):
        if not torch.cuda.is_available():
            raise UserError(f"--device {device}: torch sees no GPU here (torch {torch.__version__}, CUDA build: "
                            f"{torch.version.cuda or 'no'}); use --device cpu or auto")
        n = torch.cuda.device_count()
        if ":" in device and int(device[5:]) >= n:
            raise UserError(f"--device {device}: this machine has {n} GPU(s), cuda:0..cuda:{n - 1}")
        return device
    raise UserError(f"--device must be auto, cpu, cuda or cuda:N, not {device!r}")


def resolve_dtype(dtype: str, device: str) -> str:
    """`auto` -> float32 on CPU (bit-for-bit the samples of earlier runs), bfloat16 on a GPU that has it,
    else float16. Half precision on CPU is refused: slower than float32 there and numerically different."""
    import torch

    if dtype not in DTYPES:
        raise UserError(f"--dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    if dtype == "auto":
        if device == "cpu":
            return "float32"
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    if device == "cpu" and dtype == "float16":
        raise UserError("--dtype float16 on CPU is slow and lossy in torch; use float32 (or bfloat16) on CPU")
    return dtype


def parse_engine_args(pairs: Sequence[str]) -> dict:
    """`KEY=VALUE` strings -> keyword arguments for `vllm.LLM` (`tensor_parallel_size=2`,
    `max_model_len=4096`, `gpu_memory_utilization=0.5`, `enforce_eager=true`, `dtype=bfloat16`); the typing
    rules are `ingest.options.parse_key_values`'s."""
    from ingest.options import parse_key_values

    return parse_key_values(pairs, "--engine-arg", "tensor_parallel_size=2")


def _load_tokenizer(model: str):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(model)
    except (OSError, ValueError) as e:
        raise UserError(f"cannot load the tokenizer of {model!r} ({str(e).splitlines()[0]}); pass a local model "
                        "folder (save_pretrained) or a hub name reachable from this machine") from None


LOAD_LOG_ENV = "LMAUDIT_LOAD_LOG"


def _note_load(kind: str) -> None:
    """Append `PID<TAB>KIND` to $LMAUDIT_LOAD_LOG (the test hook of the module docstring); one short O_APPEND write,
    so lines of concurrent processes never interleave."""
    import os

    path = os.environ.get(LOAD_LOG_ENV)
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{os.getpid()}\t{kind}\n".encode())
        finally:
            os.close(fd)


def _start_token(tok) -> int:
    for tid in (tok.bos_token_id, tok.eos_token_id):
        if tid is not None:
            return int(tid)
    raise UserError("the model's tokenizer has neither a BOS nor an EOS token; cannot build prompts")


class _TokenizedBackend:
    """What both backends share: the model's own tokenizer for prompts and the start token."""

    tok = None

    @property
    def bos_id(self) -> int:
        return _start_token(self.tok)

    def encode(self, text: str) -> list[int]:
        return list(self.tok.encode(text, add_special_tokens=False))


class TokenizerOnly(_TokenizedBackend):
    """The model's tokenizer without its weights: what a driver needs (prompt ids, the start token) when
    workers generate (`--workers`, `--executor ray`). Building a real backend there would load a second copy
    of the model on the head node, or a vLLM engine, for nothing."""

    def __init__(self, model: str):
        self.tok = _load_tokenizer(model)
        _note_load("tokenizer")

    def generate(self, requests, sampling):
        raise RuntimeError("a TokenizerOnly backend does not generate: workers do")


def driver_backend(name: str, model: str, in_process: bool, **kwargs) -> Backend:
    """The backend the driver holds: the real one when it generates itself, else the tokenizer only."""
    if in_process:
        return get_backend(name, model, **kwargs)
    BACKENDS.get(name)  # an unknown backend is refused here, not in every worker
    return TokenizerOnly(model)


@register("hf")
class HFBackend(_TokenizedBackend):
    """transformers on CPU or one GPU (`device` auto/cpu/cuda): a plain sampling loop with a KV cache and one generator per sample.

    `model.generate` cannot give each row of a batch its own random stream, so batching would change
    samples. Here each row draws from `torch.Generator().manual_seed(seed)`, so a sample depends only on
    its prompt and seed. Requests are batched only with prompts of the same length (no padding).
    """

    name = "hf"

    def __init__(self, model: str, batch_size: int = 32, dtype: str = "float32", device: str = "cpu",
                 threads: int | None = 1):
        import torch
        from transformers import AutoModelForCausalLM

        device = resolve_device(device)
        dtype = resolve_dtype(dtype, device)

        # One intra-op thread by default: for small models a decode step is a few milliseconds, and with
        # two threads on a busy 2-core machine OpenMP's spin-waiting made each step 5-30x slower.
        if threads:
            torch.set_num_threads(threads)
        self.tok = _load_tokenizer(model)
        try:
            self.model = AutoModelForCausalLM.from_pretrained(model, dtype=getattr(torch, dtype)).to(device).eval()
        except (OSError, ValueError) as e:
            raise UserError(f"cannot load model {model!r} ({str(e).splitlines()[0]}); pass a local folder "
                            "written by save_pretrained") from None
        _note_load("hf")
        self.device = device
        self.batch_size = batch_size
        # transformers 5.24 renamed the KV-cache argument and output `past_key_values` -> `cache`; the
        # [vllm] extra needs transformers < 5.20 (docs/footguns.md), so both spellings are in use
        import inspect

        params = inspect.signature(self.model.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self.eos_id = self.tok.eos_token_id

    def generate(self, requests: Sequence[GenRequest], sampling: SamplingConfig) -> list[GenOutput]:
        by_len: dict[int, list[GenRequest]] = {}
        for r in requests:
            by_len.setdefault(len(r.prompt_ids), []).append(r)
        out: dict[str, GenOutput] = {}
        for _, group in sorted(by_len.items()):
            for i in range(0, len(group), self.batch_size):
                for o in self._generate_batch(group[i:i + self.batch_size], sampling):
                    out[o.key] = o
        return [out[r.key] for r in requests]

    def _generate_batch(self, batch: Sequence[GenRequest], s: SamplingConfig) -> list[GenOutput]:
        import torch

        ctx = getattr(self.model.config, "n_positions", None) or getattr(self.model.config, "max_position_embeddings", None)
        plen = len(batch[0].prompt_ids)
        max_new = s.max_new_tokens if ctx is None else min(s.max_new_tokens, ctx - plen)
        if max_new < 1:
            raise UserError(f"prompt of {plen} tokens leaves no room in the model's context of {ctx} tokens")
        gens = [torch.Generator().manual_seed(int(r.seed)) for r in batch]
        ids = torch.tensor([list(r.prompt_ids) for r in batch], device=self.device)
        mask = torch.ones_like(ids)  # no padding: every row of a batch has the same prompt length
        done = [False] * len(batch)
        new: list[list[int]] = [[] for _ in batch]
        past = None
        with torch.inference_mode():
            for _ in range(max_new):
                res = self.model(input_ids=ids, attention_mask=mask, use_cache=True, **{self._cache_arg: past})
                past = getattr(res, self._cache_arg)
                logits = res.logits[:, -1, :].float()
                nxt = [self._sample(logits[b], gens[b], s) for b in range(len(batch))]
                for b, t in enumerate(nxt):
                    if done[b]:
                        continue
                    if t == self.eos_id:
                        done[b] = True
                    else:
                        new[b].append(t)
                if all(done):
                    break
                ids = torch.tensor([[t] for t in nxt], device=self.device)
                mask = torch.cat([mask, torch.ones_like(ids)], dim=1)
        return [GenOutput(r.key, tuple(toks), self.tok.decode(toks), "stop" if d else "length")
                for r, toks, d in zip(batch, new, done)]

    @staticmethod
    def _sample(logits, gen, s: SamplingConfig) -> int:
        import torch

        if s.temperature == 0:
            return int(torch.argmax(logits))
        probs = torch.softmax(logits / s.temperature, dim=-1)
        if s.top_p < 1.0:
            sp, si = torch.sort(probs, descending=True)
            cum = torch.cumsum(sp, dim=-1)
            keep = cum - sp < s.top_p  # smallest set whose mass reaches top_p (the top token always kept)
            sp = torch.where(keep, sp, torch.zeros_like(sp))
            return int(si[torch.multinomial(sp.cpu(), 1, generator=gen)])
        return int(torch.multinomial(probs.cpu(), 1, generator=gen))


@register("vllm")
class VLLMBackend(_TokenizedBackend):
    """vLLM (GPU machines, large models): one `SamplingParams(seed=...)` per request.

    With more than one GPU per engine (tensor or pipeline parallel) the engine's workers are started as local
    processes (`distributed_executor_backend="mp"`), chosen explicitly: inside a Ray actor vLLM's own default can be
    "ray", which reserves GPUs outside the actor's (ingest/generate/placement.py)."""

    name = "vllm"

    def __init__(self, model: str, **engine_kwargs):
        from ingest.generate.placement import engine_kwargs_for, in_ray_actor

        try:
            from vllm import LLM
        except ImportError:
            raise UserError("the vllm backend needs vLLM: pip install -e '.[vllm]' (on CPU use --backend hf)") from None
        self.tok = _load_tokenizer(model)
        engine_kwargs = engine_kwargs_for(engine_kwargs, in_ray_actor())
        self.engine_kwargs = engine_kwargs
        try:
            self.llm = LLM(model=model, tokenizer=model, **engine_kwargs)
        except TypeError as e:  # an unknown or mistyped --engine-arg
            raise UserError(f"vllm.LLM rejected the engine arguments {sorted(engine_kwargs)} ({e}); see "
                            "`vllm serve --help` for the names (tensor_parallel_size, max_model_len, ...)") from None
        _note_load("vllm")

    def generate(self, requests: Sequence[GenRequest], sampling: SamplingConfig) -> list[GenOutput]:
        from vllm import SamplingParams

        prompts = [{"prompt_token_ids": list(r.prompt_ids)} for r in requests]
        params = [SamplingParams(n=1, temperature=sampling.temperature, top_p=sampling.top_p,
                                 max_tokens=sampling.max_new_tokens, seed=int(r.seed)) for r in requests]
        results = self.llm.generate(prompts, params, use_tqdm=False)
        outs = []
        for r, res in zip(requests, results):
            c = res.outputs[0]
            toks = tuple(c.token_ids)
            if toks and toks[-1] == self.tok.eos_token_id:
                toks = toks[:-1]
            outs.append(GenOutput(r.key, toks, self.tok.decode(list(toks)),
                                  "stop" if c.finish_reason == "stop" else "length"))
        return outs
