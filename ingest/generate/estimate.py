"""The planned work of a `lmaudit generate` command and a rough duration, said before it starts.

The README's five-setting command is 23,000 samples of up to 256 tokens: about 2 h 15 min on 2 CPU cores
with the sandbox's model, hours to days with a real one. Nothing said so until it was running. Here the
plan (samples per setting, the token bound) is known from the prompt units, and the rate is measured on
one small batch of the first prompt with the backend already loaded (`measure_rate`): a few seconds, and
no sample of the run depends on it (every sample draws from its own seeded generator). The estimate takes
every sample at `max_new_tokens`, so samples that stop early make the run shorter; on vLLM, whose batches
are far larger than the probe's, it is an upper bound too.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from ingest.generate.backends import Backend, GenRequest, SamplingConfig
from ingest.generate.runner import PromptUnit

PROBE_SAMPLES = 8
PROBE_TOKENS = 16


@dataclass(frozen=True)
class SettingWork:
    setting: str
    n_prompts: int
    n_generations: int


@dataclass(frozen=True)
class Rate:
    """Generated tokens per second on a probe batch (or None, with the reason, when not measured)."""

    tokens_per_second: float | None
    how: str


@dataclass(frozen=True)
class Plan:
    work: tuple[SettingWork, ...]
    max_new_tokens: int
    rate: Rate

    @property
    def n_generations(self) -> int:
        return sum(w.n_generations for w in self.work)

    @property
    def max_tokens(self) -> int:
        return self.n_generations * self.max_new_tokens

    @property
    def seconds(self) -> float | None:
        r = self.rate.tokens_per_second
        return self.max_tokens / r if r else None


def plan(units_by_setting: dict[str, Sequence[PromptUnit]], max_new_tokens: int, rate: Rate) -> Plan:
    work = tuple(SettingWork(s, len(u), sum(x.n_samples for x in u)) for s, u in units_by_setting.items())
    return Plan(work, max_new_tokens, rate)


def measure_rate(backend: Backend, unit: PromptUnit, sampling: SamplingConfig, batch: int = PROBE_SAMPLES,
                 tokens: int = PROBE_TOKENS) -> Rate:
    """Tokens per second of one batch of `batch` samples of `unit`'s prompt, `tokens` new tokens each."""
    probe = SamplingConfig(sampling.temperature, sampling.top_p, max(1, min(tokens, sampling.max_new_tokens)))
    reqs = [GenRequest(f"rate-probe-{i}", unit.token_ids, 10_000_019 + i) for i in range(max(1, batch))]
    t0 = time.perf_counter()
    outs = backend.generate(reqs, probe)
    dt = time.perf_counter() - t0
    n = sum(len(o.token_ids) for o in outs)
    if n == 0 or dt <= 0:
        return Rate(None, "not measured: the probe's samples ended at once")
    return Rate(n / dt, f"measured on {len(reqs)} samples x {probe.max_new_tokens} tokens")


def duration(seconds: float) -> str:
    """3 h 05 min, 12 min, 40 s."""
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600} h {(s % 3600) // 60:02d} min"
    if s >= 60:
        return f"{round(s / 60)} min"
    return f"{s} s"


def describe(p: Plan) -> list[str]:
    """The plan as lines for the user: the work, then the estimate (or why there is none)."""
    per = ", ".join(f"{w.setting} {w.n_generations:,}" + (f" ({w.n_prompts:,} prompts)" if w.n_prompts > 1 else "")
                    for w in p.work)
    lines = [f"plan: {p.n_generations:,} generations of at most {p.max_new_tokens} new tokens "
             f"({p.max_tokens:,} tokens at most): {per}; chunks already generated are skipped"]
    if p.seconds is None:
        lines.append(f"estimate: none before the start ({p.rate.how}); progress lines give the rate and the time "
                     "left")
    else:
        lines.append(f"estimate: at most ~{duration(p.seconds)} at {p.rate.tokens_per_second:,.0f} tokens/s "
                     f"({p.rate.how}; every sample taken at {p.max_new_tokens} tokens, shorter ones finish sooner)")
    return lines
