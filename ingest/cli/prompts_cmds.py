"""`lmaudit prompts build`: the prompt sets of the five settings, into the `prompts` table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ingest.cli.context import console, state
from ingest.errors import UserError

app = typer.Typer(help="Build the prompt sets of the PropMe settings.", no_args_is_help=True)


def build_prompt_set(lake, corpus_name: str, setting: str, *, n: int = 1000, lang: str = "en", seed: int = 0,
                     file: Path | None = None, match_file: Path | None = None, check_leakage: bool = True):
    """Build one setting's prompts and write them (replacing an earlier build of the same setting)."""
    from ingest.corpora import open_corpus
    from ingest.lake import make_key, partition_name
    from ingest.prompts import settings as S
    from ingest.prompts.sentences import length_match, read_sentences

    corpus = open_corpus(lake, corpus_name)
    notes = []
    if setting == "unconditional":
        ps = S.unconditional(corpus)
    elif setting == "neutral":
        ps = S.neutral(corpus)
    elif setting == "minimal_cue":
        ps = S.minimal_cue(corpus, n, lang, seed)
    elif setting == "prefix":
        ps = S.prefix(corpus, n, seed)
    elif setting in ("generic", "specific"):
        if file is None:
            raise UserError(f"--file is required for the {setting} setting (one sentence a line, or a Tatoeba TSV)")
        sf = read_sentences(file, lang)
        notes += [f"{k}: {v}" for k, v in sf.dropped.items()]
        texts = sf.sentences
        if setting == "specific" and match_file is not None:
            generic = read_sentences(match_file, lang).sentences
            lens = [len(corpus.tokenizer.encode(s)) for s in generic[:n]]
            texts = length_match(lens, [(s, len(corpus.tokenizer.encode(s))) for s in texts], seed)
            notes.append(f"length-matched {len(texts)} of {len(lens)} generic sentences")
        else:
            random_order = __import__("random").Random(seed)
            texts = random_order.sample(texts, min(n, len(texts)))
        ps = S.sentences(corpus, setting, texts, lang, source=str(file), check_leakage=check_leakage)
    else:
        from ingest.lake import ALL_SETTINGS

        raise UserError(f"unknown setting {setting!r}; choose one of {', '.join(ALL_SETTINGS)}")
    import hashlib
    import json

    digest = lambda f: hashlib.sha256(Path(f).read_bytes()).hexdigest() if f else None  # noqa: E731
    prompt_set = make_key(corpus.corpus_id, setting, json.dumps(
        {"n": n, "lang": lang, "seed": seed, "file": digest(file), "match_file": digest(match_file),
         "leakage_filter": check_leakage}, sort_keys=True))
    ps.stamp(prompt_set)
    lake.write("prompts", partition_name("set", corpus_name, setting, prompt_set[:12]), ps.rows)
    return ps, notes


@app.command("build")
def build(
    ctx: typer.Context,
    corpus: Annotated[str, typer.Option(help="Registered corpus (see `lmaudit index build`).")],
    setting: Annotated[list[str], typer.Option(help="unconditional, minimal_cue, generic, specific, prefix (PropMe), or neutral (36 neutral prefixes for mixture sampling); repeatable.")],
    n: Annotated[int, typer.Option(help="Prompts per prompted setting.")] = 1000,
    lang: Annotated[str, typer.Option(help="Language of cue words and sentences (wordfreq code, e.g. en, da).")] = "en",
    file: Annotated[Path | None, typer.Option(help="Sentence file for generic/specific.")] = None,
    match_file: Annotated[Path | None, typer.Option(help="For specific: the generic sentence file to length-match against.")] = None,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    no_leakage_filter: Annotated[bool, typer.Option(help="Keep sentences found in the training corpus.")] = False,
) -> None:
    """Build prompt sets and report what the leakage filter removed."""
    for s in setting:
        ps, notes = build_prompt_set(state(ctx).lake, corpus, s, n=n, lang=lang, seed=seed, file=file,
                                     match_file=match_file, check_leakage=not no_leakage_filter)
        removed = sum(ps.dropped.values())
        console.print(f"{s}: {len(ps.kept)} prompts kept, {removed} removed by the leakage filter"
                      + "".join(f"; {k}: {v}" for k, v in ps.dropped.items()) + "".join(f"; {x}" for x in notes))
