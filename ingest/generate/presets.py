"""Named sampling recipes for `lmaudit generate --preset`.

- `propme`: PropMe's settings and sampling (all five settings; 10 samples per prompt, temperature 0.7, top-p
  0.95, 256 new tokens), the command's defaults.
- `neutral`: the mixture estimate's recommended sampling on this project's sandbox: unconditional samples at
  temperature 1.0, top-p 1.0 (below 1.0 the model over-produces its most likely kind of document;
  BENCHMARKS.md, mixture sandbox), 300 samples.
- `llmsurgeon`: LLMSurgeon's sampling as their code runs it (Yaxin9Luo/LLMSurgeon,
  baseline_method/src/labelshift/generate.py and run_labelshift.py; the flags of every exp_scripts/ run):
  their NEUTRAL_PROMPTS repeated 10 times and cut to the first 300 (setting `llmsurgeon_neutral`: 300 prompt
  rows, one generation each, so 12 prompts are sampled 9 times and 24 eight times), temperature 0.8, top-p
  0.9, 512 new tokens. `--style` swaps in another of their prompt lists (Table 5).
- `neutral-prefixes`: lmaudit's own 36 neutral prefixes (setting `neutral`) with the same sampling, 9
  samples each (324): what `llmsurgeon` was before the authors' list was carried over.

The mixture presets mark their runs `purpose = mixture`, which keeps them out of the PropMe marts.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest.errors import UserError


@dataclass(frozen=True)
class Preset:
    settings: tuple[str, ...]
    temperature: float
    top_p: float
    max_new_tokens: int
    n_samples: int
    n_generations: int
    purpose: str


PRESETS = {
    "propme": Preset(("unconditional", "minimal_cue", "generic", "specific", "prefix"), 0.7, 0.95, 256, 10, 10_000,
                     "propme"),
    "neutral": Preset(("unconditional",), 1.0, 1.0, 256, 1, 300, "mixture"),
    "llmsurgeon": Preset(("llmsurgeon_neutral",), 0.8, 0.9, 512, 1, 300, "mixture"),
    "neutral-prefixes": Preset(("neutral",), 0.8, 0.9, 512, 9, 300, "mixture"),
}
STYLED = "llmsurgeon"  # the preset whose prompt list `--style` chooses


def get_preset(name: str, style: str | None = None) -> Preset:
    """The preset; with `style`, the `llmsurgeon` preset on the authors' prompt list of that style."""
    from dataclasses import replace

    from ingest.prompts.settings import LLMSURGEON_STYLES

    if name not in PRESETS:
        raise UserError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    if style is None:
        return PRESETS[name]
    if name != STYLED:
        raise UserError(f"--style is for --preset {STYLED}, not {name!r}")
    if style not in LLMSURGEON_STYLES:
        raise UserError(f"unknown style {style!r}; choose one of {', '.join(LLMSURGEON_STYLES)}")
    return replace(PRESETS[name], settings=(f"llmsurgeon_{style}",))
