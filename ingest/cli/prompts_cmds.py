"""`lmaudit prompts build`: the prompt sets of the five settings, into the `prompts` table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ingest.cli.context import console, state

PROMPTS_PER_SETTING = 1000  # the paper: 1,000 prompts x 10 samples per prompted setting
MINIMAL_CUE_DRAWS = 10_000  # the paper: 10,000 generations per prompt-free setting, one cue word drawn for each

app = typer.Typer(help="Build the prompt sets of the PropMe settings.", no_args_is_help=True)


@app.command("build")
def build(
    ctx: typer.Context,
    corpus: Annotated[str, typer.Option(help="Registered corpus (see `lmaudit index build`).")],
    setting: Annotated[list[str], typer.Option(help="unconditional, minimal_cue, generic, specific, prefix (PropMe); or for mixture sampling neutral (lmaudit's 36 neutral prefixes) or llmsurgeon_<style> (the LLMSurgeon authors' prompt list: neutral, instructional, expository, conversational, coding, category); repeatable.")],
    n: Annotated[int | None, typer.Option(
        help="Prompts per prompted setting (default 1,000); for minimal_cue the number of cue-word draws, one "
             "generation each (default 10,000, the paper's count of prompt-free generations).", min=1)] = None,
    lang: Annotated[str, typer.Option(help="Language of cue words and sentences (wordfreq code, e.g. en, da).")] = "en",
    file: Annotated[Path | None, typer.Option(help="Sentence file for generic/specific.")] = None,
    match_file: Annotated[Path | None, typer.Option(help="For specific: the generic sentence file to length-match against.")] = None,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    leakage_filter: Annotated[bool, typer.Option(
        "--leakage-filter/--no-leakage-filter",
        help="Drop sentences found in the training corpus (--no-leakage-filter keeps them).")] = True,
) -> None:
    """Build prompt sets and report what the leakage filter removed."""
    from ingest.prompts.build import build_prompt_set

    for s in setting:
        count = n if n is not None else (MINIMAL_CUE_DRAWS if s == "minimal_cue" else PROMPTS_PER_SETTING)
        ps, notes = build_prompt_set(state(ctx).lake, corpus, s, n=count, lang=lang, seed=seed, file=file,
                                     match_file=match_file, check_leakage=leakage_filter)
        removed = sum(ps.dropped.values())
        console.print(f"{s}: {len(ps.kept)} prompts kept, {removed} removed by the leakage filter"
                      + "".join(f"; {k}: {v}" for k, v in ps.dropped.items()) + "".join(f"; {x}" for x in notes))


@app.command("specific")
def specific(
    ctx: typer.Context,
    corpus: Annotated[str, typer.Option(help="Registered corpus (the model's training index).")],
    candidates: Annotated[Path, typer.Option(help="JSON Lines of documents from sources the model has not seen: "
                                             "{\"text\", \"source\", \"id\"} per line.")],
    match_file: Annotated[Path, typer.Option(help="The generic sentence file: lengths are matched to it, and its "
                                             "sentences are the baseline of the closeness report.")],
    n: Annotated[int, typer.Option(help="Specific prompts to select.")] = 1000,
    lang: Annotated[str, typer.Option(help="Language of the sentences (wordfreq code).")] = "en",
    seed: Annotated[int, typer.Option(help="Sampling seed (documents, lengths, generic sample).")] = 0,
    per_source: Annotated[int, typer.Option(help="Documents drawn per source.")] = 4000,
    source_field: Annotated[str, typer.Option(help="Field naming a document's source (e.g. domain for a "
                                              "sandbox's reference.jsonl).")] = "source",
    quality: Annotated[str, typer.Option(help="Quality scorer: heuristic (offline) or hf (a local classifier, "
                                         "e.g. FineWeb-Edu's: --quality-param path=DIR).")] = "heuristic",
    quality_param: Annotated[list[str], typer.Option(help="KEY=VALUE for the quality scorer; repeatable.")] = [],
    min_quality: Annotated[float, typer.Option(help="Keep documents scoring at least this (0-5 scale).")] = 3.0,
    embedder: Annotated[str, typer.Option(help="Embedder: lsa (offline TF-IDF + SVD) or hf (a local model: "
                                          "--embedder-param path=DIR pooling=last).")] = "lsa",
    embedder_param: Annotated[list[str], typer.Option(help="KEY=VALUE for the embedder; repeatable.")] = [],
    training_docs: Annotated[int, typer.Option(help="Training documents per sample (selection, evaluation).")] = 10_000,
    leakage_filter: Annotated[bool, typer.Option(
        "--leakage-filter/--no-leakage-filter",
        help="Drop sentences found in the training corpus (--no-leakage-filter keeps them).")] = True,
) -> None:
    """Build the specific setting's prompts: source sentences close to the training data.

    The specific setting from source documents: quality filter, length-matched sentences, leakage filter,
    the sentences closest to the training data (equal shares per source), and how close they are."""
    from ingest.options import parse_key_values
    from ingest.prompts.specific.pipeline import SpecificRequest, build_specific_prompts

    req = SpecificRequest(
        candidates, match_file, n=n, lang=lang, seed=seed, per_source=per_source, source_field=source_field,
        quality=quality, quality_params=parse_key_values(quality_param, "--quality-param", "path=DIR", dashes=True),
        min_quality=min_quality, embedder=embedder,
        embedder_params=parse_key_values(embedder_param, "--embedder-param", "path=DIR", dashes=True),
        n_training_docs=training_docs, check_leakage=leakage_filter)
    r = build_specific_prompts(state(ctx).lake, corpus, req, progress=True)
    console.print(f"specific: {r.kept} prompts kept, {sum(r.dropped.values())} removed by the leakage filter"
                  + "".join(f"; {x}" for x in r.notes))
    console.print("closeness to the training data (mean cosine similarity to the nearest document of an "
                  "independent training sample): " + ", ".join(f"{g} {v:.3f}" for g, v in r.closeness.items()))
