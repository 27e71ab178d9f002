"""`lmaudit vocab fetch|convert`: real tokenizers of the papers' model families without a model hub (llama.cpp's
GGUF vocabularies from the package registry, rebuilt as Hugging Face tokenizer folders; ingest/vocabs/)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ingest.cli.context import console
from ingest.vocabs import gguf, llamacpp

app = typer.Typer(help="Real tokenizers (Llama-2, GPT-NeoX, GPT-2, StarCoder, Llama-3, Falcon) from GGUF "
                       "vocabularies, as tokenizer folders every command loads.", no_args_is_help=True)


@app.command("fetch")
def fetch(
    names: Annotated[Optional[list[str]], typer.Argument(
        help=f"Vocabularies to fetch (default: all): {', '.join(llamacpp.VOCABS)}.")] = None,
    cache: Annotated[Optional[Path], typer.Option(
        help="Folder to keep them in (default ~/.cache/lmaudit/vocabs/...; $LMAUDIT_CACHE moves it).")] = None,
) -> None:
    """Download llama.cpp's GGUF vocabularies (sha256-checked) and print where each one is.

    Download llama.cpp's GGUF vocabularies (from the pinned llama-cpp-python sdist, sha256-checked) and
    print where each one is."""
    chosen = tuple(names or llamacpp.VOCABS)
    folder = llamacpp.fetch(cache, chosen)
    for name in chosen:
        console.print(f"{name}: {folder / f'ggml-vocab-{name}.gguf'}", soft_wrap=True, highlight=False)


@app.command("convert")
def convert(
    gguf_file: Annotated[Path, typer.Argument(help="A .gguf vocabulary (or model) file.")],
    out: Annotated[Path, typer.Option(help="New folder for the tokenizer (tokenizer.json and its config).")],
) -> None:
    """Rebuild a GGUF file's tokenizer as a Hugging Face tokenizer folder, checked against llama.cpp.

    Rebuild a GGUF file's tokenizer as its family's Hugging Face tokenizer folder; when llama.cpp's test
    texts (<file>.inp / .out) lie beside it, check every text against the ids llama.cpp expects."""
    from ingest.errors import UserError

    folder = gguf.save_tokenizer_folder(gguf_file, out)
    inp, expected = Path(f"{gguf_file}.inp"), Path(f"{gguf_file}.out")
    note = ""
    if inp.is_file() and expected.is_file():
        cases = llamacpp.read_cases(inp, expected)
        tok = gguf.tokenizer_from_gguf(gguf_file)
        wrong = [c for c in cases if tok.encode(c.text, add_special_tokens=False).ids != c.ids]
        if wrong:
            raise UserError(f"{len(wrong)} of {len(cases)} of llama.cpp's test texts encode to other ids than it "
                            f"expects (first: {wrong[0].text[:30]!r}); this family's rules need a fix, do not index "
                            f"with {folder}")
        note = f"; {len(cases)} of {len(cases)} of llama.cpp's test texts give its expected ids"
    console.print(f"tokenizer written to {folder}{note}", soft_wrap=True, highlight=False)
