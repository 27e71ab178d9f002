"""`lmaudit generate` says what it will do and how long it may take before it starts, and prints progress
lines when its output is not a terminal (a log file, a pipe: rich's bar is invisible there).

Oracles: the plan's counts follow from the options (one prompt x N generations, 10 prompts x 2 samples);
the duration is the token bound over the measured rate, checked against a backend whose speed is fixed by
construction; the samples of a run with the probe equal those of a run without it (the probe draws from its
own seeds).
"""

from __future__ import annotations

import time

import pytest

from conftest import run_cli
from ingest.corpora import register_corpus
from ingest.generate.backends import GenOutput, SamplingConfig, get_backend
from ingest.generate.estimate import describe, duration, measure_rate, plan
from ingest.generate.plan import prompt_units
from ingest.generate.runner import PromptUnit, RunSpec, run_generation
from ingest.lake import Lake


class _Clockwork:
    """A backend that takes 0.01 s per generated token and always generates max_new_tokens."""

    bos_id = 0

    def generate(self, requests, sampling):
        time.sleep(0.01 * len(requests) * sampling.max_new_tokens)
        return [GenOutput(r.key, tuple([1] * sampling.max_new_tokens), "x", "length") for r in requests]


def test_plan_counts_and_the_estimate_from_a_measured_rate() -> None:
    units = {"unconditional": [PromptUnit("p0", (0,), 300)],
             "minimal_cue": [PromptUnit(f"p{i}", (0, 5), 2) for i in range(10)]}
    rate = measure_rate(_Clockwork(), units["unconditional"][0], SamplingConfig(max_new_tokens=256), batch=4,
                        tokens=5)
    assert rate.tokens_per_second == pytest.approx(100, rel=0.35)  # 0.01 s a token; sleep is never shorter
    p = plan(units, 256, rate)
    assert p.n_generations == 320 and p.max_tokens == 320 * 256
    assert p.seconds == pytest.approx(320 * 256 / rate.tokens_per_second)
    text = "\n".join(describe(p))
    assert "320 generations of at most 256 new tokens" in text and "minimal_cue 20 (10 prompts)" in text
    assert "estimate: at most ~" in text and "measured on 4 samples x 5 tokens" in text
    assert duration(8100) == "2 h 15 min" and duration(600) == "10 min" and duration(42) == "42 s"


def test_progress_lines_when_stdout_is_not_a_terminal(mini_stack, home, capsys) -> None:
    from ingest.prompts.build import build_prompt_set

    lake = Lake(home)
    register_corpus(lake, "mini", [mini_stack["index"]])
    build_prompt_set(lake, "mini", "minimal_cue", n=10, progress=False)
    be = get_backend("hf", str(mini_stack["model"]), batch_size=8)
    units = prompt_units(lake, "mini", "minimal_cue", be, n_samples=2, n_generations=0)
    spec = RunSpec("r", "mini", "minimal_cue", "hf", None, SamplingConfig(max_new_tokens=6), chunk_size=4)
    capsys.readouterr()
    run_generation(lake, be, spec, units, progress=True, progress_every_s=0)
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("generate r:")]
    assert "chunks of up to 4 (0 already done)" in lines.pop(0)  # said at the start: chunks can take long
    total = sum(u.n_samples for u in units)
    want = [f"{min(k, total)}/{total}" for k in range(4, total + 4, 4)]  # a line per chunk of 4 (every 0 s)
    assert len(want) >= 2 and [x.split(":")[1].split()[0] for x in lines] == want
    assert "tokens/s" in lines[0] and "left" in lines[0] and "left" not in lines[-1]
    # the probe does not change the samples: they depend only on their prompt and seed
    before = sorted((r["generation_id"], r["text"]) for r in lake.read("generations").to_pylist())
    measure_rate(be, units[0], spec.sampling)
    for part in lake.partitions("generations"):
        lake.delete("generations", part)
    lake.delete("runs", lake.partitions("runs")[0])
    run_generation(lake, be, spec, units, progress=False)
    assert sorted((r["generation_id"], r["text"]) for r in lake.read("generations").to_pylist()) == before


@pytest.mark.slow
def test_generate_prints_the_plan_before_it_starts(mini_stack, home) -> None:
    register_corpus(Lake(home), "mini", [mini_stack["index"]])
    run_cli("prompts", "build", "--corpus", "mini", "--setting", "unconditional", home=home, check=True)
    p = run_cli("generate", "--model", str(mini_stack["model"]), "--corpus", "mini", "--settings", "unconditional",
                "--n-generations", "12", "--max-new-tokens", "4", "--run-prefix", "plan", home=home, check=True)
    out = p.stdout.splitlines()
    assert out[0].startswith("plan: 12 generations of at most 4 new tokens (48 tokens at most): unconditional 12")
    assert out[1].startswith("estimate: at most ~") and "tokens/s" in out[1]
    assert any(x.startswith("generate plan-unconditional: 12/12 generations") for x in out)
    p = run_cli("generate", "--model", str(mini_stack["model"]), "--corpus", "mini", "--settings", "unconditional",
                "--n-generations", "12", "--max-new-tokens", "4", "--run-prefix", "plan2", "--no-estimate",
                home=home, check=True)
    assert "estimate: none before the start (not measured: --no-estimate)" in p.stdout
