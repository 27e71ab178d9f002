"""From stored prompts to the work units of a run: the prompt TEXT encoded with the model's own tokenizer,
its start token prepended. The index tokenizer's ids stored with a prompt never reach a model: a model
whose tokenizer differs from the index's would read them as other tokens."""

from __future__ import annotations

from collections import Counter

from ingest.corpora import corpus_id_for
from ingest.errors import UserError
from ingest.generate.backends import Backend
from ingest.generate.runner import PromptUnit
from ingest.lake import Lake


def document_set_prompt_sets(lake: Lake) -> set[str]:
    """Prompt sets built for a document set (its targeted prefix attack)."""
    return {r["prompt_set"] for r in lake.read("document_sets").select(["prompt_set"]).to_pylist() if r["prompt_set"]}


def prompt_units(lake: Lake, corpus: str, setting: str, backend: Backend, n_samples: int,
                 n_generations: int, max_prompts: int | None = None, prompt_set: str | None = None) -> list[PromptUnit]:
    """Work units from one prompt set: `prompt_set` (an id or its prefix) or the most recently built.
    `n_generations` samples of the unconditional prompt; one sample of each minimal-cue draw (its set has one
    row per generation); `n_samples` of every other prompt."""
    cid = corpus_id_for(corpus)
    rows = [r for r in lake.read("prompts").to_pylist() if r["corpus_id"] == cid and r["setting"] == setting]
    if not rows:
        raise UserError(f"no {setting} prompts for corpus {corpus!r}; run `lmaudit prompts build --corpus {corpus} "
                        f"--setting {setting}` first")
    if prompt_set is None:
        # a document set's own prefix prompts (`lmaudit audit documents --prefix-prompts`) are a targeted attack,
        # never "the latest prefix set" of an ordinary run: they are used only when named
        targeted = document_set_prompt_sets(lake)
        general = [r for r in rows if r["prompt_set"] not in targeted]
        if not general:
            raise UserError(f"the {setting} prompts of corpus {corpus!r} were all built for a document set (lmaudit "
                            "audit documents); pass --prompt-set to generate from one, or run `lmaudit prompts "
                            f"build --corpus {corpus} --setting {setting}`")
        rows = general
        latest = max(rows, key=lambda r: (r["created_at"] is not None, r["created_at"] or 0))
        prompt_set = latest["prompt_set"]
        rows = [r for r in rows if r["prompt_set"] == prompt_set]
    else:
        rows = [r for r in rows if (r["prompt_set"] or "").startswith(prompt_set)]
        if len({r["prompt_set"] for r in rows}) != 1:
            raise UserError(f"prompt set {prompt_set!r} matches {len({r['prompt_set'] for r in rows})} sets of "
                            f"{setting} prompts; give more of its id")
    rows = [r for r in rows if r["leakage_outcome"] in (None, "kept")]
    if not rows:
        raise UserError(f"every {setting} prompt of corpus {corpus!r} was removed by the leakage filter")
    rows.sort(key=lambda r: r["prompt_id"])
    if max_prompts is not None:
        rows = rows[:max_prompts]
    start = backend.bos_id
    units = []
    draws: Counter = Counter()
    for r in rows:
        ids = backend.encode(r["text"] or "")
        if setting == "minimal_cue":
            # one generation per drawn cue word (the paper's "for each generation, the word is drawn"); the c draws
            # of a word, in prompt-id order, are its samples 0 .. c - 1 (seeds base + 0 .. c - 1), as in PropMe's code
            k = draws[r["text"]]
            draws[r["text"]] += 1
            units.append(PromptUnit(r["prompt_id"], (start, *ids), 1, first_sample=k))
            continue
        count = n_generations if setting == "unconditional" else n_samples
        units.append(PromptUnit(r["prompt_id"], (start, *ids), count))
    return units
