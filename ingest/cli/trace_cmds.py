"""`lmaudit trace`: trace generations against the indexed training corpus (SimpleTrace)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ingest.cli.context import console, state


def load_generations(lake, run: str | None, file: Path | None) -> tuple[list[tuple[str, str]], str]:
    """(generation_id, text) pairs from a run in the lake or from a JSONL/Parquet file, and their source.

    A run's source is its id. Every file has the same source, `FILE_SOURCE`, never its path: a trace batch is
    then named by its content alone (its generation ids and text hashes, `ingest/trace/run.py`), so the same
    generations traced from any path, copied, renamed, moved with the warehouse or converted to Parquet,
    resume as done, and an edited file retraces only the batches whose texts changed. Its earlier rows are
    replaced by the generation ids they hold (`ingest/trace/supersede.py`), as a re-imported run's are by
    its id. Neither the file's name nor a hash of its bytes is in the source: both would make a renamed or
    re-encoded copy of the same generations a new source, and a hash of the whole file would retrace every
    batch for one edited text."""
    from ingest.errors import UserError
    from ingest.importers.records import iter_records
    from ingest.trace.supersede import FILE_SOURCE

    if (run is None) == (file is None):
        raise UserError("pass exactly one of --run R or --generations FILE")
    if run is not None:
        from ingest.lake.runs import run_texts

        return run_texts(lake, run), f"run:{run}"
    rows, first_row = [], {}
    for i, rec in iter_records(file):
        gid, text = rec.get("generation_id"), rec.get("text")
        if gid is None or not isinstance(gid, (str, int)) or isinstance(gid, bool):
            raise UserError(f"{file}, row {i}: needs a string 'generation_id'")
        if not isinstance(text, str):
            raise UserError(f"{file}, row {i}: 'text' must be a string")
        if str(gid) in first_row:  # checked before the trace_runs row is written (it used to be written first)
            raise UserError(f"{file}, row {i}: generation_id {str(gid)!r} appears again (first in row "
                            f"{first_row[str(gid)]}); every generation needs its own id")
        first_row[str(gid)] = i
        rows.append((str(gid), text))
    if not rows:
        raise UserError(f"{file}: no generations found; the file is empty")
    return rows, FILE_SOURCE


def trace(
    ctx: typer.Context,
    index: Annotated[list[Path] | None, typer.Option(help="Index folder(s); default: the run's registered corpus.")] = None,
    corpus: Annotated[str | None, typer.Option(help="Registered corpus name (instead of --index).")] = None,
    run: Annotated[str | None, typer.Option(help="Trace the generations of this run.")] = None,
    generations: Annotated[Path | None, typer.Option(help="Or a JSONL/Parquet file with generation_id and text.")] = None,
    prompts: Annotated[str | None, typer.Option(help="Or the prompts of this setting themselves (chance level; "
                                                     "prompt + true continuation for source duplication).")] = None,
    mode: Annotated[str, typer.Option(help="mixed (default) or text span filter.")] = "mixed",
    workers: Annotated[int, typer.Option(help="Worker processes (each opens the index once).")] = 1,
    threads: Annotated[int, typer.Option(help="Threads per worker sharing one copy of its index. The searches, document windows, decoding, nv-recall, row keys and sampling run compiled without the GIL; building the output rows holds it: 2 threads give ~1.75x (BENCHMARKS.md). --workers scales further at one index mapping per process.")] = 1,
    batch_size: Annotated[int, typer.Option(help="Generations per lake partition (the unit of resuming).")] = 64,
    seed: Annotated[int, typer.Option(help="Document-sampling seed.")] = 0,
    nv_variant: Annotated[str, typer.Option(help="adaptive (default) or fixed nv-recall parameters.")] = "adaptive",
    executor: Annotated[str, typer.Option(help="local (processes on this machine) or ray (one actor per worker).")] = "local",
    address: Annotated[str | None, typer.Option(help="Ray cluster address (default: start a local Ray).")] = None,
) -> None:
    """Trace generations span by span; re-running the same command resumes where it stopped."""
    import os

    from ingest.corpora import corpus_of_index, corpus_row
    from ingest.errors import UserError
    from ingest.trace.params import TraceParams
    from ingest.trace.run import TraceJob, trace_generations

    limit = 4 * (os.cpu_count() or 1)
    if executor == "local" and workers > limit:  # each worker is a process holding the index's maps
        raise UserError(f"--workers {workers} is more than this machine can run ({os.cpu_count()} cores); "
                        f"use at most {limit}, or --executor ray for a cluster")
    lake = state(ctx).lake
    prompt_corpora: set[str] = set()
    if prompts is not None:
        if run is not None or generations is not None:
            raise UserError("pass exactly one of --run R, --generations FILE or --prompts SETTING")
        from ingest.prompts.traced_texts import prompt_texts

        gens, prompt_corpora = prompt_texts(lake, prompts)
        source = f"prompts:{prompts}"
        if not gens:
            raise UserError(f"the prompts of setting {prompts!r} have no text to trace (a prompt-free setting)")
    else:
        gens, source = load_generations(lake, run, generations)
    corpus_id = None
    if index:
        dirs = tuple(str(Path(d).resolve()) for d in index)
        corpus_id = corpus_of_index(lake, dirs)  # a registered index: the same pass as --corpus NAME gives
    else:
        name = corpus
        if name is None and run is not None:
            rr = [r for r in lake.read("corpora").to_pylist()
                  if r["corpus_id"] in {x["corpus_id"] for x in lake.read("runs").to_pylist() if x["run_id"] == run}]
            name = rr[0]["name"] if rr else None
        if name is None and len(prompt_corpora) == 1:
            rr = [r for r in lake.read("corpora").to_pylist() if r["corpus_id"] in prompt_corpora]
            name = rr[0]["name"] if rr else None
        if name is None:
            raise UserError("which index? pass --index DIR or --corpus NAME (the run has no registered corpus)")
        row = corpus_row(lake, name)
        dirs, corpus_id = tuple(row["index_dirs"]), row["corpus_id"]
    job = TraceJob(dirs, TraceParams(mode=mode, seed=seed, nv_variant=nv_variant), threads=threads)
    from ingest.executors import get_executor

    ex = get_executor(executor, workers=workers, **({"address": address} if executor == "ray" else {}))
    s = trace_generations(lake, job, gens, source, corpus_id=corpus_id, workers=workers, batch_size=batch_size,
                          executor=ex)
    rate = (s.n_generations / s.seconds) if s.seconds > 0 else 0.0
    console.print(f"traced {s.n_generations} generations ({s.n_skipped}/{s.n_batches} batches already done): "
                  f"{s.n_spans} spans, {s.n_documents} documents, {rate:,.1f} gen/s; trace {s.trace_id[:12]}")
