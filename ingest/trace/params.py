"""Tracer parameters: every default (docs/propme-method.md, section 2), recorded with each trace run."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class TraceParams:
    mode: str = "mixed"            # "mixed" or "text"
    min_span_len: int = 4          # mixed mode: spans shorter than this are dropped
    max_docs: int = 10             # documents per kept span (and for a full match)
    window_factor: int = 5         # document window of up to window_factor * L tokens around a match
    rare_percent: int = 5          # K = max(1, ceil(rare_percent * L / 100)) rarest spans are kept
    n_anchors: int = 8             # longest-and-rarest spans used to look for normalized full matches
    dup_min_len: int = 50          # spans this long get duplication counts
    dup_prefix_len: int = 50       # ... of their first dup_prefix_len tokens and of the whole span
    max_trim: int = 5              # tokens trimmed at a mid-word span end for duplication counts
    nv_variant: str = "adaptive"   # "adaptive" or "fixed"
    seed: int = 0                  # document sampling seed (combined with the generation text)

    def __post_init__(self) -> None:
        from ingest.errors import UserError

        if self.mode not in ("mixed", "text"):
            raise UserError(f"--mode must be 'mixed' or 'text', not {self.mode!r}")
        if self.nv_variant not in ("adaptive", "fixed"):
            raise UserError(f"nv variant must be 'adaptive' or 'fixed', not {self.nv_variant!r}")

    def n_rare(self, L: int) -> int:
        """K = max(1, ceil(rare_percent * L / 100)) in integers: (5L + 99) // 100 for 5%."""
        return max(1, (self.rare_percent * L + 99) // 100)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)
