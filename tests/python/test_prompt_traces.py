"""`lmaudit trace --prompts SETTING`: which texts a prompt set gives the tracer (ids, texts), and its one-line
errors, checked against prompts written by hand."""

from __future__ import annotations

import pytest
from conftest import run_cli

from ingest.errors import UserError
from ingest.lake import Lake
from ingest.prompts.traced_texts import prompt_texts


def _lake(tmp_path) -> Lake:
    lake = Lake(tmp_path / "wh")
    lake.init()
    lake.write("prompts", "p", [
        {"prompt_id": "b", "setting": "prefix", "text": "Once upon", "true_continuation": " a time", "corpus_id": "c1"},
        {"prompt_id": "a", "setting": "prefix", "text": "def f(", "true_continuation": "x):", "corpus_id": "c1"},
        {"prompt_id": "g", "setting": "generic", "text": "Tell me", "true_continuation": None, "corpus_id": "c1"},
        {"prompt_id": "u", "setting": "unconditional", "text": "", "true_continuation": None, "corpus_id": "c1"},
    ])
    return lake


def test_prompt_texts_and_source_sequences(tmp_path) -> None:
    lake = _lake(tmp_path)
    texts, corpora = prompt_texts(lake, "prefix")
    assert texts == [("prompt:a", "def f("), ("prompt:b", "Once upon"),
                     ("source:a", "def f(x):"), ("source:b", "Once upon a time")]
    assert corpora == {"c1"}
    assert prompt_texts(lake, "generic")[0] == [("prompt:g", "Tell me")]
    assert prompt_texts(lake, "unconditional")[0] == []  # nothing to trace
    with pytest.raises(UserError, match="no prompts of setting 'specific'.*generic, prefix, unconditional"):
        prompt_texts(lake, "specific")


@pytest.mark.parametrize("args,message", [
    (["--prompts", "specific"], "no prompts of setting 'specific'"),
    (["--prompts", "unconditional"], "have no text to trace"),
    (["--prompts", "prefix", "--run", "r1"], "pass exactly one of --run R, --generations FILE or --prompts SETTING"),
])
def test_trace_prompts_errors_are_one_line(tmp_path, args, message) -> None:
    _lake(tmp_path)
    p = run_cli("trace", *args, home=tmp_path / "wh")
    assert p.returncode == 2 and "Traceback" not in p.stderr + p.stdout, p.stderr
    assert message in " ".join(p.stderr.split()), p.stderr
