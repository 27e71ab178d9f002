"""Training checkpoints as model folders: which step a local model folder is, and the folders of a run.

A checkpoint is an ordinary model folder (it loads with ``from_pretrained``, so generate, trace, classify and
score take it as `--model PATH` like any model) with one extra file, ``checkpoint.json``
(``{"step": 200, "steps": 1200}``). The sandbox trainer writes them under ``<model>/checkpoints/step-NNNNNN/``
and, when it keeps checkpoints, stamps the final model too (step = steps), so a trajectory ends at the model
itself. A run of such a folder records ``revision = "step<N>"`` (the hub's convention for training
checkpoints, e.g. Pythia's ``step1000``); the trajectory marts read the step from there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

STAMP = "checkpoint.json"
SUBDIR = "checkpoints"


@dataclass(frozen=True)
class Checkpoint:
    step: int
    path: Path


def write_stamp(folder: Path, step: int, steps: int) -> None:
    (Path(folder) / STAMP).write_text(json.dumps({"step": int(step), "steps": int(steps)}) + "\n", encoding="utf-8")


def checkpoint_dir(model_dir: Path, step: int) -> Path:
    return Path(model_dir) / SUBDIR / f"step-{step:06d}"


def step_of(model: str) -> int | None:
    """The training step of a local checkpoint folder (its checkpoint.json), else None (a hub name, a model
    folder without checkpoints, an unreadable stamp)."""
    try:
        return int(json.loads((Path(model) / STAMP).read_text(encoding="utf-8"))["step"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def revision_of(model: str) -> str | None:
    """The revision a run of `model` records: ``step<N>`` for a checkpoint folder, else None."""
    step = step_of(model)
    return None if step is None else f"step{step}"


def list_checkpoints(model_dir: Path) -> list[Checkpoint]:
    """Every stamped checkpoint of `model_dir` in step order, the model itself last when it is stamped."""
    found = [Checkpoint(s, p) for p in sorted((Path(model_dir) / SUBDIR).glob("step-*"))
             if (s := step_of(str(p))) is not None]
    final = step_of(str(model_dir))
    if final is not None:
        found.append(Checkpoint(final, Path(model_dir)))
    return sorted(found, key=lambda c: c.step)
