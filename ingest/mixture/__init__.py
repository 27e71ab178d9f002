"""Data-mixture estimation from classifier posteriors (docs/mixture-method.md, sections 3-5).

The library is pure numpy/scipy on arrays: classifier training, lake I/O and dbt models live elsewhere and
call it, e.g. from a dbt Python model:

    from ingest.mixture import MixtureInputs, estimate
    inputs = MixtureInputs(domains=domains, ref_posteriors=P_ref, ref_labels=y_ref, ref_folds=folds,
                           gen_posteriors=P_gen)
    est = estimate("pacc", inputs, n_boot=200, seed=0)
    rows = est.to_rows(run_id=run_id)       # estimator, domain, estimate, ci_low, ci_high
    est.diagnostics_json()                  # condition number, iterations, solver status, fallbacks ...

Estimators: `list_estimators()` -> direct, cc, acc, pacc, llmsurgeon_code, emq, bbse, rlls, kdey.
"""

from ingest.mixture import metrics
from ingest.mixture.bootstrap import estimate, estimate_all, replicate
from ingest.mixture.confusion import (ConfusionSummary, condition_number, confusion_summary, hard_confusion,
                                      joint_confusion, soft_confusion)
from ingest.mixture.estimators import Estimator, get_estimator, list_estimators, register
from ingest.mixture.metrics import ae, evaluate, kld, mae, overlap_accuracy, r2, rae
from ingest.mixture.records import MixtureEstimate, MixtureInputs, as_domain_vector
from ingest.mixture.simplex import project_simplex, simplex_lstsq

__all__ = [
    "ConfusionSummary", "Estimator", "MixtureEstimate", "MixtureInputs", "ae", "as_domain_vector",
    "condition_number", "confusion_summary", "estimate", "estimate_all", "evaluate", "get_estimator",
    "hard_confusion", "joint_confusion", "kld", "list_estimators", "mae", "metrics", "overlap_accuracy",
    "project_simplex", "r2", "rae", "register", "replicate", "simplex_lstsq", "soft_confusion",
]
