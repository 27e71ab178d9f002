"""Generation presets: LLMSurgeon's sampling as their code runs it, their prompt styles, and lmaudit's own
neutral prefixes, run through the CLI."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from ingest.corpora import register_corpus
from ingest.generate.presets import get_preset
from ingest.lake import Lake
from ingest.prompts.settings import llmsurgeon_prompt_list

from conftest import run_cli

# Copied by hand from Yaxin9Luo/LLMSurgeon (commit d9b76bc), baseline_method/src/labelshift/generate.py,
# NEUTRAL_PROMPTS (the list; it is repeated 10 times there), and the sampling every exp_scripts/*.sh run uses:
# --num_prompts 300 --max_new_tokens 512 with run_labelshift.py's defaults --gen_temperature 0.8 --top_p 0.9.
AUTHORS_NEUTRAL = [
    "Continue the passage:", "Write the next paragraph:", "The following text discusses:",
    "Consider the following passage:", "In this article, we explore:", "Here is a paragraph about:",
    "An overview of the topic:", "A short description:", "The statement is:", "This section covers:",
    "We now present:", "Background:", "Introduction:", "Main text:", "Details:", "Key ideas:", "Context:",
    "Notes:", "Title:", "Abstract:", "Overview:", "Observation:", "Conclusion:", "The text continues:",
    "Opening lines:", "Body paragraph:", "Further explanation:", "Elaboration:", "Clarification:", "Summary:",
    "Rationale:", "Motivation:", "Discussion:", " ", "\n", "\n\n",
]
AUTHORS_SAMPLING = {"temperature": 0.8, "top_p": 0.9, "max_new_tokens": 512, "num_prompts": 300}
# first and last prompt of each style list of the same file (36 each)
AUTHORS_STYLES = {
    "instructional": ("Explain the following concept in detail:", "Provide a detailed guideline on how to handle:"),
    "expository": ("Discuss the following topic in an expository manner:", "Provide a concept-focused explanation of:"),
    "conversational": ("Let's talk about the following topic:",
                       "What follow-up points would naturally come up when discussing:"),
    "coding": ("Write Python code to implement the following function:",
               "Provide a Python example that demonstrates the algorithm for:"),
}


def test_llmsurgeon_preset_is_the_authors_sampling() -> None:
    p = get_preset("llmsurgeon")
    assert p.settings == ("llmsurgeon_neutral",) and p.purpose == "mixture"
    assert (p.temperature, p.top_p, p.max_new_tokens) == (AUTHORS_SAMPLING["temperature"], AUTHORS_SAMPLING["top_p"],
                                                          AUTHORS_SAMPLING["max_new_tokens"])
    prompts = llmsurgeon_prompt_list("neutral")
    # (NEUTRAL_PROMPTS * 10)[:300], one generation each: the first 12 prompts 9 times, the other 24 eight times
    assert prompts == (AUTHORS_NEUTRAL * 10)[:AUTHORS_SAMPLING["num_prompts"]]
    counts = Counter(prompts)
    assert [counts[x] for x in AUTHORS_NEUTRAL] == [9] * 12 + [8] * 24
    assert p.n_samples * len(prompts) == 300


@pytest.mark.parametrize("style", sorted(AUTHORS_STYLES))
def test_style_prompt_lists_are_the_authors(style) -> None:
    prompts = llmsurgeon_prompt_list(style)
    assert len(prompts) == 300 and len(set(prompts)) == 36
    assert (prompts[0], prompts[35]) == AUTHORS_STYLES[style] and prompts[36] == prompts[0]
    assert get_preset("llmsurgeon", style).settings == (f"llmsurgeon_{style}",)


def test_unknown_style_or_style_on_another_preset_is_refused() -> None:
    from ingest.errors import UserError

    with pytest.raises(UserError, match="unknown style 'poetic'"):
        get_preset("llmsurgeon", "poetic")
    with pytest.raises(UserError, match="--style is for --preset llmsurgeon"):
        get_preset("neutral", "coding")


def test_llmsurgeon_preset_samples_the_authors_prompts_as_a_mixture_run(mini_stack, home) -> None:
    lake = Lake(home)
    register_corpus(lake, "mini", [mini_stack["index"]])
    run_cli("prompts", "build", "--corpus", "mini", "--setting", "llmsurgeon_neutral", "--setting", "neutral",
            home=home, check=True)
    rows = lake.read("prompts").to_pylist()
    authors = [r for r in rows if r["setting"] == "llmsurgeon_neutral"]
    assert len(authors) == 300 and Counter(r["text"] for r in authors)["Continue the passage:"] == 9
    ours = [r for r in rows if r["setting"] == "neutral"]
    assert len(ours) == 36 and {"Abstract:", "Title:", "\n"} <= {p["text"] for p in ours}
    out = run_cli("generate", "--model", str(mini_stack["model"]), "--corpus", "mini", "--preset", "llmsurgeon",
                  "--max-prompts", "3", "--run-prefix", "ls", home=home, check=True)
    assert "ls-llmsurgeon_neutral: 3 generations" in out.stdout  # one generation per prompt row
    out = run_cli("generate", "--model", str(mini_stack["model"]), "--corpus", "mini", "--preset", "neutral-prefixes",
                  "--max-prompts", "2", "--run-prefix", "ls", home=home, check=True)
    assert "ls-neutral: 18 generations" in out.stdout  # 2 prefixes x 9 samples
    runs = {r["setting"]: r for r in lake.read("runs").to_pylist()}
    for setting in ("llmsurgeon_neutral", "neutral"):
        run = runs[setting]
        assert (run["purpose"], run["temperature"], run["top_p"], run["max_new_tokens"]) == ("mixture", 0.8, 0.9, 512)
        assert json.loads(run["sampling_params"])["temperature"] == 0.8
    bad = run_cli("generate", "--model", str(mini_stack["model"]), "--corpus", "mini", "--preset", "fast", home=home)
    assert bad.returncode == 2 and "unknown preset 'fast'" in bad.stderr


def test_a_style_run_and_an_unknown_style_through_the_cli(mini_stack, home) -> None:
    lake = Lake(home)
    register_corpus(lake, "mini", [mini_stack["index"]])
    run_cli("prompts", "build", "--corpus", "mini", "--setting", "llmsurgeon_coding", home=home, check=True)
    out = run_cli("generate", "--model", str(mini_stack["model"]), "--corpus", "mini", "--preset", "llmsurgeon",
                  "--style", "coding", "--max-prompts", "2", "--run-prefix", "st", home=home, check=True)
    assert "st-llmsurgeon_coding: 2 generations" in out.stdout
    for args in (("--preset", "llmsurgeon", "--style", "poetic"), ("--style", "coding")):
        bad = run_cli("generate", "--model", str(mini_stack["model"]), "--corpus", "mini", *args, home=home)
        assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and bad.stderr.startswith("error: ")
    bad = run_cli("prompts", "build", "--corpus", "mini", "--setting", "llmsurgeon_poetic", home=home)
    assert bad.returncode == 2 and "unknown setting 'llmsurgeon_poetic'" in bad.stderr
