"""`lmaudit audit documents`: name a set of training documents (a rightsholder's) for the document-set marts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ingest.cli.context import console, state

app = typer.Typer(help="Audits for rightsholders: does the model reproduce these training documents in ordinary "
                       "use, compared with an attack? (docs/rightsholders.md)", no_args_is_help=True)


@app.command("documents")
def documents(
    ctx: typer.Context,
    corpus: Annotated[str, typer.Option(help="Registered corpus the documents belong to.")],
    file: Annotated[Path | None, typer.Argument(help="A file of document ids, one a line (the documents' `id` "
                                                     "metadata field, or doc:<number>).")] = None,
    where: Annotated[str | None, typer.Option(
        help="Or a SQL condition over the corpus's documents (columns shard, doc_ix, doc_id, source, domain, path, "
             "linenum, metadata as JSON), e.g. \"source like 'scipy==%'\".")] = None,
    name: Annotated[str | None, typer.Option(help="The set's name (default: the file's stem or the condition); "
                                                  "the same name again replaces the set.")] = None,
    prefix_prompts: Annotated[int, typer.Option(
        help="Also build this many prefix prompts drawn only from the set's documents (its targeted-extraction "
             "attack); 0: none.")] = 0,
    seed: Annotated[int, typer.Option(help="Seed of the prefix-prompt draw.")] = 0,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the selection; write nothing.")] = False,
) -> None:
    """Store a named set of training documents to audit, per document and per set.

    Store a named set of training documents; `lmaudit build` then fills fct_document_propensity (per
    document) and fct_document_set_propensity (per set): reproduced spans, full matches, f_p, f_c and PM."""
    from ingest.audit.store import AuditRequest, audit_documents

    req = AuditRequest(corpus, file, where, name, prefix_prompts, seed, dry_run)
    for line in audit_documents(state(ctx).lake, req).lines():
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def register(app_root: typer.Typer) -> None:
    app_root.add_typer(app, name="audit")
