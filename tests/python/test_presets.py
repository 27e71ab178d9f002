"""Generation presets: the neutral-prefix setting and LLMSurgeon's sampling recipe, run through the CLI."""

from __future__ import annotations

import json

from ingest.corpora import register_corpus
from ingest.lake import Lake

from conftest import run_cli


def test_llmsurgeon_preset_samples_the_neutral_prefixes_as_a_mixture_run(mini_stack, home) -> None:
    lake = Lake(home)
    register_corpus(lake, "mini", [mini_stack["index"]])
    run_cli("prompts", "build", "--corpus", "mini", "--setting", "neutral", home=home, check=True)
    prompts = [r for r in lake.read("prompts").to_pylist() if r["setting"] == "neutral"]
    assert len(prompts) == 36 and {"Abstract:", "Title:", "\n"} <= {p["text"] for p in prompts}
    out = run_cli("generate", "--model", str(mini_stack["model"]), "--corpus", "mini", "--preset", "llmsurgeon",
                  "--max-prompts", "2", "--run-prefix", "ls", home=home, check=True)
    assert "ls-neutral: 18 generations" in out.stdout  # 2 prefixes x 9 samples
    (run,) = lake.read("runs").to_pylist()
    assert (run["setting"], run["purpose"], run["temperature"], run["top_p"], run["max_new_tokens"]) == \
        ("neutral", "mixture", 0.8, 0.9, 512)
    assert json.loads(run["sampling_params"])["temperature"] == 0.8
    bad = run_cli("generate", "--model", str(mini_stack["model"]), "--corpus", "mini", "--preset", "fast", home=home)
    assert bad.returncode == 2 and "unknown preset 'fast'" in bad.stderr
