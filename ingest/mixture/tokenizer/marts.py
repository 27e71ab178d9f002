"""Glue for `fct_mixture_estimates`: tokenizer estimates as rows beside the generation-based ones.

The generation-based rows are keyed by (run, classifier); a tokenizer estimate has neither, so its rows carry
NULL run_id and classifier_id, estimator `bpe_merges`, and the model they are about in `model` (which the
generation rows get from their run), so `fct_mixture_evaluation` can match both kinds to a documented mixture.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from ingest.mixture.tokenizer.store import ESTIMATOR


def with_tokenizer_estimates(estimates: pa.Table, runs: Any, tokenizer: Any) -> pa.Table:
    """`estimates` (ESTIMATES_SCHEMA) plus a `model` column, with the rows of `stg_tokenizer_mixture_estimates`
    appended in the same schema."""
    from ingest.marts.common import arrow_of
    from ingest.marts.mixture import ESTIMATES_SCHEMA

    schema = ESTIMATES_SCHEMA.append(pa.field("model", pa.string()))
    run_model = {r["run_id"]: r["model"] for r in arrow_of(runs).select(["run_id", "model"]).to_pylist()}
    rows = [dict(r, model=run_model.get(r["run_id"])) for r in estimates.to_pylist()]
    tok = arrow_of(tokenizer).to_pylist()
    order: dict[str, list[str]] = {}
    for r in sorted(tok, key=lambda r: (r["model"], r["domain"])):
        order.setdefault(r["model"], []).append(r["domain"])
    for r in sorted(tok, key=lambda r: (r["model"], r["domain"])):
        diagnostics = {k: r.get(k) for k in ("objective", "n_constraints", "n_merges_used", "n_merges_total",
                                             "reference_bytes", "tokenizer", "tokenizer_sha256",
                                             "reference_source")}
        diagnostics["method"] = json.loads(r["params"] or "{}").get("method", "paper")
        rows.append(dict(
            run_id=None, classifier_id=None, classifier_name=None, estimator=ESTIMATOR, domain=r["domain"],
            domain_index=order[r["model"]].index(r["domain"]), estimate=r["estimate"], ci_low=r["ci_low"],
            ci_high=r["ci_high"], n_generations=None, n_reference=r["n_reference_docs"], n_calibration=None,
            condition_number=None, solver_status=r["solver_status"], n_boot=r["n_boot"],
            n_boot_failed=r["n_boot_failed"], seed=r["seed"], ci_level=r["ci_level"],
            diagnostics=json.dumps(diagnostics, sort_keys=True, default=str), params=r["params"],
            null_reason=None, model=r["model"]))
    return pa.Table.from_pylist(rows, schema=schema)
