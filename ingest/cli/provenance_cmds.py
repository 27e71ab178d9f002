"""`lmaudit provenance`: licence and metadata of the reproduced training documents, personal data in the
reproduced spans (ingest/provenance/; docs/provenance.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from ingest.cli.context import console, state


def provenance(
    ctx: typer.Context,
    min_span: Annotated[int | None, typer.Option(help="Spans of at least this many index tokens count as "
                                                      "reproduced (default: var propme_mid_span_tokens, 20).")] = None,
    rescan: Annotated[bool, typer.Option(help="Forget earlier results and read every document and span again "
                                              "(after a detector upgrade).")] = False,
) -> None:
    """Read back every reproduced training document: licence, source and personal data; resumable.

    Every document a traced generation reproduces (a span of >= --min-span tokens) is read back from its
    index: metadata (source, path, URL, repository, licence field) and the licence in its text (SPDX
    identifiers, licence texts); scan the reproduced spans for e-mail addresses, phone numbers, keys and tokens
    (stored masked). Resumable: what is already read is skipped. Then `lmaudit build` makes
    fct_document_provenance and fct_reproduced_personal_data."""
    from ingest.provenance.run import run_provenance

    s = run_provenance(state(ctx).lake, min_span=min_span, rescan=rescan)
    found = ", ".join(f"{n} {k}" for k, n in sorted(s.findings.items())) or "none"
    console.print(f"provenance (spans >= {s.min_span} tokens): {s.n_documents} documents read "
                  f"({s.n_with_licence} with a licence; {s.n_documents_skipped} read before), {s.n_spans} spans "
                  f"scanned ({s.n_spans_skipped} before), personal data found: {found}; {s.seconds:.1f}s",
                  highlight=False)
    console.print("run `lmaudit build` for fct_document_provenance and fct_reproduced_personal_data",
                  highlight=False)


def register(app: typer.Typer) -> None:
    app.command("provenance")(provenance)
