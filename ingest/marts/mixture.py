"""Table-in, table-out functions behind the dbt Python models of the mixture marts.

`fct_confusion` and `fct_mixture_estimates` (models/marts/mixture/) call these with Arrow tables of their
refs; the math is `ingest.mixture`. Each returns a fixed schema, also for zero input rows (`dbt build
--empty`, an empty lake). Rows are sorted by their ids before any resampling, so a seeded bootstrap gives
the same interval whatever order the database returns rows in.

Per classifier, the reference documents of the calibration fold (`is_calibration`) are the calibration
set (BCTS of `emq`, the split of `llmsurgeon_code`); the others give C. A classifier or estimator that
cannot give an estimate (a domain without reference documents, posteriors of the wrong length, NaN, every
bootstrap replicate failing...) yields rows with NULL values and a `null_reason`, never a failed build and
never a silent number.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ingest.errors import UserError
from ingest.marts.common import arrow_of, finite, parallel

CONFUSION_SCHEMA = pa.schema([
    ("classifier_id", pa.string()), ("classifier_name", pa.string()), ("kind", pa.string()),
    ("true_domain", pa.string()), ("predicted_domain", pa.string()), ("true_index", pa.int32()),
    ("predicted_index", pa.int32()), ("value", pa.float64()), ("condition_number", pa.float64()),
    ("support", pa.int64()), ("n_reference", pa.int64()), ("n_calibration", pa.int64()),
    ("null_reason", pa.string()),
])

ESTIMATES_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("classifier_id", pa.string()), ("classifier_name", pa.string()),
    ("estimator", pa.string()), ("domain", pa.string()), ("domain_index", pa.int32()),
    ("estimate", pa.float64()), ("ci_low", pa.float64()), ("ci_high", pa.float64()),
    ("n_generations", pa.int64()), ("n_reference", pa.int64()), ("n_calibration", pa.int64()),
    ("condition_number", pa.float64()), ("solver_status", pa.string()), ("n_boot", pa.int64()),
    ("n_boot_failed", pa.int64()), ("seed", pa.int64()), ("ci_level", pa.float64()),
    ("diagnostics", pa.string()), ("params", pa.string()), ("null_reason", pa.string()),
])

ESTIMATION_ERRORS = (UserError, ValueError, FloatingPointError, np.linalg.LinAlgError, RuntimeError)


@dataclass
class MixtureParams:
    estimators: list[str]
    n_boot: int
    seed: int
    ci_level: float
    resample: list[str]
    params_json: str

    @classmethod
    def from_table(cls, t: pa.Table) -> MixtureParams | None:
        if t.num_rows == 0:
            return None
        r = t.slice(0, 1).to_pylist()[0]
        return cls(list(r["estimators"] or []), int(r["bootstrap_resamples"]), int(r["bootstrap_seed"]),
                   float(r["ci_level"]), list(r["bootstrap_resample"] or []), str(r["params"]))


@dataclass
class ClassifierData:
    classifier_id: str
    name: str
    domains: tuple[str, ...]
    ref_p: np.ndarray
    ref_y: np.ndarray
    ref_fold: np.ndarray
    ref_cal: np.ndarray  # bool: calibration fold

    def inputs(self, gen: np.ndarray | None = None):
        """`MixtureInputs` (UserError when the reference side is unusable)."""
        from ingest.mixture import MixtureInputs

        keep = ~self.ref_cal
        cal = self.ref_cal
        k = len(self.domains)
        return MixtureInputs(
            domains=self.domains, ref_posteriors=self.ref_p[keep] if keep.any() else np.zeros((0, k)),
            ref_labels=self.ref_y[keep], ref_folds=self.ref_fold[keep],
            gen_posteriors=np.zeros((0, k)) if gen is None else gen,
            calib_posteriors=self.ref_p[cal] if cal.any() else None,
            calib_labels=self.ref_y[cal] if cal.any() else None)


def _matrix(rows: list, k: int, what: str) -> np.ndarray:
    bad = [i for i, r in enumerate(rows) if r is None or len(r) != k]
    if bad:
        got = None if rows[bad[0]] is None else len(rows[bad[0]])
        raise UserError(f"{what}: {len(bad)} posterior(s) have {got} probabilities but the classifier has {k} "
                        f"domains; rescore with this classifier")
    return np.asarray(rows, dtype=float).reshape(len(rows), k)


def _classifiers(classifiers: pa.Table, ref: pa.Table) -> tuple[list[tuple[str, str, tuple]], dict[str, Any]]:
    """(id, name, domains) of every classifier, and per classifier its reference data or the error."""
    cls_rows = classifiers.select([c for c in ("classifier_id", "name", "domains", "params")
                                   if c in classifiers.column_names]).to_pylist()
    meta = sorted((r["classifier_id"], r["name"] or r["classifier_id"], tuple(r["domains"] or ())) for r in cls_rows)
    expected_n = {r["classifier_id"]: _n_reference(r.get("params")) for r in cls_rows}
    ref_rows: dict[str, list[dict]] = {}
    for r in ref.select(["classifier_id", "ref_doc_id", "true_index", "fold", "is_calibration", "probs"]).to_pylist():
        ref_rows.setdefault(r["classifier_id"], []).append(r)
    data: dict[str, Any] = {}
    for cid, name, domains in meta:
        rows = sorted(ref_rows.get(cid, []), key=lambda r: r["ref_doc_id"])
        try:
            if len(domains) < 2:
                raise UserError(f"classifier {name!r} has {len(domains)} domain(s); at least 2 are needed")
            if not rows:
                raise UserError(f"classifier {name!r} has no reference posteriors; retrain it with "
                                "`lmaudit classify train`")
            n_expected = expected_n.get(cid)
            if n_expected is not None and n_expected != len(rows):
                raise UserError(f"classifier {name!r}: {len(rows)} of its {n_expected} reference posteriors match "
                                "the current reference documents (re-imported since training?); retrain it")
            k = len(domains)
            data[cid] = ClassifierData(
                classifier_id=cid, name=name, domains=domains,
                ref_p=_matrix([r["probs"] for r in rows], k, f"classifier {name!r} reference documents"),
                ref_y=np.asarray([r["true_index"] for r in rows], dtype=int),
                ref_fold=np.asarray([-1 if r["fold"] is None else r["fold"] for r in rows], dtype=int),
                ref_cal=np.asarray([bool(r["is_calibration"]) for r in rows], dtype=bool))
            data[cid].inputs()  # validate now: NaN, rows not summing to 1, a domain without documents
        except UserError as exc:
            data[cid] = str(exc)
    return meta, data


def _n_reference(params: str | None) -> int | None:
    """Reference documents the classifier was trained with (classifiers.params, written by classify train)."""
    if not params:
        return None
    try:
        n = json.loads(params).get("n_reference")
    except (json.JSONDecodeError, AttributeError):
        return None
    return int(n) if isinstance(n, int) else None


def confusion_table(classifiers: Any, ref: Any) -> pa.Table:
    """`fct_confusion`: soft and hard C (rows = true domain) of every classifier, from its non-calibration
    reference documents, with condition numbers and per-domain support."""
    from ingest.mixture import confusion_summary

    classifiers, ref = arrow_of(classifiers), arrow_of(ref)
    meta, data = _classifiers(classifiers, ref)
    out: list[dict] = []
    for cid, name, domains in meta:
        d = data[cid]
        if isinstance(d, str):
            for kind in ("soft", "hard"):
                for i, di in enumerate(domains):
                    for j, dj in enumerate(domains):
                        out.append(dict(classifier_id=cid, classifier_name=name, kind=kind, true_domain=di,
                                        predicted_domain=dj, true_index=i, predicted_index=j, value=None,
                                        condition_number=None, support=None, n_reference=None, n_calibration=None,
                                        null_reason=d))
            continue
        inputs = d.inputs()
        summary = confusion_summary(inputs)
        n_cal = int(d.ref_cal.sum())
        index = {x: i for i, x in enumerate(domains)}
        for r in summary.to_rows(classifier_id=cid, classifier_name=name):
            out.append(dict(r, true_index=index[r["true_domain"]], predicted_index=index[r["predicted_domain"]],
                            n_reference=inputs.n_ref, n_calibration=n_cal, null_reason=None))
    return pa.Table.from_pylist(out, schema=CONFUSION_SCHEMA)


def estimates_table(classifiers: Any, ref: Any, gen: Any, params: Any) -> pa.Table:
    """`fct_mixture_estimates`: one row per (run, classifier, estimator, domain)."""
    from ingest.mixture import estimate

    classifiers, ref, gen = arrow_of(classifiers), arrow_of(ref), arrow_of(gen)
    p = MixtureParams.from_table(arrow_of(params))
    if p is None or gen.num_rows == 0:
        return ESTIMATES_SCHEMA.empty_table()
    meta, data = _classifiers(classifiers, ref)
    names = {cid: (name, domains) for cid, name, domains in meta}
    by_run: dict[tuple[str, str], list[tuple[str, list]]] = {}
    for r in gen.select(["classifier_id", "run_id", "generation_id", "probs"]).to_pylist():
        by_run.setdefault((r["classifier_id"], r["run_id"]), []).append((r["generation_id"], r["probs"]))

    jobs = []
    for (cid, run_id), items in sorted(by_run.items()):
        if cid not in names:
            continue
        items.sort(key=lambda x: x[0])
        for est_name in p.estimators:
            jobs.append((cid, run_id, [x[1] for x in items], est_name))

    def one(job) -> list[dict]:
        cid, run_id, probs, est_name = job
        name, domains = names[cid]
        base = dict(run_id=run_id, classifier_id=cid, classifier_name=name, estimator=est_name,
                    n_generations=len(probs), n_boot=p.n_boot, seed=p.seed, ci_level=p.ci_level,
                    params=p.params_json)
        d = data[cid]
        reason, res, inputs = None, None, None
        if isinstance(d, str):
            reason = d
        else:
            try:
                g = _matrix(probs, len(domains), f"run {run_id!r} generations")
                inputs = d.inputs(g)
                res = estimate(est_name, inputs, n_boot=p.n_boot, seed=p.seed, level=p.ci_level,
                               resample=p.resample)
            except ESTIMATION_ERRORS as exc:
                reason = f"{type(exc).__name__}: {exc}" if not isinstance(exc, UserError) else str(exc)
        rows = []
        for i, dom in enumerate(domains):
            if res is None:
                rows.append(dict(base, domain=dom, domain_index=i, estimate=None, ci_low=None, ci_high=None,
                                 n_reference=None if inputs is None else inputs.n_ref,
                                 n_calibration=None if isinstance(d, str) else int(d.ref_cal.sum()),
                                 condition_number=None, solver_status=None, n_boot_failed=None,
                                 diagnostics=None, null_reason=reason))
                continue
            diag = res.diagnostics
            cond = diag.get("condition_number")
            rows.append(dict(base, domain=dom, domain_index=i, estimate=finite(res.estimate[i]),
                             ci_low=finite(res.ci_low[i]), ci_high=finite(res.ci_high[i]),
                             n_reference=inputs.n_ref, n_calibration=int(d.ref_cal.sum()),
                             condition_number=None if cond is None else float(cond),
                             solver_status=None if diag.get("solver_status") is None else str(diag["solver_status"]),
                             n_boot_failed=int(diag.get("n_boot_failed", 0)), diagnostics=res.diagnostics_json(),
                             null_reason=None))
        return rows

    results = parallel(one, jobs)
    return pa.Table.from_pylist([r for rows in results for r in rows], schema=ESTIMATES_SCHEMA)


def with_mia_estimates(estimates: pa.Table, mia: Any) -> pa.Table:
    """`estimates` (with its `model` column) plus LLMSurgeon's membership-inference baselines
    (`fct_mixture_mia_estimates`: mia_loss, mia_zlib, mia_mink, mia_minkpp, mia_ref) in the same schema.

    Like the tokenizer reading, an MIA estimate is about a model, not a run: NULL run_id and classifier_id,
    the model in `model`, n_reference = the reference documents the aggregation used (all domains), and the
    median threshold, per-domain share above it, scoring convention and aggregation in diagnostics. No
    bootstrap: no interval."""
    rows = estimates.to_pylist()
    mia_rows = sorted(arrow_of(mia).to_pylist(), key=lambda r: (r["model"], r["estimator"], r["domain"]))
    order: dict[tuple[str, str], list[str]] = {}
    for r in mia_rows:
        order.setdefault((r["model"], r["estimator"]), []).append(r["domain"])
    for r in mia_rows:
        n_ref = None if r.get("n_total") is None else int(r["n_total"])
        diagnostics = {"threshold": finite(r["threshold"]), "share_above": finite(r["share_above"]),
                       "n_per_domain": r["n_per_domain"], "n_domains": r["n_domains"],
                       "scoring": r.get("scoring"), "aggregation": r.get("aggregation")}
        rows.append(dict(
            run_id=None, classifier_id=None, classifier_name=None, estimator=r["estimator"], domain=r["domain"],
            domain_index=order[(r["model"], r["estimator"])].index(r["domain"]), estimate=finite(r["estimate"]),
            ci_low=None, ci_high=None, n_generations=None, n_reference=n_ref, n_calibration=None,
            condition_number=None, solver_status="closed_form", n_boot=0, n_boot_failed=0, seed=None,
            ci_level=None, diagnostics=json.dumps(diagnostics, sort_keys=True), params=None,
            null_reason=r["null_reason"], model=r["model"]))
    return pa.Table.from_pylist(rows, schema=estimates.schema)
