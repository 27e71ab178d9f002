"""The main job on the embedded sandbox: sandbox -> prompts -> generate -> trace -> mixture classifier -> dbt build.

Every step is cached or resumable, so `lmaudit demo` can be interrupted and re-run: the sandbox build is
cached by its parameters, prompts are rebuilt idempotently, generation and tracing skip finished chunks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from rich.console import Console

from ingest.lake import SETTINGS, Lake


@dataclass(frozen=True)
class DemoPlan:
    size: str
    n_prompts: int
    n_samples: int
    n_unconditional: int
    max_new_tokens: int
    n_reference: int  # held-out reference documents per domain for the mixture classifier


DEMO_CLASSIFIER = "sandbox-tfidf"

PLANS = {
    "tiny": DemoPlan("tiny", n_prompts=6, n_samples=2, n_unconditional=20, max_new_tokens=64, n_reference=40),
    "small": DemoPlan("small", n_prompts=30, n_samples=3, n_unconditional=60, max_new_tokens=128, n_reference=100),
    "default": DemoPlan("default", n_prompts=40, n_samples=4, n_unconditional=300, max_new_tokens=128,
                        n_reference=150),
}


def data_file(name: str) -> Path:
    return Path(str(resources.files("ingest.data") / name))


def run_demo(home: Path, size: str = "default", console: Console | None = None, progress: bool = True,
             index_tokenizer: str = "model", threads: int = 1) -> dict:
    """Run the demo; `index_tokenizer="llama-style"` traces against a Llama-2-style index of the same corpus
    (the model keeps its own tokenizer), with its own run ids (`sandbox-<size>-llama-<setting>`).

    `threads`: torch threads for training and generation. 1 (default) gives the same weights on every
    machine and never meets the slowdown of two OpenMP threads on busy cores; 2 on an idle 2-core machine
    trains ~1.7x faster (BENCHMARKS.md), with weights of its own (the sandbox cache keys on it, so changing
    it retrains the model)."""
    from ingest.build import build
    from ingest.classify.score import score_runs
    from ingest.classify.train import train_classifier
    from ingest.corpora import corpus_id_for, corpus_row
    from ingest.generate.backends import SamplingConfig, get_backend
    from ingest.generate.plan import prompt_units
    from ingest.generate.runner import RunSpec, run_generation
    from ingest.lake.runs import run_texts
    from ingest.prompts.build import build_prompt_set
    from ingest.sandbox.register import build_and_register, import_sandbox_references
    from ingest.trace.params import TraceParams
    from ingest.trace.run import TraceJob, trace_generations

    console = console or Console()
    plan = PLANS[size]
    lake = Lake(home)
    lake.init()
    timings: dict[str, float] = {}

    def step(name: str):
        console.print(f"[bold cyan]>[/] {name}")
        return time.perf_counter()

    t = step(f"sandbox ({size}): corpus, tokenizer, index, tiny GPT-2")
    from ingest.sandbox.sizes import get_size

    sandbox = get_size(size)
    if threads != sandbox.threads:
        sandbox = sandbox.replace(threads=threads)
    paths, corpus = build_and_register(lake, home, sandbox, progress=progress, index_tokenizer=index_tokenizer)
    prefix = f"sandbox-{size}" + ("-llama" if index_tokenizer == "llama-style" else "")
    timings["sandbox"] = time.perf_counter() - t

    t = step("prompts for the five settings")
    generic = data_file("generic_en.txt")
    for s in SETTINGS:
        if s == "specific":  # sentences of held-out files closest to the training data (lmaudit prompts specific)
            from ingest.prompts.specific.pipeline import SpecificRequest, build_specific_prompts
            from ingest.sandbox.register import write_specific_candidates

            req = SpecificRequest(write_specific_candidates(paths), generic, n=plan.n_prompts, source_field="domain")
            build_specific_prompts(lake, corpus, req, progress=progress)
        else:
            # minimal_cue draws one cue word per generation: as many draws as the prompted settings' generations
            n = plan.n_prompts * plan.n_samples if s == "minimal_cue" else plan.n_prompts
            build_prompt_set(lake, corpus, s, n=n, file=generic if s == "generic" else None, progress=progress)
    timings["prompts"] = time.perf_counter() - t

    t = step("generate (transformers backend)")
    be = get_backend("hf", str(paths.model_dir), batch_size=32, threads=threads)
    sampling = SamplingConfig(max_new_tokens=plan.max_new_tokens)
    run_ids = []
    for s in SETTINGS:
        units = prompt_units(lake, corpus, s, be, plan.n_samples, plan.n_unconditional)
        spec = RunSpec(f"{prefix}-{s}", str(paths.model_dir), s, "hf", corpus_id_for(corpus), sampling)
        run_generation(lake, be, spec, units, progress=progress)
        run_ids.append(spec.run_id)
    # neutral sampling for the mixture estimate: temperature 1.0, top-p 1.0 (at 0.7 the model over-produces
    # its most likely kind of document; BENCHMARKS.md, mixture sandbox). Setting `unconditional`, its own run.
    neutral = RunSpec(f"{prefix}-neutral", str(paths.model_dir), "unconditional", "hf", corpus_id_for(corpus),
                      SamplingConfig(temperature=1.0, top_p=1.0, max_new_tokens=plan.max_new_tokens),
                      purpose="mixture")  # not a PropMe run: the PropMe marts leave it out
    run_generation(lake, be, neutral, prompt_units(lake, corpus, "unconditional", be, 1, plan.n_unconditional),
                   progress=progress)
    run_ids.append(neutral.run_id)
    timings["generate"] = time.perf_counter() - t

    t = step("trace every generation against the training corpus")
    dirs = tuple(corpus_row(lake, corpus)["index_dirs"])
    job = TraceJob(dirs, TraceParams())
    for rid in run_ids:
        trace_generations(lake, job, run_texts(lake, rid), f"run:{rid}", corpus_id=corpus_id_for(corpus),
                          progress=progress)
    from ingest.prompts.traced_texts import prompt_texts

    for s in SETTINGS:  # the prompts themselves: chance level, and the source sequences of prefix prompts
        texts = prompt_texts(lake, s)[0]
        if texts:
            trace_generations(lake, job, texts, f"prompts:{s}", corpus_id=corpus_id_for(corpus), progress=progress)
    from ingest.provenance.run import run_provenance

    run_provenance(lake, progress=progress)  # licences of reproduced documents, personal data (docs/provenance.md)
    timings["trace"] = time.perf_counter() - t

    t = step("mixture: held-out reference documents, TF-IDF domain classifier, score the neutral samples")
    from ingest.classify.score import is_scored

    if is_scored(lake, DEMO_CLASSIFIER, neutral.run_id):  # deterministic, and the texts are unchanged: reuse it
        console.print("  cached: classifier trained and samples scored in an earlier run")
    else:
        from ingest.classify.score import load_classifier
        from ingest.errors import UserError

        try:  # the other index variant of this demo trained it on the same references: reuse, keep its scores
            load_classifier(lake, DEMO_CLASSIFIER)
        except UserError:
            import_sandbox_references(lake, paths, f"sandbox-{size}", per_domain=plan.n_reference)
            train_classifier(lake, backend="tfidf", name=DEMO_CLASSIFIER, progress=progress)
        score_runs(lake, [neutral.run_id], classifier=DEMO_CLASSIFIER, progress=progress)
    timings["classify"] = time.perf_counter() - t

    t = step("dbt build (metrics, mixture estimates, tests)")
    result = build(home, progress=progress)
    timings["build"] = time.perf_counter() - t
    console.print(result.summary())
    return {"timings": timings, "build": result, "runs": run_ids, "corpus": corpus}
