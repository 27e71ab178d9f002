"""Domain-classifier backends behind one interface, with a registry (name -> class).

A backend maps texts to K unnormalised log-scores (logits; any per-row shift is allowed: only the softmax
is used). Cross-fitting, calibration, storage in the lake and scoring of runs live in `ingest.classify.train`
and `ingest.classify.score` and work with any registered backend:

    @register_backend
    class MyBackend(Backend):
        name = "mine"
        def fit(self, texts, labels, on_step=None): ...
        def logits(self, texts, on_step=None): ...
        def save(self, path): ...
        @classmethod
        def load(cls, path): ...

Parameters are keyword arguments of `__init__` (besides `n_domains` and `seed`); `get_params()` returns them
for the `classifiers.params` JSON. `on_step(done, total)` lets a backend drive a progress bar.
"""

from __future__ import annotations

import inspect
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ingest.errors import UserError
from ingest.registry import Registry

StepHook = Callable[[int, int], None] | None
BACKEND_FILE = "backend.json"

CLASSIFIER_BACKENDS: Registry[type[Backend]] = Registry("classifier backend")


def register_backend(cls: type[Backend]) -> type[Backend]:
    """Class decorator: make a backend available by its `name`."""
    return CLASSIFIER_BACKENDS.register()(cls)


def list_backends() -> list[str]:
    _load_builtin()
    return CLASSIFIER_BACKENDS.names()


def backend_class(name: str) -> type[Backend]:
    _load_builtin()
    return CLASSIFIER_BACKENDS.get(name)


def make_backend(name: str, n_domains: int, seed: int = 0, **params: Any) -> Backend:
    """A fresh, unfitted backend; unknown parameters are a `UserError` naming the allowed ones."""
    _load_builtin()
    return CLASSIFIER_BACKENDS.create(name, fixed=("n_domains", "seed"), n_domains=n_domains, seed=seed, **params)


def load_backend(path: Path) -> Backend:
    """Reload a saved backend from its folder (the class is named in backend.json)."""
    meta_path = Path(path) / BACKEND_FILE
    if not meta_path.exists():
        raise UserError(f"{path}: no saved classifier here ({BACKEND_FILE} missing); retrain with "
                        "`lmaudit classify train`")
    meta = json.loads(meta_path.read_text())
    return backend_class(meta["backend"]).load(Path(path))


def _load_builtin() -> None:
    # The built-in backends register themselves on import.
    from ingest.classify import tfidf, transformer  # noqa: F401


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
