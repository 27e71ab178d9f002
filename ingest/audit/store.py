"""Write a document set (and, when asked, its prefix prompts) into the lake, all or nothing.

A set is one partition of `document_sets` named after the set, so writing a set again under the same name
replaces it whole (never two copies of a document). The prefix prompt set drawn from its documents is written
in the same transaction and its id stored on every row of the set: the marts find the set's attack run as the
run whose generations use those prompts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from ingest.audit.documents import corpus_documents
from ingest.audit.selection import Selection, select
from ingest.lake import Lake, make_key, partition_name

TABLE = "document_sets"


@dataclass(frozen=True)
class AuditRequest:
    corpus: str
    file: object = None  # Path | None
    where: str | None = None
    name: str | None = None
    prefix_prompts: int = 0  # build this many prefix prompts from the set's documents (0: none)
    seed: int = 0
    dry_run: bool = False


@dataclass(frozen=True)
class AuditResult:
    selection: Selection
    corpus_id: str
    n_corpus_docs: int
    replaced: bool  # a set of this name existed and was replaced
    prompt_set: str | None
    n_prompts: int
    notes: tuple[str, ...]
    corpus: str = ""
    dry_run: bool = False

    def lines(self) -> list[str]:
        """What was selected and written, and the next steps (generating and tracing the attack is the user's)."""
        sel, docs = self.selection, self.selection.documents
        out = [f"document set {sel.name!r}: {docs.num_rows:,} of the {self.n_corpus_docs:,} documents of corpus "
               f"{self.corpus!r} ({sel.selection})"]
        for d in docs.slice(0, 5).to_pylist():
            out.append(f"  doc {d['doc_ix']}: {d['doc_id'] or '-'}  {d['source'] or d['path'] or ''}".rstrip())
        if docs.num_rows > 5:
            out.append(f"  ... and {docs.num_rows - 5:,} more")
        if self.dry_run:
            return [*out, "dry run: nothing written"]
        out.append(("replaced the earlier set of this name" if self.replaced else "written") + " (lake table "
                   "document_sets)")
        out.extend(self.notes)
        if self.prompt_set:
            made = f"built {self.n_prompts:,} prefix prompts from the set's documents" if self.n_prompts else \
                "kept the prefix prompts built earlier for the same documents"
            run = f"{sel.name}-attack-prefix"
            out += [f"{made}: prompt set {self.prompt_set[:12]}",
                    "next, the targeted-extraction attack (your model; --purpose other keeps it out of the per-run "
                    "PropMe marts, whose prefix run stays the corpus-wide one):",
                    f"  lmaudit generate --model MODEL --corpus {self.corpus} --settings prefix --prompt-set "
                    f"{self.prompt_set[:12]} --purpose other --run-prefix {sel.name}-attack",
                    f"  lmaudit trace --run {run} --corpus {self.corpus}"]
        else:
            out.append("no attack prompts of this set: f_c comes from the corpus-wide prefix run; add "
                       "--prefix-prompts N to build prefix prompts from these documents")
        out += ["then: lmaudit build, and",
                f"  lmaudit sql \"select * from fct_document_set_propensity where document_set = '{sel.name}'\"",
                f"  lmaudit sql \"select * from fct_document_propensity where document_set = '{sel.name}'\""]
        return out


def set_partition(name: str) -> str:
    return partition_name("set", name)


def previous_prompt_set(lake: Lake, name: str, corpus_id: str, doc_ixs: tuple[int, ...]) -> tuple[bool, str | None]:
    """(whether a set of this name exists, its prompt set when it holds the same documents of the same corpus):
    re-running a selection without --prefix-prompts keeps the attack prompts built for it earlier."""
    if not lake.is_done(TABLE, set_partition(name)):
        return False, None
    old = lake.read(TABLE, set_partition(name)).to_pylist()
    same = bool(old) and {r["corpus_id"] for r in old} == {corpus_id} and \
        sorted(r["doc_ix"] for r in old) == sorted(doc_ixs)
    return True, (old[0]["prompt_set"] if same else None)


def set_rows(sel: Selection, corpus_id: str, prompt_set: str | None) -> list[dict]:
    now = datetime.now(timezone.utc)
    return [{"document_set_row_id": make_key(sel.name, corpus_id, d["doc_ix"]), "document_set": sel.name,
             "corpus_id": corpus_id, "shard": d["shard"], "doc_ix": d["doc_ix"], "doc_id": d["doc_id"],
             "source": d["source"], "domain": d["domain"], "path": d["path"], "metadata": d["metadata"],
             "selection": sel.selection, "prompt_set": prompt_set, "created_at": now}
            for d in sel.documents.to_pylist()]


def audit_documents(lake: Lake, req: AuditRequest) -> AuditResult:
    """Select the set, check it, and (unless a dry run) write it and its prefix prompts in one transaction."""
    from ingest.corpora import open_corpus
    from ingest.errors import UserError

    if req.prefix_prompts < 0:
        raise UserError(f"--prefix-prompts must be >= 0, got {req.prefix_prompts}")
    corpus = open_corpus(lake, req.corpus)
    try:
        documents = corpus_documents(corpus.engine)
    finally:
        corpus.engine.close()
    sel = select(documents, file=req.file, where=req.where, name=req.name)
    existed, prompt_set = previous_prompt_set(lake, sel.name, corpus.corpus_id, sel.doc_ixs)
    n_prompts, notes = 0, ()
    if not req.dry_run:
        from ingest.prompts.build import build_prompt_set

        with lake.transaction():
            if req.prefix_prompts:
                ps, note_list = build_prompt_set(lake, req.corpus, "prefix", n=req.prefix_prompts, seed=req.seed,
                                                 progress=False, doc_ixs=sel.doc_ixs)
                prompt_set, n_prompts, notes = ps.rows[0]["prompt_set"], len(ps.rows), tuple(note_list)
            lake.write(TABLE, set_partition(sel.name), set_rows(sel, corpus.corpus_id, prompt_set))
    return AuditResult(sel, corpus.corpus_id, documents.num_rows, existed, prompt_set, n_prompts, notes, req.corpus,
                       req.dry_run)
