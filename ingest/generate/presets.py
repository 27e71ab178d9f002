"""Named sampling recipes for `lmaudit generate --preset`.

- `propme`: PropMe's settings and sampling (all five settings; 10 samples per prompt, temperature 0.7, top-p
  0.95, 256 new tokens), the command's defaults.
- `neutral`: the mixture estimate's recommended sampling on this project's sandbox: unconditional samples at
  temperature 1.0, top-p 1.0 (below 1.0 the model over-produces its most likely kind of document;
  BENCHMARKS.md, mixture sandbox), 300 samples.
- `llmsurgeon`: the LLMSurgeon code's sampling: the 36 neutral prefixes (setting `neutral`), temperature 0.8,
  top-p 0.9, 512 new tokens, 9 samples per prefix (324, the paper's N of about 300).

The two mixture presets mark their runs `purpose = mixture`, which keeps them out of the PropMe marts.
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
    "llmsurgeon": Preset(("neutral",), 0.8, 0.9, 512, 9, 300, "mixture"),
}


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise UserError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return PRESETS[name]
