"""`lmaudit mixture sweep`: LLMSurgeon's ablations (Tables 3 and 4, domain granularity, sampling) as a grid.

A sweep varies one factor at a time around a base configuration, as the paper's ablation tables do:

| axis | values | what changes (everything else stays at the base) |
|---|---|---|
| reference | integers, e.g. 100,1000,5000,10000 | reference documents per domain the classifier is trained on (Table 4) |
| backend | tfidf, transformer, transformer:PATH | the classifier: TF-IDF, a transformer from scratch, a pretrained encoder fine-tuned from the local folder PATH (Table 3) |
| granularity | fine, or groups such as code+headers/boilerplate+documentation | domains merged into coarser classes (the classifier learns the groups; the truth is summed) |
| temperature | numbers > 0 | the model is sampled again at that temperature (needs --model and --corpus) |
| generations | integers | only the first n samples of the base run are classified |

Base: every reference document of the chosen domains, `tfidf`, `fine`, the `neutral` preset's sampling
(unconditional, temperature 1.0, top-p 1.0, 300 samples; new tokens capped at the model's context).

Each grid point runs the real pipeline steps in memory: the classifier is cross-fitted and calibrated
exactly as `lmaudit classify train` does it (`ingest.classify.train.crossfit`), the final model scores the
run's non-empty generations as `classify score` does, and every estimator gives its estimate through the
code the mart `fct_mixture_estimates` uses (`ClassifierData.inputs` + `ingest.mixture.estimate`, no bootstrap).
Its rows go to the lake table `mixture_sweeps`, one partition per (study, model, axis, value): a rerun
replaces a point, and a sweep that was killed resumes at the first point whose partition is missing or was
written with other settings (the `config` in the partition's manifest record). `fct_mixture_sweeps` scores
them against the model's documented mixture; the report draws Tables 3 and 4 from it.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ingest.errors import UserError
from ingest.generate.presets import PRESETS
from ingest.lake import Lake, make_key, partition_name

NEUTRAL = PRESETS["neutral"]  # the base point samples as `generate --preset neutral` does
AXES = ("reference", "backend", "granularity", "temperature", "generations")
TABLE = "mixture_sweeps"
FINE = "fine"
PRETRAINED_PREFIX = "transformer:"


# ------------------------------------------------------------------------------------------------ the grid

@dataclass(frozen=True)
class Axis:
    """One axis of the grid and its values, as given (validated by `parse_axis`)."""

    name: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class PointConfig:
    """Everything a grid point's estimate depends on besides the data."""

    backend: str = "tfidf"
    per_domain: int | None = None  # None: every reference document
    granularity: str = FINE
    temperature: float = NEUTRAL.temperature
    n_generations: int | None = None  # None: every sample of the base run


@dataclass(frozen=True)
class GridPoint:
    axis: str
    value: str
    config: PointConfig

    @property
    def value_num(self) -> float | None:
        try:
            return float(self.value)
        except ValueError:
            return None


@dataclass(frozen=True)
class SweepSpec:
    """A sweep: its name, its axes, the base point and the estimators every point runs."""

    study: str
    axes: tuple[Axis, ...]
    base: PointConfig = field(default_factory=PointConfig)
    estimators: tuple[str, ...] = ()
    seed: int = 0
    calibration: str = "ts"

    def points(self) -> list[GridPoint]:
        out = []
        for ax in self.axes:
            for v in ax.values:
                out.append(GridPoint(ax.name, v, _with_value(self.base, ax.name, v)))
        return out


def _with_value(base: PointConfig, axis: str, value: str) -> PointConfig:
    if axis == "reference":
        return replace(base, per_domain=int(value))
    if axis == "backend":
        return replace(base, backend=value)
    if axis == "granularity":
        return replace(base, granularity=value)
    if axis == "temperature":
        return replace(base, temperature=float(value))
    return replace(base, n_generations=int(value))


def _int_value(axis: str, v: str, minimum: int) -> str:
    try:
        n = int(v)
    except ValueError:
        raise UserError(f"--axis {axis}: {v!r} is not a whole number; give counts such as {axis}=100,1000") from None
    if n < minimum:
        raise UserError(f"--axis {axis}: {n} is below {minimum}; give counts >= {minimum}")
    return str(n)


def check_backend_value(v: str) -> str:
    """tfidf, transformer, or transformer:PATH (a local model folder with config.json); any other registered
    classifier backend by name."""
    from ingest.classify.backends import list_backends

    if v.startswith(PRETRAINED_PREFIX):
        path = Path(v[len(PRETRAINED_PREFIX):]).expanduser()
        if not (path.is_dir() and (path / "config.json").is_file()):
            raise UserError(f"--axis backend: {v!r}: {path} is not a model folder (config.json, weights, tokenizer); "
                            "give the folder of a pretrained encoder such as DistilBERT")
        return PRETRAINED_PREFIX + str(path.resolve())
    if v not in list_backends():
        raise UserError(f"--axis backend: unknown backend {v!r}; choose {', '.join(list_backends())} or "
                        f"{PRETRAINED_PREFIX}PATH (a pretrained encoder's folder)")
    return v


def parse_groups(value: str) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    """`fine` -> None; `code+headers/boilerplate+documentation` -> (("code+headers", ("code", "headers")), ...)."""
    if value == FINE:
        return None
    groups = []
    for g in value.split("/"):
        members = tuple(m.strip() for m in g.split("+"))
        if not g.strip() or any(not m for m in members):
            raise UserError(f"--axis granularity: bad group {g!r} in {value!r}; write groups of domains joined "
                            "by + and separated by /, e.g. code+headers/boilerplate+documentation, or fine")
        groups.append(("+".join(members), members))
    seen = [m for _, ms in groups for m in ms]
    if len(seen) != len(set(seen)):
        raise UserError(f"--axis granularity: a domain is in two groups of {value!r}")
    return tuple(groups)


def parse_axis(text: str) -> Axis:
    """`NAME=V1,V2,...` -> an `Axis`; an unknown axis, no values, a repeated or bad value is a `UserError`."""
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep:
        raise UserError(f"--axis {text!r}: write NAME=V1,V2,... with NAME one of {', '.join(AXES)}")
    if name not in AXES:
        raise UserError(f"--axis: unknown axis {name!r}; choose one of {', '.join(AXES)}")
    raw = [v.strip() for v in rest.split(",")]
    if not rest.strip() or any(not v for v in raw):
        raise UserError(f"--axis {name}: empty value in {rest!r}; give values such as {name}={_EXAMPLES[name]}")
    values = []
    for v in raw:
        if name == "reference":
            v = _int_value(name, v, 2)
        elif name == "generations":
            v = _int_value(name, v, 1)
        elif name == "temperature":
            try:
                t = float(v)
            except ValueError:
                t = float("nan")
            if not (math.isfinite(t) and t > 0):
                raise UserError(f"--axis temperature: {v!r} is not a number > 0; give e.g. temperature=0.7,1.0")
            v = f"{t:g}"
        elif name == "backend":
            v = check_backend_value(v)
        else:
            parse_groups(v)
        values.append(v)
    if len(set(values)) != len(values):
        raise UserError(f"--axis {name}: a value is given twice in {rest!r}")
    return Axis(name, tuple(values))


_EXAMPLES = {"reference": "100,1000", "backend": "tfidf,transformer", "granularity": "fine,code+headers/boilerplate",
             "temperature": "0.7,1.0", "generations": "100,300"}


def parse_grid(axes: list[str] | None) -> tuple[Axis, ...]:
    """Every `--axis`; none at all (an empty grid) or an axis given twice is a `UserError`."""
    if not axes:
        raise UserError("empty grid: give at least one --axis NAME=V1,V2,... (NAME one of " + ", ".join(AXES)
                        + "), e.g. --axis reference=25,50,100")
    out = [parse_axis(a) for a in axes]
    names = [a.name for a in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UserError(f"--axis {dup[0]} is given twice; list all its values in one --axis {dup[0]}=V1,V2,...")
    return tuple(out)


# ------------------------------------------------------------------------------------------------ the data

@dataclass
class References:
    """The selected reference documents (fine domains), sorted by id."""

    domains: list[str]
    ids: np.ndarray
    texts: np.ndarray
    labels: np.ndarray
    folds: np.ndarray

    def per_domain_counts(self) -> dict[str, int]:
        return {d: int(np.sum(self.labels == i)) for i, d in enumerate(self.domains)}

    def subset(self, per_domain: int | None, seed: int) -> np.ndarray:
        """Indices of `per_domain` documents of every domain, spread evenly over the folds (round robin over
        each fold's documents in a seeded order), so a smaller subset is part of every larger one."""
        if per_domain is None:
            return np.arange(len(self.ids))
        keep = []
        for d in range(len(self.domains)):
            idx = np.flatnonzero(self.labels == d)
            rank = {}
            for f in sorted(set(self.folds[idx].tolist())):
                in_f = sorted(idx[self.folds[idx] == f], key=lambda i: make_key(seed, self.ids[i]))
                rank.update({int(i): (r, f) for r, i in enumerate(in_f)})
            keep += sorted(rank, key=lambda i: rank[i])[:per_domain]
        return np.asarray(sorted(keep), dtype=int)


def load_references(lake: Lake, domains: list[str] | None, sources: list[str] | None) -> References:
    from ingest.classify.train import select_references

    doms, cols, _dropped = select_references(lake, domains, sources)
    return References(list(doms), cols["ref_doc_id"], cols["text"], cols["label"], cols["fold"])


def documented_truth(lake: Lake, model: str, aliases: dict[str, str] | None = None
                     ) -> tuple[dict[str, float] | None, str | None]:
    """The model's documented mixture from the lake's `mixtures_documented` (the sandbox's truth, or `mixture
    documented add`), matched as the marts match a run: the full name, else the run model's last path part,
    case-insensitively (the documented name whole: two folders both called `model` are not one model), else the
    documented name var `mixture_model_aliases` gives the run's model (`aliases`, keyed by the model exactly as the
    run names it). Models are compared as the marts read them (`ingest.home.model_key`: a folder inside the
    warehouse by its path relative to it), so a sandbox model given by its absolute folder finds the truth the
    sandbox filed relative. None when there is none."""
    from ingest.home import model_key, stored_model

    def key(m: str) -> str:
        return model_key(lake.home, m)

    rows = lake.read("mixtures_documented").to_pylist()
    # `model` as recorded (a relative key is the warehouse's, whatever folder of that name lies here) or an
    # absolute folder, recorded as its runs would record it
    run = key(stored_model(lake.home, model) if Path(model).is_absolute() else model)
    alias = (aliases or {}).get(model)
    if alias is None:
        alias = {key(k): v for k, v in (aliases or {}).items()}.get(run)
    rules = [(key, lambda m: m), (lambda m: key(m).lower(), str.lower),
             (lambda m: key(m).lower(), lambda m: m.rsplit("/", 1)[-1].lower())]
    if alias is not None:
        rules.append((lambda m: key(m).lower(), lambda m: key(str(alias)).lower()))
    for doc_key, run_key in rules:
        hit = [r for r in rows if doc_key(r["model"]) == run_key(run)]
        if hit:
            return {r["domain"]: float(r["weight"]) for r in hit}, hit[0]["source"]
    return None, None


# the vars that decide a sweep row's truth: a sweep stores the truth, so these reach its resume key when changed
TRUTH_VARS = ("mixture_model_aliases", "mixture_domain_aliases", "mixture_max_uncovered_weight")


def mixture_vars(overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The vars of dbt_project.yml that the marts use, updated with `overrides` (the `--vars` a user gives
    `lmaudit build`, checked by `ingest.build_vars.check_vars`), so a sweep reads a documented mixture as
    `fct_mixture_evaluation` does and runs the estimators `fct_mixture_estimates` runs."""
    import yaml

    from ingest.home import project_dir

    return {**yaml.safe_load((project_dir() / "dbt_project.yml").read_text())["vars"], **(overrides or {})}


def changed_truth_vars(overrides: dict[str, Any] | None) -> dict[str, Any]:
    """The truth vars whose value differs from dbt_project.yml's, for a point's resume key: a sweep rerun with
    other aliases computes its points again, one with none (or the defaults) finds the points it wrote before."""
    v, d = mixture_vars(overrides), mixture_vars()
    return {k: v[k] for k in TRUTH_VARS if v.get(k) != d.get(k)}


def truth_for(documented: dict[str, float] | None, classes: list[tuple[str, tuple[str, ...]]],
              aliases: dict[str, str] | None = None, max_uncovered: float = 1.0) -> list[float | None]:
    """The documented shares of the classifier's classes (a merged class sums its members), renormalised over
    them, as fct_mixture_evaluation reads a documented mixture: documented names mapped through `aliases`
    (CommonCrawl -> Web), and None everywhere when more than `max_uncovered` of the documented weight lies
    outside the classes (a score against a mixture the classifier cannot represent), when there is no
    documented mixture, or when it has no weight on these classes."""
    if documented is None:
        return [None] * len(classes)
    merged: dict[str, float] = {}
    for d, w in documented.items():
        key = (aliases or {}).get(d, d)
        merged[key] = merged.get(key, 0.0) + w
    w = [sum(merged.get(m, 0.0) for m in members) for _, members in classes]
    total, grand = sum(w), sum(merged.values())
    if total <= 0 or grand <= 0 or (grand - total) / grand > max_uncovered + 1e-12:
        return [None] * len(classes)
    return [x / total for x in w]


def classes_of(domains: list[str], granularity: str) -> list[tuple[str, tuple[str, ...]]]:
    """The classifier's classes at a granularity: (name, fine domains); a domain in no group stays its own."""
    groups = parse_groups(granularity)
    if groups is None:
        return [(d, (d,)) for d in domains]
    unknown = sorted({m for _, ms in groups for m in ms} - set(domains))
    if unknown:
        raise UserError(f"--axis granularity: unknown domain(s) {', '.join(unknown)} in {granularity!r}; the "
                        f"reference set has {', '.join(domains)}")
    grouped = {m for _, ms in groups for m in ms}
    out = list(groups) + [(d, (d,)) for d in domains if d not in grouped]
    if len(out) < 2:
        raise UserError(f"--axis granularity: {granularity!r} leaves {len(out)} class; a mixture needs at least 2")
    return out


# ------------------------------------------------------------------------------------------------ one point

@dataclass
class TrainedClassifier:
    """A grid point's classifier: cross-fitted reference posteriors (calibrated) and the final model."""

    classes: list[tuple[str, tuple[str, ...]]]
    backend: str
    crossfit: Any  # ingest.classify.train.CrossFit
    labels: np.ndarray
    folds: np.ndarray
    calibration_fold: int
    oof_accuracy: float

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.classes)

    def data(self):
        """The mart's view of this classifier (`ingest.marts.mixture.ClassifierData`): calibration fold =
        calibration set, the other folds give C."""
        from ingest.marts.mixture import ClassifierData

        return ClassifierData(classifier_id="sweep", name="sweep", domains=self.names, ref_p=self.crossfit.probs,
                              ref_y=self.labels, ref_fold=self.folds, ref_cal=self.folds == self.calibration_fold)


def backend_params(backend: str) -> tuple[str, dict[str, Any]]:
    """(registry name, parameters) of a backend value: transformer:PATH fine-tunes the checkpoint at PATH."""
    if backend.startswith(PRETRAINED_PREFIX):
        return "transformer", {"checkpoint": backend[len(PRETRAINED_PREFIX):]}
    return backend, {}


def train_point_classifier(refs: References, cfg: PointConfig, *, seed: int = 0, calibration: str = "ts",
                           calibration_fold: int = 0, progress: bool = False) -> TrainedClassifier:
    """Cross-fit and calibrate a classifier on the point's reference documents, as `classify train` does."""
    from ingest.classify.backends import make_backend
    from ingest.classify.train import check_folds, crossfit

    classes = classes_of(refs.domains, cfg.granularity)
    to_class = {m: i for i, (_, ms) in enumerate(classes) for m in ms}
    idx = refs.subset(cfg.per_domain, seed)
    labels = np.asarray([to_class[refs.domains[y]] for y in refs.labels[idx]], dtype=np.int64)
    folds, texts = refs.folds[idx], refs.texts[idx]
    fold_ids = check_folds([n for n, _ in classes], labels, folds)
    if calibration_fold not in fold_ids:
        raise UserError(f"the calibration fold {calibration_fold} has no documents in the subset; use more "
                        "reference documents per domain")
    name, params = backend_params(cfg.backend)
    proto = make_backend(name, len(classes), seed=seed, **params)
    cf = crossfit(proto, texts, labels, folds, fold_ids, calibration=calibration, calibration_fold=calibration_fold,
                  seed=seed, progress=progress)
    acc = float(np.mean(np.argmax(cf.raw, axis=1) == labels))
    return TrainedClassifier(classes, cfg.backend, cf, labels, folds, calibration_fold, acc)


def point_rows(*, study: str, model: str, point: GridPoint, clf: TrainedClassifier, gen: np.ndarray,
               estimators: tuple[str, ...], documented: dict[str, float] | None, truth_source: str | None,
               run_id: str | None, target_domain: str | None = None, params: dict | None = None,
               seconds: float = 0.0, vars_: dict[str, Any] | None = None) -> list[dict]:
    """The `mixture_sweeps` rows of one grid point: every estimator's share of every class, beside the truth
    (`vars_`: the user's --vars over dbt_project.yml's)."""
    from ingest.marts.mixture import ESTIMATION_ERRORS
    from ingest.mixture import estimate

    v = mixture_vars(vars_)
    truth = truth_for(documented, clf.classes, v.get("mixture_domain_aliases") or {},
                      float(v.get("mixture_max_uncovered_weight", 1.0)))
    now = datetime.now(timezone.utc)
    base = dict(study=study, model=model, axis=point.axis, value=point.value, value_num=point.value_num,
                target_domain=target_domain, run_id=run_id, backend=clf.backend, n_reference=int(len(clf.labels)),
                n_generations=int(gen.shape[0]), temperature=point.config.temperature,
                oof_accuracy=clf.oof_accuracy, truth_source=truth_source,
                params=json.dumps(params or {}, sort_keys=True, default=str), created_at=now)
    rows = []
    for est_name in estimators:
        t0 = time.perf_counter()
        res, reason = None, None
        try:
            res = estimate(est_name, clf.data().inputs(gen), n_boot=0)
        except ESTIMATION_ERRORS as exc:
            reason = str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
        took = time.perf_counter() - t0
        diag = {} if res is None else res.diagnostics
        cond = diag.get("condition_number")
        for i, name in enumerate(clf.names):
            x = None if res is None else float(res.estimate[i])
            rows.append(dict(base, sweep_row_id=sweep_row_id(study, model, point, est_name, name),
                             estimator=est_name, domain=name,
                             estimate=x if x is None or math.isfinite(x) else None, truth=truth[i],
                             condition_number=None if cond is None or not math.isfinite(cond) else float(cond),
                             solver_status=None if diag.get("solver_status") is None else str(diag["solver_status"]),
                             null_reason=reason, seconds=seconds + took))
    return rows


def sweep_row_id(study: str, model: str, point: GridPoint, estimator: str, domain: str) -> str:
    return make_key(study, model, point.axis, point.value, estimator, domain)


def point_partition(study: str, model: str, point: GridPoint) -> str:
    return partition_name("sweep", study, make_key(model)[:12], point.axis, point.value)


def point_config(params: dict) -> str:
    """A point's resume key (the `config` of its partition's manifest record): everything it was computed with."""
    return make_key(json.dumps(params, sort_keys=True, default=str))


def take_over_point(lake: Lake, study: str, model: str, formerly: str, point: GridPoint, params: dict,
                    old_params: dict) -> None:
    """The point as a sweep of `formerly` wrote it (the model's absolute folder, as `mixture sweep --model` and
    `mixture inject` keyed a folder inside the warehouse before they recorded it relative), re-recorded under
    `model` when it was computed with these settings (`old_params`: `params` as that spelling wrote them; only
    the model's name in the rows, their ids and params change: the point is done), else removed: a rerun
    replaces a point, and two spellings of one model would be two models in fct_mixture_sweeps (a partly
    written one at once, one done with other settings once the point is written under `model`:
    `drop_spellings`)."""
    old = point_partition(study, formerly, point)
    if lake.record(TABLE, old) is None and not lake.partition_path(TABLE, old).exists():
        return
    if not point_done(lake, old, point_config(old_params)):
        # partly written (killed before its record: its rows are visible all the same): removed now; done with
        # other settings: kept until the point is written under `model` (`drop_spellings`), so an interrupted
        # rerun still finds the old place's spelling, and the samples drawn under it (review of ceaef9c)
        if not lake.is_done(TABLE, old):
            lake.delete(TABLE, old)
        return
    rows = [{**r, "model": model, "params": json.dumps(params, sort_keys=True, default=str),
             "sweep_row_id": sweep_row_id(study, model, point, r["estimator"], r["domain"])}
            for r in lake.read(TABLE, old).to_pylist()]
    with lake.transaction():
        lake.write(TABLE, point_partition(study, model, point), rows,
                   meta={"config": point_config(params), "study": study, "axis": point.axis, "value": point.value})
        lake.delete(TABLE, old)


def take_over_spellings(lake: Lake, study: str, model: str, former: Sequence[str], point: GridPoint,
                        params: dict, old_params: Callable[[str], dict]) -> None:
    """Every former spelling's copy of a point (`take_over_point`): when the point is done under `model`, the
    others are second copies and removed; else the first done one is re-recorded under `model`."""
    part, config = point_partition(study, model, point), point_config(params)
    for spelling in former:
        if not point_done(lake, part, config):
            take_over_point(lake, study, model, spelling, point, params, old_params(spelling))
    if point_done(lake, part, config):
        drop_spellings(lake, study, former, point)


def drop_spellings(lake: Lake, study: str, former: Sequence[str], point: GridPoint) -> None:
    """Remove the point's copies under `former` spellings, done or partly written (a Parquet file without its
    record is read by the marts all the same): once the point is written under the model's key they are second
    copies."""
    for spelling in former:
        old = point_partition(study, spelling, point)
        if lake.record(TABLE, old) is not None or lake.partition_path(TABLE, old).exists():
            lake.delete(TABLE, old)


def former_spellings(lake: Lake, study: str, model: str) -> set[str]:
    """Other spellings `study`'s points of `model` were keyed by (`take_over_point`): a recorded model read as
    the same (`ingest.home.model_key`) whose folder is this warehouse's or gone (the place the warehouse was
    moved from), never one still there elsewhere (another warehouse's sandbox model of the same name: another
    model, as generate's legacy fingerprint reads it: `ingest.home.spelling_of`)."""
    from ingest.home import spelling_of

    out = set()
    for part in lake.partitions(TABLE):
        rec = lake.record(TABLE, part)
        if rec is not None and rec.get("study") != study:
            continue
        first = lake.read(TABLE, part).select(["study", "model"]).slice(0, 1).to_pylist()
        if rec is None and (not first or first[0]["study"] != study):  # partly written: no record, its rows say
            continue
        m = first[0]["model"] if first else None
        if m and m != model and spelling_of(lake.home, model, m):
            out.add(m)
    return out


def point_done(lake: Lake, partition: str, config: str) -> bool:
    rec = lake.record(TABLE, partition)
    return bool(rec) and rec.get("config") == config and lake.is_done(TABLE, partition)


# ------------------------------------------------------------------------------------------------ the sweep

def default_estimators(vars_: dict[str, Any] | None = None) -> tuple[str, ...]:
    """The mart's estimators (var mixture_estimators of dbt_project.yml, or of --vars), so a sweep and
    fct_mixture_estimates compare the same list."""
    return tuple(mixture_vars(vars_)["mixture_estimators"])


def check_estimators(names: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    from ingest.mixture import list_estimators

    known = list_estimators()
    bad = [n for n in names if n not in known]
    if bad:
        raise UserError(f"unknown estimator {bad[0]!r}; choose from {', '.join(known)}")
    if not names:
        raise UserError("--estimators is empty; name at least one estimator")
    return tuple(names)


@dataclass(frozen=True)
class Sampler:
    """How the sweep gets generations: an existing run (`run_id`) or sampling `model` on `corpus`'s
    unconditional prompt (the neutral preset's recipe) at each temperature the grid needs."""

    model: str
    run_id: str | None = None
    corpus: str | None = None
    n_generations: int = NEUTRAL.n_generations
    top_p: float = NEUTRAL.top_p
    max_new_tokens: int | None = None
    batch_size: int = 32
    threads: int = 1

    def run_id_for(self, study: str, temperature: float, base_temperature: float, n: int) -> str:
        """The run a point classifies: the given run at the base temperature, else the sweep's own, named by
        model, temperature and sample count (a sweep asking for more samples, or of another model under the same
        study name, gets a new run, never a clash)."""
        if self.run_id is not None and temperature == base_temperature:
            return self.run_id
        return f"sweep-{study}-{make_key(self.model)[:8]}-t{temperature:g}-n{n}"

    def texts(self, lake: Lake, study: str, temperature: float, base_temperature: float, n_needed: int,
              progress: bool, former: Sequence[str] = ()) -> tuple[str, list[str]]:
        """(run id, the first `n_needed` samples' texts in sample order, empty ones as ''), generating the run
        (resumably) when needed. `former`: other spellings the model was keyed by (`take_over_point`): a run
        the sweep sampled under one of them, finished, is this run (the same model, temperature and samples)."""
        run_id = self.run_id_for(study, temperature, base_temperature, n_needed)
        if run_id != self.run_id and former:
            runs = {r["run_id"] for r in lake.read("runs").select(["run_id"]).to_pylist()}
            if run_id not in runs:
                olds = (replace(self, model=f).run_id_for(study, temperature, base_temperature, n_needed)
                        for f in former)
                run_id = next((old for old in olds if old in runs), run_id)
        if run_id != self.run_id:
            self._generate(lake, run_id, temperature, n_needed, progress)
        from ingest.lake.runs import run_generations

        t = run_generations(lake, run_id, ("generation_id", "prompt_id", "sample_idx", "text"))
        rows = sorted(t.to_pylist(), key=lambda r: (r["sample_idx"], r["prompt_id"] or "", r["generation_id"]))
        return run_id, [r["text"] or "" for r in rows[:n_needed]]

    def n_available(self, lake: Lake) -> int | None:
        if self.run_id is None:
            return None
        from ingest.lake.runs import run_generations

        return run_generations(lake, self.run_id, ("generation_id",)).num_rows

    def _generate(self, lake: Lake, run_id: str, temperature: float, n: int, progress: bool) -> None:
        from ingest.corpora import corpus_id_for
        from ingest.generate.backends import SamplingConfig, get_backend
        from ingest.generate.plan import prompt_units
        from ingest.generate.runner import RunSpec, run_generation
        from ingest.prompts.build import build_prompt_set

        preset = NEUTRAL
        setting = preset.settings[0]
        if not any(r["corpus_id"] == corpus_id_for(self.corpus) and r["setting"] == setting
                   for r in lake.read("prompts").to_pylist()):
            build_prompt_set(lake, self.corpus, setting, n=1, progress=False)
        from ingest.home import model_location

        # a run's model as it records it (relative to the warehouse, or an old place's folder), or a --model folder
        # inside the warehouse (recorded relative): its folder here; an absolute folder given with --model (or to
        # inject) is loaded as given, never swapped for this warehouse's namesake
        given = self.run_id is None and Path(self.model).is_absolute()
        model = self.model if given else model_location(lake.home, self.model)
        be = get_backend("hf", model, batch_size=self.batch_size, threads=self.threads)
        max_new = self.max_new_tokens or max_new_tokens(model, preset.max_new_tokens)
        spec = RunSpec(run_id, model, setting, "hf", corpus_id_for(self.corpus),
                       SamplingConfig(temperature=temperature, top_p=self.top_p, max_new_tokens=max_new),
                       purpose=preset.purpose)
        run_generation(lake, be, spec, prompt_units(lake, self.corpus, setting, be, 1, n), progress=progress)


def max_new_tokens(model: str, preset_tokens: int) -> int:
    """The preset's new-token budget, cut to what the model's context holds after the start token."""
    try:
        cfg = json.loads((Path(model) / "config.json").read_text())
    except (OSError, ValueError):
        return preset_tokens
    ctx = cfg.get("n_positions") or cfg.get("max_position_embeddings")
    return min(preset_tokens, int(ctx) - 1) if ctx else preset_tokens


@dataclass
class SweepResult:
    points: list[GridPoint]
    computed: list[GridPoint]
    skipped: list[GridPoint]
    seconds: float


def plan_checks(spec: SweepSpec, refs: References, sampler: Sampler, lake: Lake) -> None:
    """Every check that needs the data, before any work: reference counts, granularity domains, generation
    counts, and that a temperature axis has a model to sample."""
    counts = refs.per_domain_counts()
    n_folds = len(set(refs.folds.tolist()))
    for p in spec.points():
        c = p.config
        if c.per_domain is not None:
            small = {d: n for d, n in counts.items() if n < c.per_domain}
            if small:
                d, n = min(small.items(), key=lambda x: x[1])
                raise UserError(f"--axis reference={c.per_domain}: domain {d} has only {n} reference documents; "
                                f"import more (lmaudit reference import / sandbox reference --per-domain) or use "
                                f"values <= {min(counts.values())}")
            if c.per_domain < n_folds:
                raise UserError(f"--axis reference={c.per_domain}: fewer documents than the {n_folds} "
                                "cross-fitting folds; use values >= the number of folds")
        classes_of(refs.domains, c.granularity)
    temps = {p.config.temperature for p in spec.points()}
    if sampler.run_id is not None and temps != {spec.base.temperature} and sampler.corpus is None:
        raise UserError("--axis temperature samples the model again: give --corpus (the corpus whose "
                        "unconditional prompt to sample) besides --run")
    available = sampler.n_available(lake)
    if available is not None:
        for p in spec.points():
            if p.config.n_generations is not None and p.config.n_generations > available:
                raise UserError(f"--axis generations={p.config.n_generations}: run {sampler.run_id!r} has only "
                                f"{available} samples; use values <= {available}")


def run_sweep(lake: Lake, spec: SweepSpec, sampler: Sampler, *, domains: list[str] | None = None,
              sources: list[str] | None = None, progress: bool = True,
              on_point: Callable[[GridPoint, list[dict], bool], None] | None = None,
              vars_: dict[str, Any] | None = None, formerly: str | None = None) -> SweepResult:
    """Compute every grid point not already in the lake with these settings; write each as one partition.
    `vars_`: the user's --vars (as for `lmaudit build`), e.g. mixture_model_aliases to find the truth.
    `formerly`: another spelling the sampler's model was keyed by before (`take_over_point`)."""
    t_all = time.perf_counter()
    refs = load_references(lake, domains, sources)
    plan_checks(spec, refs, sampler, lake)
    estimators = spec.estimators or default_estimators(vars_)
    documented, truth_source = documented_truth(lake, sampler.model,
                                                mixture_vars(vars_).get("mixture_model_aliases") or {})
    truth_vars = changed_truth_vars(vars_)
    n_base = sampler.n_generations if sampler.run_id is None else (sampler.n_available(lake) or 0)
    n_run = max([n_base] + [p.config.n_generations or 0 for p in spec.points()])
    ref_key = make_key(*refs.ids.tolist())
    classifiers: dict[tuple, TrainedClassifier] = {}
    posteriors: dict[tuple, np.ndarray] = {}
    samples: dict[float, tuple[str, list[str]]] = {}  # per temperature: one texts() call (it loads the model)
    computed, skipped = [], []

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from ingest.progress import progress_bar

    points = spec.points()
    # spellings of the model its points were keyed by before: the absolute folder (`formerly`), also in the place
    # the warehouse was moved from (review: only the current place's was taken over; the old point was computed
    # again and kept beside the new one)
    former = sorted(({formerly} - {None, sampler.model}) | former_spellings(lake, spec.study, sampler.model))
    bar = progress_bar(TextColumn("[bold]mixture sweep"), TextColumn("{task.description}"), BarColumn(),
                       MofNCompleteColumn(), TimeElapsedColumn(), console=Console(stderr=True), enabled=progress)
    with bar:
        task = bar.add_task("", total=len(points))
        for p in points:
            c = p.config
            params = {"point": asdict(c), "estimators": list(estimators), "seed": spec.seed,
                      "calibration": spec.calibration, "references": ref_key, "domains": refs.domains,
                      "sampler": asdict(sampler), "n_run": n_run, **({"truth_vars": truth_vars} if truth_vars else {})}
            config = point_config(params)
            part = point_partition(spec.study, sampler.model, p)
            take_over_spellings(lake, spec.study, sampler.model, former, p, params,
                                lambda f: {**params, "sampler": asdict(replace(sampler, model=f))})
            if point_done(lake, part, config):
                skipped.append(p)
                bar.advance(task)
                if on_point:
                    on_point(p, lake.read(TABLE, part).to_pylist(), True)
                continue
            bar.update(task, description=f"{p.axis}={p.value}")
            t0 = time.perf_counter()
            ckey = (c.backend, c.per_domain, c.granularity)
            if ckey not in classifiers:
                # no nested bar: the sweep's own bar names the point being computed
                classifiers[ckey] = train_point_classifier(refs, c, seed=spec.seed, calibration=spec.calibration,
                                                           progress=False)
            clf = classifiers[ckey]
            if c.temperature not in samples:
                samples[c.temperature] = sampler.texts(lake, spec.study, c.temperature, spec.base.temperature,
                                                       n_run, progress=False, former=former)
            run_id, texts = samples[c.temperature]
            pkey = (ckey, run_id)
            if pkey not in posteriors:  # empty samples get no posterior, as in classify score (NaN rows, dropped)
                nonempty = [i for i, t in enumerate(texts) if t.strip()]
                probs = clf.crossfit.posteriors([texts[i] for i in nonempty])
                full = np.full((len(texts), len(clf.classes)), np.nan)
                full[nonempty] = probs
                posteriors[pkey] = full
            n = c.n_generations or len(texts)
            gen = posteriors[pkey][:n]
            gen = gen[~np.isnan(gen).any(axis=1)]
            rows = point_rows(study=spec.study, model=sampler.model, point=p, clf=clf, gen=gen,
                              estimators=estimators, documented=documented, truth_source=truth_source,
                              run_id=run_id, params=params, seconds=time.perf_counter() - t0, vars_=vars_)
            lake.write(TABLE, part, rows, meta={"config": config, "study": spec.study, "axis": p.axis,
                                                "value": p.value})
            drop_spellings(lake, spec.study, former, p)
            computed.append(p)
            bar.advance(task)
            if on_point:
                on_point(p, rows, False)
    return SweepResult(points, computed, skipped, time.perf_counter() - t_all)


def overlap_by_estimator(rows: list[dict]) -> dict[str, float | None]:
    """Overlap accuracy per estimator of one point's rows (for printing; the mart computes its own)."""
    out: dict[str, float | None] = {}
    for e in sorted({r["estimator"] for r in rows}):
        rs = [r for r in rows if r["estimator"] == e]
        if any(r["estimate"] is None or r["truth"] is None for r in rs):
            out[e] = None
        else:
            out[e] = 1 - 0.5 * sum(abs(r["estimate"] - r["truth"]) for r in rs)
    return out
