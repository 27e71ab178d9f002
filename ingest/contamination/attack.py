"""The prefix attack: greedy decoding from a benchmark item's input, and whether the answer comes out.

Greedy (temperature 0) so the result is one deterministic answer per model. The model may write up to the
answer's length in its own tokens plus `SLACK_TOKENS` (a leading space or newline the harness would have
put between input and answer). An input longer than the model's context leaves room for that budget by
keeping its last tokens (`prompt_tokens` records how many were given). Reproduced means: the continuation, with runs of whitespace made one space
and the ends stripped, starts with the answer treated the same way. `answer_prefix_share` is the share of
the normalised answer's characters that the normalised continuation reproduces from its start.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ingest.contamination.items import BenchItem
from ingest.errors import UserError

SLACK_TOKENS = 4


@dataclass(frozen=True)
class Attack:
    item_id: str
    continuation: str
    n_tokens: int
    max_new_tokens: int
    prompt_tokens: int
    answer_prefix_share: float
    reproduced: bool


def item_hash(input_text: str, answer_text: str) -> str:
    """The texts an attack was made on; the marts compute the same md5 in SQL and count an attack only while the
    benchmark's item still has these texts."""
    return hashlib.md5(f"{input_text}\x1f{answer_text}".encode()).hexdigest()


def squeeze(text: str) -> str:
    return " ".join(text.split())


def prefix_share(continuation: str, answer: str) -> float:
    """Share of the normalised answer's characters matched from the start of the normalised continuation."""
    c, a = squeeze(continuation), squeeze(answer)
    n = 0
    for x, y in zip(c, a):
        if x != y:
            break
        n += 1
    return n / len(a) if a else 0.0


def context_length(backend) -> int | None:
    """The model's context in tokens when the backend exposes a transformers config, else None."""
    cfg = getattr(getattr(backend, "model", None), "config", None)
    return getattr(cfg, "n_positions", None) or getattr(cfg, "max_position_embeddings", None)


def prefix_attack(backend, items: Sequence[BenchItem], batch: int = 16, progress: bool = True,
                  done: Mapping[str, Attack] | None = None) -> list[Attack]:
    """One greedy continuation per item from `backend` (ingest.generate.backends).

    `done`: attacks this model made before on these items' texts, filed under another spelling of it (taken
    over by `run_contamination`). One is returned as it was, not made again, when it had the token budget and
    prompt length this attack has, and once the first such attack, made again, came out the same (the model
    behind the folder still writes what it wrote; greedy decoding is deterministic). If that one differs,
    nothing is reused."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from ingest.progress import progress_bar

    from ingest.generate.backends import GenRequest, SamplingConfig

    out: list[Attack] = []
    ctx = context_length(backend)
    done, checked = dict(done or {}), False
    with progress_bar(TextColumn("[bold]prefix attack"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      enabled=progress) as bar:
        task = bar.add_task("", total=len(items))
        for it in items:  # one request at a time: each item has its own answer length
            max_new = len(backend.encode(it.answer)) + SLACK_TOKENS
            ids = backend.encode(it.input)
            if ctx is not None:
                room = ctx - max_new - 1  # the start token goes first, as `generate` starts prompts
                if room < 1:
                    raise UserError(f"item {it.item_id!r}: its answer needs {max_new} new tokens, more than the "
                                    f"model's context of {ctx}; drop the item or use a longer-context model")
                ids = ids[-room:]
            old = done.get(it.item_id)
            same = old is not None and (old.max_new_tokens, old.prompt_tokens) == (max_new, len(ids))
            if same and checked:
                out.append(old)
                bar.update(task, advance=1)
                continue
            req = GenRequest(it.item_id, (backend.bos_id, *ids), 0)
            g = backend.generate([req], SamplingConfig(temperature=0, top_p=1.0, max_new_tokens=max_new))[0]
            share = prefix_share(g.text, it.answer)
            out.append(Attack(it.item_id, g.text, len(g.token_ids), max_new, len(ids), share, share == 1.0))
            if same:  # the first comparable attack, made again: the rest are reused only if it came out the same
                checked = (old.continuation, old.n_tokens) == (g.text, len(g.token_ids))
                done = done if checked else {}
            bar.update(task, advance=1)
    return out
