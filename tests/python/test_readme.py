"""The README's command blocks run as written: every ```bash block marked `<!-- readme-test -->` in README.md
runs with bash (errexit, pipefail) from the repository root, against a warehouse made by `lmaudit demo --size
tiny`, as a new user would run it after the demo. Long recipes (the mixture sandbox trains a model for ~6
minutes) are not marked; they were run by hand (BENCHMARKS.md, README)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_cli, seed_tiny_sandbox

MARK = "<!-- readme-test -->"
_BLOCK = re.compile(r"^" + re.escape(MARK) + r"\n```bash\n(.*?)^```$", re.M | re.S)


def marked_blocks(text: str) -> list[str]:
    """The bodies of the ```bash blocks that directly follow the marker line."""
    return [m.group(1) for m in _BLOCK.finditer(text)]


def test_marked_blocks_are_found_and_every_marker_is_followed_by_a_bash_block() -> None:
    text = (REPO / "README.md").read_text()
    blocks = marked_blocks(text)
    assert len(blocks) == text.splitlines().count(MARK) >= 2  # a marker line not before a bash block tests nothing
    assert all(b.strip() and "lmaudit" in b for b in blocks)
    assert marked_blocks(f"x\n{MARK}\n```bash\necho a\n```\n```bash\necho b\n```\n") == ["echo a\n"]


@pytest.mark.slow
def test_marked_readme_blocks_run_after_the_tiny_demo(tmp_path: Path, tiny_sandbox: Path) -> None:
    home = tmp_path / "warehouse"
    seed_tiny_sandbox(tiny_sandbox, home)  # the built sandbox: its stage cache hits (the build is conftest's)
    demo = run_cli("demo", "--size", "tiny", home=home)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    env = {**os.environ, "LMAUDIT_HOME": str(home), "COLUMNS": "200",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for block in marked_blocks((REPO / "README.md").read_text()):
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, f"README block failed ({proc.returncode}):\n{block}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert (home / "exports" / "lmaudit-published.duckdb").is_file()
    assert (home / "exports" / "fct_propensity.csv").is_file()
