"""The incremental side of the mixture estimates (model int_mixture_run_estimates, macros/mixture_incremental.sql):
estimate only the (classifier, run) groups whose inputs changed, as the per-run PropMe bootstraps do
(ingest.marts.incremental: stale rows deleted first, then the groups with no rows left computed).

`estimates_table` (ingest.marts.mixture) estimates each group from its own posteriors and its classifier's
reference side, seeded with the same seed whatever else it is given, so estimating a subset of the groups gives
exactly the rows a full computation gives for them. Posteriors are read for the groups to compute only (a build
with nothing to do reads none)."""

from __future__ import annotations

from typing import Any

from ingest.marts.common import arrow_of
from ingest.marts.incremental import (
    groups_to_compute,
    sql_group_filter,
    with_input_hash,
)
from ingest.marts.mixture import estimates_table

GROUP = ("classifier_id", "run_id")


def group_estimates(dbt: Any, session: Any, inputs: Any, posteriors: Any, classifiers: Any, ref: Any,
                    params: Any):
    """int_mixture_run_estimates' new rows: the estimates of the groups of `inputs` (int_mixture_estimate_inputs)
    that have no current rows, with their input_hash."""
    groups = groups_to_compute(dbt, session, inputs, GROUP)
    gen = arrow_of(posteriors.filter(sql_group_filter(groups, GROUP)))
    return with_input_hash(estimates_table(classifiers, ref, gen, params), groups, GROUP)
