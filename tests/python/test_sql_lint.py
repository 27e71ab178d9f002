"""SQL style: every dbt model and ready query passes SQLFluff (lowercase, CTEs, duckdb dialect)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlfluff
from sqlfluff.core import FluffConfig

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_models_and_queries_pass_sqlfluff() -> None:
    config = FluffConfig.from_path(str(REPO))
    problems = []
    for path in sorted([*REPO.glob("models/**/*.sql"), *REPO.glob("sql/*.sql"), *REPO.glob("macros/**/*.sql")]):
        for v in sqlfluff.lint(path.read_text(), config=config):
            problems.append(f"{path.relative_to(REPO)}:{v['start_line_no']} {v['code']} {v['description']}")
    assert not problems, "\n".join(problems)


def test_ready_queries_say_what_they_answer() -> None:
    for path in REPO.glob("sql/*.sql"):
        assert path.read_text().startswith("-- "), f"{path.name} needs a header comment saying what it answers"
