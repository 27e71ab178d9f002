"""Sandbox sizes: every knob of a sandbox build, one frozen record per size.

A size fixes the corpus byte budgets per domain, the tokenizer, the model shape and a *step* budget for
training (never a time budget: the same size and seed give the same files on every machine of a platform, since
the corpus is drawn from the pinned wheels only: docs/sandbox.md).

* ``tiny``    - tests. ~0.33 MB of real text + 200 canary copies (0.51 MB), vocab 4096, 2 layers x 128,
  context 128, 420 steps on 1 thread: ~60 s of training, ~70 s for the whole sandbox; the model reproduces
  the whole canary verbatim (5 of 5 seeds on the machine-file corpus; seed 0 on the pinned one, where 19 of 20
  unconditional samples of the demo hold a span of >= 50 tokens, R50 0.95).
* ``small``   - ~2 MB, vocab 8192, 3 layers x 192, context 256, 400 steps: ~3.5 minutes on 2 cores.
* ``default`` - demo. ~0.7 MB + 150 canary copies, vocab 4096, 2 layers x 128, context 256, 800 steps on
  1 thread: 7.5 epochs in ~3.5 minutes on an idle core (8.0k tokens/s; 2.2 minutes with 2 threads), final loss
  2.76 (3.15 and ~8 minutes on 2026-12-02: busier cores, other installed files; both measured on the corpus read
  from the machine's files, before it was pinned, and not re-measured since). Memorization needs repeats: the earlier
  4.2 MB / 4 x 256 / 480-step default (0.8 epochs, final loss 4.97) reproduced nothing longer than 3-4 tokens
  on average in any setting. This one reproduces its canary (up to the full 113 tokens; >= 50 tokens in 29-62 %
  of unconditional samples and ~2 % of minimal-cue ones, depending on the machine's files); real license text
  stays below ~16 tokens at this size.

Timings were measured on a 2-core AVX2 machine (AMD EPYC, no native bf16); a machine with AVX-512/AMX runs
the same steps 2-3x faster. Steps, not seconds, are the budget: retune ``steps`` for another target time.

Use :func:`get_size` to look a size up by name, and ``dataclasses.replace`` (or :meth:`SandboxSize.replace`)
to derive a variant.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

# Stage -> the fields that stage depends on (used by the build cache: change a field and only the stages
# that list it, and the stages downstream of them, are rebuilt).
CORPUS_FIELDS = (
    "code_bytes",
    "boilerplate_bytes",
    "documentation_bytes",
    "headers_bytes",
    "max_file_bytes",
    "canary_copies",
    "canary_bytes",
    "chunk_bytes",
    "seed",
)
TOKENIZER_FIELDS = ("vocab_size", "min_frequency")
MODEL_FIELDS = (
    "n_layer",
    "n_embd",
    "n_head",
    "context",
    "steps",
    "batch_size",
    "lr",
    "min_lr_ratio",
    "warmup_steps",
    "weight_decay",
    "bf16",
    "threads",
    "seed",
)


@dataclass(frozen=True)
class SandboxSize:
    """All knobs of one sandbox size. Byte budgets are UTF-8 bytes of document text."""

    name: str
    # --- corpus: byte budget per domain (0 disables a domain) -------------------------------------
    code_bytes: int
    boilerplate_bytes: int
    documentation_bytes: int
    headers_bytes: int
    max_file_bytes: int  # files larger than this are skipped (keeps one file from eating a budget)
    canary_copies: int  # how many identical canary documents are planted
    canary_bytes: int = 950  # target length of the canary paragraph
    # split every real-text document into pieces of at most this many bytes at line boundaries (0 = whole
    # files). Unconditional samples imitate *document starts*, so a model's generations follow the share of
    # documents per domain; with equal-sized pieces that share equals the byte and token shares, which is
    # what a documented training mixture states (used by the mixture sandboxes of `--mixture`).
    chunk_bytes: int = 0
    # --- tokenizer --------------------------------------------------------------------------------
    vocab_size: int = 8192
    min_frequency: int = 2
    # --- model (GPT-2) ----------------------------------------------------------------------------
    n_layer: int = 4
    n_embd: int = 256
    n_head: int = 4
    context: int = 256
    # --- training (step budget, not time budget) --------------------------------------------------
    steps: int = 1000
    batch_size: int = 8
    lr: float = 1e-3
    min_lr_ratio: float = 0.1  # cosine decays to lr * min_lr_ratio
    warmup_steps: int = 50
    weight_decay: float = 0.0
    # bf16 autocast: None = auto (on only where the CPU has native bf16: AVX512_BF16/AMX, where it is
    # ~1.5x faster); on AVX2-only CPUs emulated bf16 is ~10x slower than fp32.
    bf16: bool | None = None
    # torch threads: 0 = all available cores. Bitwise-identical weights need the same thread count (CPU
    # kernels split reductions by thread); 1 thread is identical on every machine and degrades least
    # when other work shares the cores (2 OpenMP threads on 2 busy cores run ~3x slower than 1).
    threads: int = 0
    seed: int = 0
    # keep the model every N steps as its own folder (0 = none; ingest.checkpoints). Not a MODEL_FIELD: the
    # final weights do not depend on it; the model's cache key names it only when it is set.
    checkpoint_every: int = 0

    def __post_init__(self) -> None:
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd={self.n_embd} is not divisible by n_head={self.n_head}")
        if self.vocab_size > 65535:
            raise ValueError("vocab_size must fit in uint16")
        if self.steps < 1 or self.batch_size < 1 or self.context < 8:
            raise ValueError("steps, batch_size and context must be positive (context >= 8)")

    @property
    def domain_budgets(self) -> dict[str, int]:
        """Byte budget per real-text domain (the canary is planted on top of these)."""
        return {
            "code": self.code_bytes,
            "boilerplate": self.boilerplate_bytes,
            "documentation": self.documentation_bytes,
            "headers": self.headers_bytes,
        }

    @property
    def tokens_per_step(self) -> int:
        return self.batch_size * self.context

    def with_mixture(self, weights: dict[str, float], canary_copies: int | None = None) -> "SandboxSize":
        """This size with its real-text byte budget redistributed over the domains by `weights`.

        The total budget stays the same; weights are normalized; domains not named get 0 bytes. Names must
        be real-text domains (the canary is planted on top: set `canary_copies`, e.g. 0 for a clean mixture).
        """
        from ingest.errors import UserError

        unknown = sorted(set(weights) - set(self.domain_budgets))
        if unknown:
            raise UserError(f"unknown sandbox domain(s) {', '.join(unknown)}: choose from "
                            f"{', '.join(self.domain_budgets)}")
        if any(not (w >= 0) for w in weights.values()) or sum(weights.values()) <= 0:
            raise UserError("mixture weights must be non-negative numbers with a positive sum")
        total = sum(self.domain_budgets.values())
        z = sum(weights.values())
        budgets = {d: int(round(total * weights.get(d, 0.0) / z)) for d in self.domain_budgets}
        changes: dict[str, Any] = {f"{d}_bytes": b for d, b in budgets.items()}
        if canary_copies is not None:
            changes["canary_copies"] = canary_copies
        return self.replace(**changes)

    def replace(self, **changes: Any) -> "SandboxSize":
        return dataclasses.replace(self, **changes)

    def params(self, fields: tuple[str, ...] | None = None) -> dict[str, Any]:
        """The knobs as a plain dict (all of them, or only `fields`)."""
        d = dataclasses.asdict(self)
        return d if fields is None else {f: d[f] for f in fields}


SIZES: dict[str, SandboxSize] = {
    "tiny": SandboxSize(
        name="tiny",
        code_bytes=130_000,
        boilerplate_bytes=80_000,
        documentation_bytes=80_000,
        headers_bytes=40_000,
        max_file_bytes=40_000,
        canary_copies=200,  # ~113 tokens each, 14% of the tokens; 250 steps memorized it in 3 of 5 seeds
        vocab_size=4096,
        n_layer=2,
        n_embd=128,
        n_head=4,
        context=128,
        steps=420,  # 3.8 epochs; the whole canary came back verbatim for 5 of 5 seeds
        batch_size=8,
        lr=2e-3,
        warmup_steps=30,
        threads=1,  # same bits on every machine; ~60 s of training, and no 10x slowdown on busy cores
    ),
    "small": SandboxSize(
        name="small",
        code_bytes=800_000,
        boilerplate_bytes=500_000,
        documentation_bytes=400_000,
        headers_bytes=300_000,
        max_file_bytes=100_000,
        canary_copies=200,
        vocab_size=8192,
        n_layer=3,
        n_embd=192,
        n_head=3,
        context=256,
        steps=400,  # ~0.83 s/step on 1 AVX2 core, ~0.5 s on 2: ~3.5 minutes
        batch_size=8,
        lr=2e-3,
        warmup_steps=30,
    ),
    "default": SandboxSize(
        name="default",
        code_bytes=280_000,
        boilerplate_bytes=220_000,
        documentation_bytes=140_000,
        headers_bytes=60_000,
        max_file_bytes=60_000,
        canary_copies=150,
        vocab_size=4096,
        n_layer=2,
        n_embd=128,
        n_head=4,
        context=256,
        steps=800,  # ~7.5 epochs of a 0.7 MB corpus (~8 min): the canary is memorized, licenses are not yet
        batch_size=8,
        lr=2e-3,
        warmup_steps=40,
        threads=1,
    ),
}


# Named mixtures for `lmaudit sandbox build --mixture NAME` (or pass "code=0.6,documentation=0.4").
MIXTURES: dict[str, dict[str, float]] = {
    "balanced": {"code": 0.25, "boilerplate": 0.25, "documentation": 0.25, "headers": 0.25},
    "code-heavy": {"code": 0.70, "boilerplate": 0.10, "documentation": 0.10, "headers": 0.10},
    "docs-heavy": {"code": 0.10, "boilerplate": 0.10, "documentation": 0.70, "headers": 0.10},
}
MIXTURE_CHUNK_BYTES = 600  # pieces of ~170 tokens: a tiny model's context, so a sample is one piece


def parse_mixture(spec: str) -> tuple[str, dict[str, float]]:
    """A preset name or ``domain=weight,...`` -> (label, weights). The label names the sandbox directory."""
    from ingest.errors import UserError

    spec = spec.strip()
    if spec in MIXTURES:
        return spec, dict(MIXTURES[spec])
    weights: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, sep, value = part.partition("=")
        try:
            if not sep:
                raise ValueError
            weights[name.strip()] = float(value)
        except ValueError:
            raise UserError(f"bad mixture {spec!r}: use a preset ({', '.join(MIXTURES)}) or "
                            "domain=weight pairs such as code=0.6,documentation=0.4") from None
    if not weights:
        raise UserError(f"empty mixture {spec!r}")
    label = "mix-" + "-".join(f"{d}{round(100 * w / sum(weights.values()))}" for d, w in sorted(weights.items()))
    return label, weights


def mixture_size(size: "str | SandboxSize", spec: str, canary_copies: int = 0) -> SandboxSize:
    """`size` with its budget spread by the mixture `spec`, documents cut into equal pieces, no canary by
    default (a clean known mixture over the real-text domains)."""
    label, weights = parse_mixture(spec)
    base = get_size(size)
    return base.with_mixture(weights, canary_copies).replace(name=f"{base.name}-{label}",
                                                             chunk_bytes=MIXTURE_CHUNK_BYTES)


def get_size(size: "str | SandboxSize") -> SandboxSize:
    """Look a size up by name (``tiny``, ``small``, ``default``); a `SandboxSize` is returned as is."""
    if isinstance(size, SandboxSize):
        return size
    try:
        return SIZES[size]
    except KeyError:
        from ingest.errors import UserError

        raise UserError(f"unknown sandbox size {size!r}: choose one of {', '.join(SIZES)}") from None


def sandbox_size(size: str, mixture: str | None = None, canary_copies: int | None = None,
                 steps: int | None = None, checkpoint_every: int = 0) -> SandboxSize:
    """The size that `lmaudit sandbox build` options describe: a named size, optionally re-mixed (see
    :func:`mixture_size`), with another canary count or step budget. A changed knob changes the name, so the
    variant gets its own folder and corpus name."""
    from ingest.errors import UserError

    if mixture:
        out = mixture_size(size, mixture, 0 if canary_copies is None else canary_copies)
    else:
        out = get_size(size)
        if canary_copies is not None and canary_copies != out.canary_copies:
            out = out.replace(canary_copies=canary_copies, name=f"{out.name}-canary{canary_copies}")
    if steps is not None and steps != out.steps:
        if steps < 1:
            raise UserError(f"--steps must be positive, got {steps}")
        out = out.replace(steps=steps, name=f"{out.name}-{steps}steps")
    if checkpoint_every < 0:
        raise UserError(f"--checkpoint-every must be 0 (none) or positive, got {checkpoint_every}")
    # same name: checkpoints add folders beside the same final model
    return out.replace(checkpoint_every=checkpoint_every) if checkpoint_every else out
