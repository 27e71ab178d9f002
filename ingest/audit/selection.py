"""Which documents a set holds: ids from a file, or a SQL condition over the corpus's document metadata.

Every way a selection can be wrong (no file, an unknown id, a condition that does not parse or reads a file,
a set with no document) is one `UserError` naming the problem and the fix, raised before anything is written.
A `--where` condition runs through `ingest.sql_guard` as `lmaudit sql` queries do: only a statement that
returns rows, on an in-memory table of the documents, with file access switched off.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from ingest.errors import UserError
from ingest.names import check_name

DOC_IX_PREFIX = "doc:"  # an id file line `doc:<n>` names document number n (the form prefix prompts record)


@dataclass(frozen=True)
class Selection:
    """A resolved selection: the documents (rows of `corpus_documents`, in doc_ix order) and how they were chosen."""

    name: str
    selection: str  # ids:<file name> or where:<condition>
    documents: pa.Table

    @property
    def doc_ixs(self) -> tuple[int, ...]:
        return tuple(self.documents.column("doc_ix").to_pylist())


def default_name(file: Path | None, where: str | None) -> str:
    """The set's name when --name is not given: the id file's stem, or the condition made name-safe
    (`source like 'scipy==%'` -> `source-like-scipy`)."""
    if file is not None:
        return Path(file).stem or "documents"
    slug = re.sub(r"[^A-Za-z0-9_.]+", "-", where or "").strip("-.")[:60].strip("-.")
    return slug or "documents"


def read_ids(file: Path) -> list[str]:
    """One document id a line; blank lines and lines starting with # are skipped; order kept, repeats dropped. A
    byte order mark (Notepad's and Excel's 'UTF-8') is not part of the first id."""
    try:
        text = Path(file).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise UserError(f"id file {file} not found; give a file with one document id a line") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read id file {file}: {e}; give a UTF-8 text file with one document id a line") \
            from None
    ids = [line.strip() for line in text.splitlines()]
    return list(dict.fromkeys(i for i in ids if i and not i.startswith("#")))


def by_ids(documents: pa.Table, ids: list[str], file: Path) -> pa.Table:
    """The documents whose `id` metadata field (or `doc:<doc_ix>`) is one of `ids`; an unknown id is an error."""
    by_id: dict[str, list[int]] = {}
    for row, doc_id in enumerate(documents.column("doc_id").to_pylist()):
        if doc_id is not None:
            by_id.setdefault(doc_id, []).append(row)
    n = documents.num_rows
    rows: list[int] = []
    unknown = []
    for i in ids:
        if i in by_id:
            rows.extend(by_id[i])
        elif i.startswith(DOC_IX_PREFIX) and i[len(DOC_IX_PREFIX):].isdigit() and int(i[len(DOC_IX_PREFIX):]) < n:
            rows.append(int(i[len(DOC_IX_PREFIX):]))  # doc_ix == row: corpus_documents lists every document in order
        else:
            unknown.append(i)
    if unknown:
        shown = ", ".join(repr(u) for u in unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")
        raise UserError(f"{file}: {len(unknown)} of {len(ids)} ids are not documents of the corpus: {shown}; use the "
                        f"documents' `id` metadata field or {DOC_IX_PREFIX}<number>")
    return documents.take(pa.array(sorted(set(rows)), type=pa.int64()))


def by_where(documents: pa.Table, where: str) -> pa.Table:
    """The documents a SQL condition over `documents` (columns shard, doc_ix, doc_id, source, domain, path,
    linenum, metadata as JSON) selects, through the read-only guard."""
    import duckdb

    from ingest.sql_guard import guard_in_memory

    if not where.strip():
        raise UserError("--where is empty; give a condition such as \"source like 'scipy==%'\"")
    query = f"select doc_ix from documents where ({where}\n) order by doc_ix"
    try:
        with duckdb.connect() as parser:
            n_statements = len(parser.extract_statements(query))
    except duckdb.Error as e:
        raise UserError(f"--where does not parse: {str(e).splitlines()[0]}; give one SQL condition over the columns "
                        f"{', '.join(documents.column_names)}") from None
    if n_statements != 1:
        raise UserError("--where must be one SQL condition, not several statements")
    raw = duckdb.connect()
    raw.register("documents_arrow", documents)
    raw.execute("create table documents as select * from documents_arrow")
    raw.unregister("documents_arrow")
    con = guard_in_memory(raw)
    try:
        picked = [r[0] for r in con.execute(query).fetchall()]
    except duckdb.Error as e:
        raise UserError(f"--where failed: {str(e).splitlines()[0]}; the columns are "
                        f"{', '.join(documents.column_names)} (metadata is JSON: json_extract_string(metadata, "
                        "'$.field'))") from None
    finally:
        con.close()
    n = documents.num_rows
    if any(not isinstance(p, int) or not 0 <= p < n for p in picked) or len(set(picked)) != len(picked):
        # only a condition that escapes its parentheses (`true) union ...`) returns rows that are not documents
        raise UserError("--where must be a condition over the documents (it selected rows that are not documents); "
                        "write it as for `select * from documents where <condition>`")
    return documents.take(pa.array(picked, type=pa.int64()))  # doc_ix == row


def select(documents: pa.Table, *, file: Path | None, where: str | None, name: str | None) -> Selection:
    """Resolve exactly one of `file` / `where` into a non-empty set with a valid name."""
    if (file is None) == (where is None):
        raise UserError("give exactly one of FILE (one document id a line) or --where SQL")
    set_name = check_name("document set name", name if name is not None else default_name(file, where))
    if file is not None:
        picked = by_ids(documents, read_ids(file), file)
        how = f"ids:{Path(file).name}"
    else:
        picked = by_where(documents, where)
        how = f"where:{where}"
    if picked.num_rows == 0:
        what = f"{file} has no id" if file is not None else f"--where {where!r} matches none of the corpus's " \
                                                             f"{documents.num_rows:,} documents"
        raise UserError(f"the document set is empty: {what}; try the condition with --dry-run (columns: "
                        f"{', '.join(documents.column_names)})" if file is None
                        else f"the document set is empty: {what}; list one document id a line")
    return Selection(set_name, how, picked)
