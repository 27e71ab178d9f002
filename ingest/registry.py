"""One registry for every pluggable piece: executors, generation backends, classifier backends, mixture
estimators and prompt settings.

Why one: each kind used to keep its own dict with its own spelling of "unknown name" and its own way of
loading optional modules. Here an entry is either registered eagerly (a decorator on the class or factory)
or lazily as ``"module:attribute"`` (as lm-evaluation-harness does), so that asking for the list of names
never imports torch, vllm or ray, and an unknown name is always the same one-line `UserError`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from ingest.errors import UserError

T = TypeVar("T")


class Registry(Generic[T]):
    """Names -> objects (classes or factories) of one kind, e.g. ``Registry("mixture estimator")``."""

    def __init__(self, kind: str, sort_names: bool = False) -> None:
        self.kind = kind
        self.sort_names = sort_names
        self._entries: dict[str, T | str] = {}

    def register(self, name: str | None = None) -> Callable[[T], T]:
        """Decorator: ``@reg.register("hf")``, or ``@reg.register()`` to use the object's `name` attribute."""
        def deco(obj: T) -> T:
            key = name if name is not None else getattr(obj, "name")
            self._entries[key] = obj
            return obj
        return deco

    def add(self, name: str, obj: T) -> T:
        self._entries[name] = obj
        return obj

    def remove(self, name: str) -> None:
        self._entries.pop(name, None)

    def lazy(self, name: str, target: str) -> None:
        """Register ``"package.module:attribute"``, imported on first `get`."""
        self._entries[name] = target

    def names(self) -> list[str]:
        return sorted(self._entries) if self.sort_names else list(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def get(self, name: str) -> T:
        if name not in self._entries:
            raise UserError(f"unknown {self.kind} {name!r}; choose one of {', '.join(self.names())}")
        entry = self._entries[name]
        if isinstance(entry, str):
            module, _, attr = entry.partition(":")
            entry = getattr(importlib.import_module(module), attr)
            self._entries[name] = entry
        return entry  # type: ignore[return-value]

    def create(self, name: str, *args: Any, fixed: tuple[str, ...] = (), **params: Any) -> Any:
        """Call the entry with `params`, refusing parameters its signature does not take (one line, naming
        the ones it does). `fixed` names parameters the caller supplies itself (not offered to users)."""
        obj = self.get(name)
        check_params(self.kind, name, obj, params, fixed)
        return obj(*args, **params)


def check_params(kind: str, name: str, obj: Any, params: Mapping[str, Any], fixed: tuple[str, ...] = ()) -> None:
    target = obj.__init__ if inspect.isclass(obj) else obj
    sig = inspect.signature(target)
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return
    allowed = set(sig.parameters) - {"self", *fixed}
    unknown = sorted(set(params) - allowed - set(fixed))
    if unknown:
        raise UserError(f"{kind} {name!r} has no parameter(s) {unknown}; it takes {sorted(allowed)}")
