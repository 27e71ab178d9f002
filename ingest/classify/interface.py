"""The interface every domain-classifier backend implements, and the registry the backends add themselves to.

Kept apart from ingest/classify/backends.py (which finds, makes and reloads backends by name, importing the
built-in ones) so that a backend module imports only this one: no import circle between the registry's
users and the backends. How to write a backend: see ingest/classify/backends.py.
"""

from __future__ import annotations

import inspect
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ingest.registry import Registry

StepHook = Callable[[int, int], None] | None
BACKEND_FILE = "backend.json"

CLASSIFIER_BACKENDS: Registry[type[Backend]] = Registry("classifier backend")


def register_backend(cls: type[Backend]) -> type[Backend]:
    """Class decorator: make a backend available by its `name`."""
    return CLASSIFIER_BACKENDS.register()(cls)


class Backend(ABC):
    """Base class: subclasses take keyword parameters and store them under the same names."""

    name: ClassVar[str]

    def __init__(self, n_domains: int, seed: int = 0):
        self.n_domains = int(n_domains)
        self.seed = int(seed)

    def get_params(self) -> dict[str, Any]:
        names = [p for p in inspect.signature(type(self).__init__).parameters if p not in ("self", "n_domains", "seed")]
        return {p: getattr(self, p) for p in names}

    def fresh(self, seed: int | None = None) -> Backend:
        """An unfitted copy with the same parameters (one per cross-fitting fold)."""
        return type(self)(n_domains=self.n_domains, seed=self.seed if seed is None else seed, **self.get_params())

    def steps(self, n_texts: int) -> int:
        """Progress units that `fit` reports for n_texts training texts (1 = one tick at the end)."""
        return 1

    @abstractmethod
    def fit(self, texts: Sequence[str], labels: np.ndarray, on_step: StepHook = None) -> Backend:
        """Train on texts with domain indices 0..n_domains-1 (every domain present)."""

    @abstractmethod
    def logits(self, texts: Sequence[str], on_step: StepHook = None) -> np.ndarray:
        """(n, n_domains) float64 log-scores of a fitted backend."""

    @abstractmethod
    def save(self, path: Path) -> None:
        """Write everything needed to reload into the folder `path` (which exists and is empty)."""

    @classmethod
    @abstractmethod
    def load(cls, path: Path) -> Backend:
        """Reload what `save` wrote."""

    def _write_meta(self, path: Path, **extra: Any) -> None:
        meta = {"backend": self.name, "n_domains": self.n_domains, "seed": self.seed, "params": self.get_params(),
                **extra}
        (Path(path) / BACKEND_FILE).write_text(json.dumps(meta, indent=1, sort_keys=True, default=str))

    @staticmethod
    def _read_meta(path: Path) -> dict[str, Any]:
        return json.loads((Path(path) / BACKEND_FILE).read_text())


def softmax(z: np.ndarray) -> np.ndarray:
    z = np.asarray(z, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)
