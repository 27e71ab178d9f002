"""SQL style: every dbt model and ready query passes SQLFluff (lowercase, CTEs, duckdb dialect)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlfluff.core import FluffConfig, Linter

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_models_and_queries_pass_sqlfluff() -> None:
    config = FluffConfig.from_path(str(REPO))
    paths = sorted([*REPO.glob("models/**/*.sql"), *REPO.glob("sql/*.sql"), *REPO.glob("macros/**/*.sql")])
    assert len(paths) > 100  # a glob that finds nothing would pass
    # two processes: pytest runs one test at a time, so the second core is idle otherwise (~40 s -> ~20 s)
    result = Linter(config=config).lint_paths(tuple(str(p) for p in paths), processes=2)
    problems = [f"{Path(path).relative_to(REPO)}:{v['start_line_no']} {v['code']} {v['description']}"
                for rec in result.as_records() for path in [rec["filepath"]] for v in rec["violations"]]
    assert not problems, "\n".join(problems)


def test_ready_queries_say_what_they_answer() -> None:
    for path in REPO.glob("sql/*.sql"):
        assert path.read_text().startswith("-- "), f"{path.name} needs a header comment saying what it answers"
