"""`lmaudit reference import`: labelled reference documents for the domain classifier."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ingest.cli.context import console, state

app = typer.Typer(help="Labelled reference documents (per domain) for the domain classifier.", no_args_is_help=True)


@app.command("import")
def import_(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="JSONL (.jsonl[.gz|.zst]) or Parquet, one document per row.")],
    domain_field: Annotated[str, typer.Option("--domain-field", help="Field holding the domain label.")] = "domain",
    text_field: Annotated[str, typer.Option("--text-field", help="Field holding the document text.")] = "text",
    id_field: Annotated[str, typer.Option("--id-field", help="Optional field with a document id (else a hash of the text).")] = "id",
    cap_per_domain: Annotated[int, typer.Option("--cap-per-domain", help="Keep at most this many documents per domain (a seeded sample).")] = 5000,
    folds: Annotated[int, typer.Option("--folds", help="Cross-fitting folds (stratified by domain).")] = 5,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the cap sample and the fold assignment.")] = 0,
    source: Annotated[str | None, typer.Option("--source", help="Name of this reference set (default: the file name); importing the same source again replaces it.")] = None,
) -> None:
    """Import reference documents: validate every row, dedupe, cap per domain, assign stratified folds."""
    from ingest.references import import_references

    s = import_references(state(ctx).lake, file, domain_field=domain_field, text_field=text_field, id_field=id_field,
                          cap_per_domain=cap_per_domain, folds=folds, seed=seed, source=source)
    console.print(s.line(), highlight=False, soft_wrap=True)
