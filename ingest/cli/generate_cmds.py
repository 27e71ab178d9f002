"""`lmaudit generate`: sample a model in the PropMe settings into the lake."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from ingest.cli.context import console, state


def generate(
    ctx: typer.Context,
    model: Annotated[str, typer.Option(help="Model folder (save_pretrained) or hub name.")],
    corpus: Annotated[str, typer.Option(help="Registered training corpus whose prompts to use.")],
    settings: Annotated[str, typer.Option(
        help="Comma-separated settings: unconditional, minimal_cue, generic, specific, prefix.",
        show_default="all five")] = "unconditional,minimal_cue,generic,specific,prefix",
    backend: Annotated[str, typer.Option(help="hf (transformers, CPU default) or vllm (GPU).")] = "hf",
    n_samples: Annotated[int, typer.Option(help="Samples per prompt (generic, specific, prefix).")] = 10,
    n_generations: Annotated[int, typer.Option(
        help="Generations of the unconditional setting (minimal_cue: one per cue word drawn by `prompts build "
             "--n`).")] = 10_000,
    max_prompts: Annotated[int | None, typer.Option(help="Use at most this many prompts per setting.")] = None,
    prompt_set: Annotated[str | None, typer.Option(help="Prompt set id (prefix) to use; default: the latest built.")] = None,
    temperature: Annotated[float, typer.Option(help="Sampling temperature (0: greedy).")] = 0.7,
    top_p: Annotated[float, typer.Option(help="Nucleus sampling: sample from the most likely tokens whose "
                                              "probabilities add up to this (1.0: all tokens).")] = 0.95,
    max_new_tokens: Annotated[int, typer.Option(help="Tokens generated at most per sample (fewer when it ends "
                                                     "with the end-of-text token or reaches the model's context).")] = 256,
    seed_base: Annotated[int, typer.Option(help="Sample g uses seed seed_base + g.")] = 42,
    batch_size: Annotated[int, typer.Option(help="Samples per forward pass (hf).")] = 32,
    threads: Annotated[int, typer.Option(help="torch threads (hf); 1 is fastest for small models on a busy machine.")] = 1,
    run_prefix: Annotated[str | None, typer.Option(help="Run ids are PREFIX-SETTING (default: model folder name).")] = None,
    purpose: Annotated[str, typer.Option(help="propme (the PropMe marts use the run), mixture (a neutral run for "
                                              "the mixture estimate, left out of PropMe marts) or other.")] = "propme",
    preset: Annotated[str | None, typer.Option(
        help="A named recipe that sets the settings, sampling, sample counts and purpose: propme (the defaults), "
             "neutral (unconditional at temperature 1.0, 300 samples, for the mixture estimate), llmsurgeon "
             "(the LLMSurgeon code's sampling: their 36 neutral prompts cut to 300, temperature 0.8, top-p 0.9, 512 "
             "tokens; build them with `lmaudit prompts build --setting llmsurgeon_neutral`) or neutral-prefixes "
             "(lmaudit's 36 prefixes, setting neutral, same sampling, 9 each). It replaces those options.")] = None,
    style: Annotated[str | None, typer.Option(
        help="With --preset llmsurgeon: the authors' prompt style (Table 5): neutral, instructional, expository, "
             "conversational, coding or category; the setting is llmsurgeon_<style>.")] = None,
    executor: Annotated[str, typer.Option(help="local (this machine) or ray (a Ray cluster).")] = "local",
    workers: Annotated[int, typer.Option(help="Workers (processes or Ray actors), each loading the model.")] = 1,
    address: Annotated[str | None, typer.Option(help="Ray cluster address (default: start a local Ray).")] = None,
    device: Annotated[str, typer.Option(help="hf: auto (cuda when torch sees a GPU, else cpu), cpu, cuda or cuda:N.")] = "auto",
    dtype: Annotated[str, typer.Option(help="auto (float32 on CPU; bfloat16, or float16 without it, on a GPU), "
                                            "float32, bfloat16 or float16. hf, and vllm unless --engine-arg dtype=...")] = "auto",
    gpus_per_worker: Annotated[float, typer.Option(help="GPUs each Ray actor reserves (--executor ray); for vllm at "
                                                        "least its tensor_parallel_size.")] = 0.0,
    estimate: Annotated[bool, typer.Option("--estimate/--no-estimate", help="Before starting, time one small "
                                                                          "batch (a few seconds) to estimate the "
                                                                          "whole run's duration.")] = True,
    engine_arg: Annotated[list[str] | None, typer.Option(
        help="KEY=VALUE passed to vllm.LLM (repeatable). Numbers parse as numbers, true/false as booleans, "
             "none as None, JSON lists as lists, the rest as text: tensor_parallel_size=2, max_model_len=4096, "
             "gpu_memory_utilization=0.5, enforce_eager=true, dtype=bfloat16. On CPU machines "
             "gpu_memory_utilization is the share of RAM vLLM reserves.")] = None,
) -> None:
    """Generate continuations; re-running the same command resumes an interrupted run."""
    from pathlib import Path

    from ingest.corpora import corpus_id_for, corpus_row
    from ingest.errors import UserError
    from ingest.generate.backends import DTYPES, SamplingConfig, driver_backend, parse_engine_args, resolve_device
    from ingest.generate.plan import prompt_units
    from ingest.generate.runner import RunSpec, run_generation
    from ingest.lake import ALL_SETTINGS

    lake = state(ctx).lake
    if _path_like(model) and not Path(model).expanduser().exists():
        raise UserError(f"no model folder at {Path(model).expanduser().resolve()}; pass a folder written by "
                        "save_pretrained, or a hub name such as gpt2 or EleutherAI/pythia-160m")
    wanted = [s.strip() for s in settings.split(",") if s.strip()]
    if style is not None and preset is None:
        raise UserError("--style needs --preset llmsurgeon")
    if preset is not None:
        from ingest.generate.presets import get_preset

        p = get_preset(preset, style)
        wanted, temperature, top_p, max_new_tokens = list(p.settings), p.temperature, p.top_p, p.max_new_tokens
        n_samples, n_generations, purpose = p.n_samples, p.n_generations, p.purpose
    for s in wanted:
        if s not in ALL_SETTINGS:
            raise UserError(f"unknown setting {s!r}; choose from {', '.join(ALL_SETTINGS)}")
    if engine_arg and backend != "vllm":
        raise UserError("--engine-arg is for --backend vllm; the hf backend takes --device, --dtype, --batch-size "
                        "and --threads")
    if dtype not in DTYPES:
        raise UserError(f"--dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    if gpus_per_worker and executor != "ray":
        raise UserError("--gpus-per-worker is for --executor ray; a local run uses --device")
    if backend == "hf":
        resolved = resolve_device(device)  # a bad --device fails before the corpus or model is looked at
        kwargs = {"batch_size": batch_size, "threads": threads, "device": device, "dtype": dtype}
        engine = {"device": resolved, "dtype": dtype}
    else:
        kwargs = parse_engine_args(engine_arg or [])
        if dtype != "auto":
            kwargs.setdefault("dtype", dtype)
        if executor == "ray":  # one engine per actor, on exactly the GPUs the actor reserves
            from ingest.generate.placement import check_ray_placement

            check_ray_placement(kwargs, gpus_per_worker)
        engine = dict(kwargs)
    corpus_row(lake, corpus)
    sampling = SamplingConfig(temperature, top_p, max_new_tokens)
    from ingest.executors import get_executor

    ex = None
    if executor != "local" or workers > 1:
        # workers (Ray actors, local processes) are kept across the settings: one model load (or vLLM engine) per
        # worker for the whole command
        extra = {"address": address, "num_gpus_per_worker": gpus_per_worker} if executor == "ray" else {}
        ex = get_executor(executor, workers=workers, keep_workers=True, **extra)
    be = driver_backend(backend, model, in_process=ex is None, **kwargs)  # with workers: the tokenizer only
    prefix = run_prefix or Path(model).name
    # every setting's prompts first: a setting without prompts stops the command before any generation
    units_of = {s: prompt_units(lake, corpus, s, be, n_samples, n_generations, max_prompts, prompt_set)
                for s in wanted}
    _print_plan(units_of, be, sampling, estimate and ex is None, batch_size if backend == "hf" else None)
    try:
        for s in wanted:
            units = units_of[s]
            spec = RunSpec(f"{prefix}-{s}", model, s, backend, corpus_id_for(corpus), sampling, seed_base,
                           purpose=purpose, engine=json.dumps(engine, sort_keys=True, default=str))
            r = run_generation(lake, be, spec, units, executor=ex, backend_kwargs=kwargs)
            rate = r.tokens / r.seconds if r.seconds > 0 else 0
            console.print(f"{r.run_id}: {r.n_generations} generations ({r.n_chunks_skipped}/{r.n_chunks} chunks "
                          f"already done), {rate:,.0f} tokens/s")
    finally:
        if hasattr(ex, "close"):
            ex.close()



def _print_plan(units_of, backend, sampling, measure: bool, batch_size: int | None) -> None:
    """The planned work and a duration estimate, before the first sample (ingest/generate/estimate.py)."""
    from ingest.generate.estimate import PROBE_SAMPLES, Rate, describe, measure_rate, plan

    first = next((u[0] for u in units_of.values() if u), None)
    if measure and first is not None:
        rate = measure_rate(backend, first, sampling, min(batch_size or PROBE_SAMPLES, PROBE_SAMPLES))
    else:
        rate = Rate(None, "not measured: --no-estimate" if not measure else "not measured with workers")
    for line in describe(plan(units_of, sampling.max_new_tokens, rate)):
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def _path_like(model: str) -> bool:
    """A folder, not a hub name: absolute, ~ or ./ ../ relative, or more than one '/' (hub ids are NAME or
    ORG/NAME). Only a path-like argument that does not exist is refused here; a hub name is the backend's to
    resolve."""
    return model.startswith(("/", "~", "./", "../")) or model in (".", "..") or model.count("/") > 1
