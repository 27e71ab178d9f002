"""The dbt vars `lmaudit build --vars` may set: one table of their types and ranges, checked before dbt starts.

dbt pastes a var into the models' SQL as text (`cast({{ var('propme_ci_level') }} as double)`), so a wrong
value fails only when the model that reads it runs (`propme_bootstrap_resamples: abc` after ~200 models, a
ci level of 2 after ~280), and a misspelled name is silently ignored (the default is used). Here every name
must be one that `dbt_project.yml` declares, and every value must have the declared type and range; the
build then refuses with one line before anything is built. `tests/python/test_bad_inputs_build.py` checks
that this table covers exactly the vars of `dbt_project.yml`.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ingest.errors import UserError

# Text that reaches SQL inside '...' (settings, model and domain names): no quote, no control character.
_UNSAFE = re.compile(r"['\\\x00-\x1f\x7f]")
_METRIC = re.compile(r"^[a-z][a-z0-9_]*$")
# A number in exponent form without a dot (`1e-3`): YAML 1.1 (PyYAML, dbt's --vars parser too) reads it as a string,
# which dbt pastes into the SQL as the number it is (`cast(1e-3 as double)`).
_EXPONENT = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+")


@dataclass(frozen=True)
class VarSpec:
    """One dbt var: its kind and what `check` accepts (a problem string, or None when the value is fine)."""

    name: str
    kind: str
    check: Callable[[Any], str | None]


def _int(low: int, high: int = 2**63 - 1) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, int):
            return f"must be a whole number from {low} to {high}, not {v!r}"
        return None if low <= v <= high else f"must be from {low} to {high}, not {v}"
    return check


def _fraction(*, open_low: bool, open_high: bool) -> Callable[[Any], str | None]:
    lo, hi = "(0" if open_low else "[0", "1)" if open_high else "1]"

    def check(v: Any) -> str | None:
        if isinstance(v, str) and _EXPONENT.fullmatch(v):
            v = float(v)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return f"must be a number in {lo}, {hi}, not {v!r}"
        ok = (v > 0 if open_low else v >= 0) and (v < 1 if open_high else v <= 1)
        return None if ok else f"must be in {lo}, {hi}, not {v}"
    return check


def _bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else f"must be true or false, not {v!r}"


def _text_problem(v: Any, what: str) -> str | None:
    if not isinstance(v, str) or not v.strip():
        return f"{what} must be a non-empty string, not {v!r}"
    if _UNSAFE.search(v):
        return f"{what} {v!r} contains a quote, backslash or control character"
    return None


def _one_of(choices: Callable[[], list[str]]) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        known = choices()
        return None if isinstance(v, str) and v in known else f"must be one of {', '.join(known)}, not {v!r}"
    return check


def _list_of(item: Callable[[Any], str | None], *, non_empty: bool = True,
             unique: bool = True) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        if not isinstance(v, list):
            return f"must be a list, e.g. [a, b], not {v!r}"
        if non_empty and not v:
            return "must not be empty"
        for x in v:
            problem = item(x)
            if problem:
                return f"item {x!r}: {problem}"
        if unique and len({repr(x) for x in v}) != len(v):
            return f"lists an item twice: {v}"
        return None
    return check


def _metric(v: Any) -> str | None:
    return None if isinstance(v, str) and _METRIC.match(v) else "must be a metric name such as fmr50"


def _aliases(v: Any) -> str | None:
    if not isinstance(v, dict):
        return f"must be a mapping, e.g. {{CommonCrawl: Web}}, not {v!r}"
    for k, x in v.items():
        problem = _text_problem(k, "a key") or _text_problem(x, f"the value of {k!r}")
        if problem:
            return problem
    return None


def _pairs(v: Any) -> str | None:
    if not isinstance(v, list):
        return f"must be a list of {{propensity_run_id: ..., capability_run_id: ...}}, not {v!r}"
    keys = {"propensity_run_id", "capability_run_id"}
    for x in v:
        if not isinstance(x, dict) or set(x) != keys:
            return f"item {x!r}: needs exactly the keys propensity_run_id and capability_run_id"
        for k in sorted(keys):
            problem = _text_problem(x[k], k)
            if problem:
                return problem
    return None


def _settings() -> list[str]:
    from ingest.lake.schemas import ALL_SETTINGS

    return list(ALL_SETTINGS)


def _estimators() -> list[str]:
    from ingest.mixture.estimators import ESTIMATORS

    return sorted(ESTIMATORS.names())


_SETTING = _one_of(_settings)
_FRACTION = _fraction(open_low=False, open_high=False)
_LEVEL = _fraction(open_low=True, open_high=True)
_RESAMPLES = _int(1, 1_000_000)
_SEED = _int(0, 2**63 - 1)

VARS: dict[str, VarSpec] = {s.name: s for s in [
    VarSpec("propme_bootstrap_resamples", "int", _RESAMPLES),
    VarSpec("propme_bootstrap_seed", "int", _SEED),
    VarSpec("propme_ci_level", "float", _LEVEL),
    VarSpec("propme_capability_setting", "setting", _SETTING),
    VarSpec("propme_prompt_free_settings", "settings", _list_of(_SETTING, non_empty=False)),
    VarSpec("propme_capability_pairs", "run pairs", _pairs),
    VarSpec("propme_pm_metrics", "metrics", _list_of(_metric)),
    VarSpec("propme_mid_span_tokens", "int", _int(1, 1_000_000)),
    VarSpec("propme_long_span_tokens", "int", _int(1, 1_000_000)),
    VarSpec("propme_loop_min_tokens", "int", _int(1, 1_000_000)),
    VarSpec("propme_loop_max_period", "int", _int(1, 1_000_000)),
    VarSpec("propme_loop_min_repeats", "int", _int(2, 1_000_000)),
    VarSpec("propme_loop_min_share", "float", _FRACTION),
    VarSpec("propme_degenerate_max_compression", "float", _FRACTION),
    VarSpec("propme_degenerate_max_letter_share", "float", _FRACTION),
    VarSpec("propme_code_min_lines", "int", _int(1, 1_000_000)),
    VarSpec("propme_code_min_line_share", "float", _FRACTION),
    VarSpec("propme_code_max_letter_share", "float", _FRACTION),
    VarSpec("propme_rare_max_count", "int", _int(1, 2**31 - 1)),
    VarSpec("propme_blank_outputs_match", "bool", _bool),
    VarSpec("propme_min_shared_prompts", "int", _int(1, 2**31 - 1)),
    VarSpec("mixture_estimators", "estimators", _list_of(_one_of(_estimators))),
    VarSpec("mixture_bootstrap_resamples", "int", _RESAMPLES),
    VarSpec("mixture_bootstrap_seed", "int", _SEED),
    VarSpec("mixture_ci_level", "float", _LEVEL),
    VarSpec("mixture_bootstrap_resample", "what to resample",
            _list_of(_one_of(lambda: ["generations", "reference"]))),
    VarSpec("mixture_domain_aliases", "aliases", _aliases),
    VarSpec("mixture_model_aliases", "aliases", _aliases),
    VarSpec("mixture_max_uncovered_weight", "float", _FRACTION),
    VarSpec("mixture_span_min_tokens", "int", _int(1, 1_000_000)),
    VarSpec("mixture_mia_aggregation", "choice", _one_of(lambda: ["authors", "balanced"])),
    VarSpec("mixture_mia_scoring", "choice", _one_of(lambda: ["authors", "lmaudit"])),
    VarSpec("mixture_sources_estimator", "estimator", _one_of(_estimators)),
    VarSpec("contamination_ngram", "int", _int(1, 1_000_000)),
    VarSpec("contamination_contaminated_share", "float", _FRACTION),
    VarSpec("contamination_bootstrap_resamples", "int", _RESAMPLES),
    VarSpec("contamination_bootstrap_seed", "int", _SEED),
    VarSpec("contamination_ci_level", "float", _LEVEL),
    VarSpec("mia_benchmark_bootstrap_resamples", "int", _RESAMPLES),
    VarSpec("mia_benchmark_bootstrap_seed", "int", _SEED),
    VarSpec("mia_benchmark_ci_level", "float", _LEVEL),
]}


def check_vars(text: str | None) -> dict[str, Any]:
    """The `--vars` YAML as a mapping, every name declared and every value in range; else a `UserError`."""
    if text is None or not text.strip():
        return {}
    import yaml

    try:
        given = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise UserError(f"--vars is not valid YAML ({str(e).splitlines()[0]}); give a mapping, e.g. "
                        "'{propme_bootstrap_resamples: 1000}'") from None
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise UserError(f"--vars must be a mapping of var names to values, e.g. '{{propme_ci_level: 0.9}}', "
                        f"not {given!r}")
    for name, value in given.items():
        spec = VARS.get(name) if isinstance(name, str) else None
        if spec is None:
            close = difflib.get_close_matches(str(name), list(VARS), n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise UserError(f"--vars: unknown var {name!r}; {hint}the vars are the names of "
                            "dbt_project.yml (docs/warehouse.md)")
        problem = spec.check(value)
        if problem:
            raise UserError(f"--vars {name} {problem}")
    return given
