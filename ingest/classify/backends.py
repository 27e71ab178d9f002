"""Domain-classifier backends behind one interface, with a registry (name -> class).

A backend maps texts to K unnormalised log-scores (logits; any per-row shift is allowed: only the softmax is
used). The interface (`Backend`) and the registry live in ingest/classify/interface.py, which is all a backend
module imports; this module finds, makes and reloads backends by name. Cross-fitting, calibration, storage in the lake and scoring of runs live in `ingest.classify.train`
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

import json
from pathlib import Path
from typing import Any

from ingest.classify.interface import (  # noqa: F401  (re-exported: the names users of this module import)
    BACKEND_FILE,
    CLASSIFIER_BACKENDS,
    Backend,
    StepHook,
    register_backend,
    softmax,
)
from ingest.errors import UserError


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
