"""Train a tiny GPT-2 from scratch on the sandbox corpus (CPU, deterministic under a seed).

Training stream: every document is tokenized on its own and prefixed by ``<|endoftext|>`` (id 0); the
stream ends with one more ``<|endoftext|>``::

    EOS doc_1 EOS doc_2 ... EOS doc_n EOS

so "unconditional" generation that starts from EOS matches what the model saw at every document start.
Each step draws `batch_size` random contiguous windows of ``context + 1`` tokens (a seeded
`torch.Generator`), predicts tokens 1..context from 0..context-1; AdamW (betas 0.9/0.95, weight decay on
matrices only), linear warmup then cosine decay to ``lr * min_lr_ratio``, gradient clipping at 1.0, no
dropout, optional bf16 autocast. The budget is a number of *steps*, so the same inputs give the same
weights (on the same machine and thread count; CPU kernels reduce in a thread-dependent order).

The output folder loads like a hub model: ``AutoModelForCausalLM.from_pretrained(folder)`` and
``AutoTokenizer.from_pretrained(folder)`` (weights in safetensors, the tokenizer files copied beside them,
bos = eos = pad = 0 in both the config and the generation config). ``train_log.json`` records the run.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ingest.sandbox.corpus import read_corpus
from ingest.sandbox.sizes import MODEL_FIELDS, SandboxSize, get_size
from ingest.sandbox.tokenizer import EOS_ID, load_tokenizer

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


@dataclass(frozen=True)
class TrainSummary:
    out_dir: Path
    steps: int
    final_loss: float
    tokens_per_s: float
    seconds: float
    n_params: int
    stream_tokens: int
    epochs: float
    threads: int


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def copy_tokenizer(tokenizer_dir: Path, out_dir: Path, model_max_length: int) -> None:
    """Copy the tokenizer files next to the model, with ``model_max_length`` = the model's context."""
    for name in TOKENIZER_FILES:
        src = tokenizer_dir / name
        if src.exists():
            shutil.copyfile(src, out_dir / name)
    cfg_path = out_dir / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg["model_max_length"] = model_max_length
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def cpu_has_bf16() -> bool:
    """True when the CPU has native bf16 matmul (AVX512_BF16 or AMX). Without it (e.g. AVX2-only
    machines) bf16 autocast is emulated and ~10x *slower* than fp32."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = f.read()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def use_bf16(size: SandboxSize) -> bool:
    """Resolve `size.bf16` (None = auto: only where the CPU has native bf16)."""
    return cpu_has_bf16() if size.bf16 is None else bool(size.bf16)


def token_stream(corpus_jsonl: Path, tokenizer) -> "torch.Tensor":  # noqa: F821
    """The training stream ``EOS doc_1 EOS doc_2 ... EOS doc_n EOS`` as a 1-D int64 tensor."""
    import numpy as np
    import torch

    texts = [d.text for d in read_corpus(Path(corpus_jsonl))]
    encs = tokenizer.encode_batch(texts, add_special_tokens=False)
    total = sum(len(e.ids) for e in encs) + len(encs) + 1
    arr = np.empty(total, dtype=np.int64)
    pos = 0
    for e in encs:
        arr[pos] = EOS_ID
        ids = e.ids
        arr[pos + 1 : pos + 1 + len(ids)] = ids
        pos += 1 + len(ids)
    arr[pos] = EOS_ID
    return torch.from_numpy(arr)


def lr_factor(step: int, size: SandboxSize) -> float:
    """Multiplier of `size.lr` at optimizer step `step` (0-based): linear warmup, then cosine."""
    if size.warmup_steps > 0 and step < size.warmup_steps:
        return (step + 1) / size.warmup_steps
    span = max(1, size.steps - size.warmup_steps)
    progress = min(1.0, (step - size.warmup_steps) / span)
    return size.min_lr_ratio + (1 - size.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def make_model(size: SandboxSize, vocab_size: int):
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=vocab_size,
        n_positions=size.context,
        n_embd=size.n_embd,
        n_layer=size.n_layer,
        n_head=size.n_head,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=EOS_ID,
        eos_token_id=EOS_ID,
        pad_token_id=EOS_ID,
    )
    model = GPT2LMHeadModel(config)
    model.generation_config.bos_token_id = EOS_ID
    model.generation_config.eos_token_id = EOS_ID
    model.generation_config.pad_token_id = EOS_ID
    return model


def _progress(enabled: bool):
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from ingest.progress import progress_bar

    return progress_bar(
        TextColumn("[bold]train[/bold]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]:.3f}"),
        TextColumn("{task.fields[tps]:,.0f} tok/s"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        enabled=enabled,
        transient=False,
    )


def train_model(
    corpus_jsonl: Path,
    tokenizer_dir: Path,
    size: SandboxSize | str,
    out_dir: Path,
    *,
    progress: bool = True,
    threads: int | None = None,
    checkpoint_every: int = 0,
) -> TrainSummary:
    """Train a GPT-2 of `size` on `corpus_jsonl` and save model + tokenizer + train_log.json into `out_dir`.

    `checkpoint_every` > 0 also saves the model every that many steps as its own model folder
    ``out_dir/checkpoints/step-NNNNNN/`` (ingest.checkpoints; the final model is stamped with step = steps).
    Saving reads the weights only, so the final model is the same with or without checkpoints."""
    import torch
    import torch.nn.functional as F
    import transformers

    size = get_size(size)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = load_tokenizer(Path(tokenizer_dir))
    stream = token_stream(Path(corpus_jsonl), tokenizer)
    n = stream.numel()
    ctx, batch = size.context, size.batch_size
    if n < ctx + 2:
        raise ValueError(f"corpus too small: {n} tokens for context {ctx}")

    old_threads = torch.get_num_threads()
    n_threads = min(threads or size.threads or available_cores(), available_cores())
    torch.set_num_threads(n_threads)
    try:
        with torch.random.fork_rng(devices=[]):  # seed the init without touching the caller's RNG
            torch.manual_seed(size.seed)
            model = make_model(size, tokenizer.get_vocab_size())
        model.train()
        decay = [p for p in model.parameters() if p.dim() >= 2]
        no_decay = [p for p in model.parameters() if p.dim() < 2]
        opt = torch.optim.AdamW(
            [{"params": decay, "weight_decay": size.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=size.lr,
            betas=(0.9, 0.95),
            eps=1e-8,
        )
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, size))
        gen = torch.Generator().manual_seed(size.seed)
        offsets = torch.arange(ctx + 1)
        ones = torch.ones(batch, ctx, dtype=torch.long)  # EOS == PAD: say there is no padding
        bf16 = use_bf16(size)
        losses: list[float] = []
        t0, c0 = time.perf_counter(), time.process_time()
        with _progress(progress) as bar:
            task = bar.add_task("train", total=size.steps, loss=float("nan"), tps=0.0)
            for step in range(size.steps):
                starts = torch.randint(0, n - ctx, (batch,), generator=gen)
                win = stream[starts[:, None] + offsets]
                x, y = win[:, :-1], win[:, 1:]
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                    logits = model(input_ids=x, attention_mask=ones).logits
                loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), y.reshape(-1))
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
                opt.zero_grad(set_to_none=True)
                lv = loss.item()
                losses.append(lv)
                if checkpoint_every > 0 and (step + 1) % checkpoint_every == 0 and step + 1 < size.steps:
                    _save_checkpoint(model, Path(tokenizer_dir), out_dir, step + 1, size.steps, ctx)
                elapsed = time.perf_counter() - t0
                bar.update(task, advance=1, loss=lv, tps=(step + 1) * batch * ctx / max(elapsed, 1e-9))
        seconds = time.perf_counter() - t0
        cpu_seconds = time.process_time() - c0
    finally:
        torch.set_num_threads(old_threads)

    model.eval()
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    if not progress:
        hf_logging.disable_progress_bar()  # "Writing model shards" tqdm bar
    try:
        model.save_pretrained(str(out_dir))
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    copy_tokenizer(Path(tokenizer_dir), out_dir, model_max_length=ctx)
    if checkpoint_every > 0:
        from ingest.checkpoints import write_stamp

        write_stamp(out_dir, size.steps, size.steps)

    tail = losses[-min(20, len(losses)) :]
    final_loss = sum(tail) / len(tail)
    tokens = size.steps * batch * ctx
    n_params = sum(p.numel() for p in model.parameters())
    log = {
        "size": size.name,
        "params": size.params(MODEL_FIELDS),
        "n_params": n_params,
        "vocab_size": tokenizer.get_vocab_size(),
        "stream_tokens": n,
        "steps": size.steps,
        "tokens_seen": tokens,
        "epochs": tokens / n,
        "final_loss": final_loss,
        "loss_curve": [[i + 1, losses[i]] for i in range(0, len(losses), 10)] + [[len(losses), losses[-1]]],
        "threads": n_threads,
        "checkpoint_every": checkpoint_every,
        "bf16_autocast": bf16,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        # the only fields that differ between two identical runs:
        "seconds": round(seconds, 3),
        # CPU time of this process: ~ threads * seconds on an idle machine, much less when others share the
        # cores (then seconds / steps overstates the idle time per step)
        "cpu_seconds": round(cpu_seconds, 3),
        "tokens_per_s": round(tokens / seconds, 1),
    }
    (out_dir / "train_log.json").write_text(json.dumps(log, indent=2) + "\n", encoding="utf-8")
    return TrainSummary(
        out_dir=out_dir,
        steps=size.steps,
        final_loss=final_loss,
        tokens_per_s=tokens / seconds,
        seconds=seconds,
        n_params=n_params,
        stream_tokens=n,
        epochs=tokens / n,
        threads=n_threads,
    )


def _save_checkpoint(model, tokenizer_dir: Path, out_dir: Path, step: int, steps: int, ctx: int) -> None:
    """The weights after `step` steps as a loadable model folder with the tokenizer and checkpoint.json."""
    from transformers.utils import logging as hf_logging

    from ingest.checkpoints import checkpoint_dir, write_stamp

    folder = checkpoint_dir(out_dir, step)
    folder.mkdir(parents=True, exist_ok=True)
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model.save_pretrained(str(folder))
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    copy_tokenizer(tokenizer_dir, folder, model_max_length=ctx)
    write_stamp(folder, step, steps)


def canary_reproduction(model_dir: Path, canary_text: str, prompt_tokens: int = 20, new_tokens: int = 50) -> int:
    """How many tokens of the canary a model at `model_dir` reproduces verbatim (greedy decoding).

    The prompt is ``EOS`` + the canary's first `prompt_tokens` tokens (exactly what training saw at a
    canary document's start); the return value is the length of the longest prefix of the generated
    `new_tokens` that equals the canary's next tokens.
    """
    import torch
    from transformers import AutoModelForCausalLM

    tokenizer = load_tokenizer(Path(model_dir))
    ids = tokenizer.encode(canary_text, add_special_tokens=False).ids
    if len(ids) < prompt_tokens + new_tokens:
        raise ValueError(f"canary has {len(ids)} tokens, fewer than {prompt_tokens} + {new_tokens}")
    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    model.eval()
    prompt = torch.tensor([[EOS_ID] + ids[:prompt_tokens]])
    with torch.no_grad():
        out = model.generate(
            prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=new_tokens, do_sample=False
        )
    got = out[0, prompt.shape[1] :].tolist()
    want = ids[prompt_tokens : prompt_tokens + new_tokens]
    k = 0
    while k < min(len(got), len(want)) and got[k] == want[k]:
        k += 1
    return k
