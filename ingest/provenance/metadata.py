"""Where a document came from, read from whatever metadata fields its corpus has.

Corpora name the same thing differently: The Stack has `max_stars_repo_path`, `max_stars_repo_name`,
`max_stars_repo_licenses`; Dolma and RedPajama keep a `url` (sometimes under `metadata` or `meta`); a JSONL
made by hand may have `path`, `repo`, `license`. Each field below is the first of its aliases present (at the
top level, then inside a `metadata` / `meta` object), else None: results never depend on which optional
fields a corpus happens to have. A list value (a repository with several licences) is joined with AND.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ALIASES: dict[str, tuple[str, ...]] = {
    "source": ("source", "dataset", "subset", "src"),
    "path": ("path", "file_path", "filepath", "max_stars_repo_path", "filename", "file_name"),
    "url": ("url", "URL", "uri", "link", "warc_target_uri"),
    "repository": ("repository", "repo", "repo_name", "max_stars_repo_name", "repository_name"),
    "licence": ("license", "licence", "licenses", "licences", "license_type", "max_stars_repo_licenses",
                "spdx_license", "spdx_id"),
}
_NESTED = ("metadata", "meta")


@dataclass(frozen=True)
class DocumentMetadata:
    source: str | None
    path: str | None
    url: str | None
    repository: str | None
    licence: str | None  # the licence field as written (a list joined with " AND ")


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        parts = [str(v).strip() for v in value if v is not None and str(v).strip()]
        return " AND ".join(parts) or None
    if isinstance(value, Mapping):
        return json.dumps(value, sort_keys=True, default=str)
    text = str(value).strip()
    return text or None


def _lookup(meta: Mapping[str, Any], aliases: tuple[str, ...]) -> str | None:
    scopes = [meta] + [meta[k] for k in _NESTED if isinstance(meta.get(k), Mapping)]
    for scope in scopes:
        for name in aliases:
            value = _text(scope.get(name))
            if value is not None:
                return value
    return None


def document_metadata(meta: Mapping[str, Any] | None) -> DocumentMetadata:
    """The provenance fields of one document's metadata (None for each field it lacks)."""
    meta = meta or {}
    return DocumentMetadata(**{field: _lookup(meta, names) for field, names in ALIASES.items()})
