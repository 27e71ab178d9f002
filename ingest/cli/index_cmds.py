"""`lmaudit index ...`: build or attach an infini-gram index and register it as a corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ingest.cli.context import console, state

app = typer.Typer(help="Build or attach infini-gram suffix-array indexes of training corpora.", no_args_is_help=True)


@app.command("build")
def build(
    ctx: typer.Context,
    inputs: Annotated[list[Path], typer.Argument(help="JSONL (.jsonl/.gz/.zst) or Parquet files, or folders of them.")],
    tokenizer: Annotated[str, typer.Option(help="Local tokenizer folder or tokenizer.json, a hub name, or 'bytes'.")],
    out: Annotated[Path, typer.Option(help="New folder for the index (must not exist).")],
    name: Annotated[str | None, typer.Option(help="Corpus name in the warehouse (default: the --out folder name).")] = None,
    shards: Annotated[int, typer.Option(help="Number of index shards.")] = 1,
    text_field: Annotated[str, typer.Option(help="Field holding the document text; other fields become metadata.")] = "text",
    cpus: Annotated[int | None, typer.Option(help="CPUs for suffix-array building (default: all).")] = None,
) -> None:
    """Tokenize documents, build the suffix arrays and unigram table, and register the corpus."""
    from ingest.corpora import register_corpus
    from ingest.index.build import build_index
    from ingest.names import check_name

    name = check_name("corpus name", name if name is not None else Path(out).name)  # before hours of work
    m = build_index([str(p) for p in inputs], tokenizer, out, shards=shards, text_field=text_field, cpus=cpus)
    row = register_corpus(state(ctx).lake, name, [out])
    console.print(f"indexed {m.n_docs:,} documents, {m.n_tokens:,} tokens ({m.dtype}, {len(m.shards)} shard(s)) "
                  f"in {m.timings.get('total_s', 0):.1f}s; registered corpus {row['name']!r}")


@app.command("attach")
def attach(
    ctx: typer.Context,
    index_dirs: Annotated[list[Path], typer.Argument(help="Folder(s) of a prebuilt infini-gram v4 index; several "
                                                           "folders (one per shard set) make one corpus.")],
    tokenizer: Annotated[str, typer.Option(help="The tokenizer the index was built with (checked on sampled documents); "
                                                "for a folder built by `lmaudit index build` it must match the one its "
                                                "manifest names, else the attach is refused.")],
    name: Annotated[str | None, typer.Option(help="Corpus name in the warehouse (default: the first folder's name).")] = None,
    dtype: Annotated[str | None, typer.Option(help="u8, u16 or u32 (default: inferred from file sizes).")] = None,
) -> None:
    """Register prebuilt infini-gram index folders as one corpus, without writing into them.

    Register prebuilt infini-gram index folders as one corpus; nothing is written into them (their
    manifest and unigram table go into the warehouse), so read-only, shared folders work."""
    from ingest.corpora import attach_corpus

    row = attach_corpus(state(ctx).lake, name or Path(index_dirs[0]).resolve().name, index_dirs, tokenizer, dtype)
    console.print(f"registered corpus {row['name']!r}: {row['n_docs']:,} documents, {row['n_tokens']:,} tokens")
