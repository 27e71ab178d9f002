"""The texts of a prompt set, as inputs of a tracing pass (`lmaudit trace --prompts SETTING`).

Two analyses trace prompts rather than generations, with the same tracer and parameters, so that the
tracing pass (trace_id) is the one the runs of those prompts were traced by:
- chance level: the prompt text itself ('prompt:<prompt_id>'). Prompts are not training text, so the spans
  they match say how long a match arises by chance in this corpus.
- duplication of the source sequence: for a prompt with a true continuation (prefix prompts), the prompt
  followed by its continuation ('source:<prompt_id>'), i.e. the stretch of the source document the
  targeted-extraction metric asks the model to reproduce. Its full-match span's count is the number of
  times the source sequence occurs in the corpus.
The ids carry these prefixes so that the marts tell them apart from generation ids (which are hashes).
"""

from __future__ import annotations

import pyarrow.compute as pc

from ingest.errors import UserError
from ingest.lake import Lake

PROMPT_PREFIX = "prompt:"
SOURCE_PREFIX = "source:"


def prompt_texts(lake: Lake, setting: str) -> tuple[list[tuple[str, str]], set[str]]:
    """[(id, text)] of the prompts of `setting` (prompt texts and, where there is a true continuation, source
    sequences), sorted by id, and the corpus ids the prompts name. A `UserError` when the setting has no
    prompts; an empty list when its prompts have no text (a prompt-free setting)."""
    t = lake.read("prompts")
    t = t.filter(pc.equal(t.column("setting"), setting))
    if t.num_rows == 0:
        known = sorted(set(lake.read("prompts").column("setting").to_pylist()))
        raise UserError(f"no prompts of setting {setting!r} in the warehouse; settings with prompts: "
                        f"{', '.join(known) or 'none'} (build them with lmaudit prompts)")
    out: list[tuple[str, str]] = []
    for row in t.select(["prompt_id", "text", "true_continuation"]).to_pylist():
        if row["text"]:
            out.append((PROMPT_PREFIX + row["prompt_id"], row["text"]))
        if row["true_continuation"]:
            out.append((SOURCE_PREFIX + row["prompt_id"], (row["text"] or "") + row["true_continuation"]))
    corpora = {c for c in t.column("corpus_id").to_pylist() if c}
    return sorted(out), corpora
