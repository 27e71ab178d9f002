"""`lmaudit classify train`: cross-fitted, calibrated domain classifier into `classifiers` / `classifier_outputs`.

Protocol (docs/mixture-method.md, sections 2-3), for reference documents of the chosen domains (split "train")
with the folds assigned at import (0..F-1):

1. Cross-fitting: for every fold f a fresh model is trained on the other folds and scores fold f, so every
   reference document's posterior comes from a model that never saw it (`classifier_outputs`, item_kind
   "reference", `fold` = f).
2. Calibration on held-out data that the confusion matrix does not use: temperature scaling (TS) and
   bias-corrected TS (BCTS) are fitted on the out-of-fold posteriors of one fold, the *calibration fold*
   (default 0). Downstream (dbt `fct_confusion`, `fct_mixture_estimates`) the calibration fold is the
   calibration set (BCTS for `emq`, the split of `llmsurgeon_code`) and C is estimated from the other folds.
   `params.calibration` records T, the BCTS biases and the negative log-likelihood (NLL) before and after,
   on the calibration fold (where they were fitted) and on the other folds (held out from the fit).
3. The final model is trained on all reference documents (it scores generations: `lmaudit classify score`)
   and saved under `$LMAUDIT_HOME/classifiers/<name>/`.

Stored posteriors are calibrated with the chosen calibration (`ts` by default; `bcts`; `none`), for
reference documents and generations alike; `classifiers.temperature` is its T. Uncalibrated posteriors are
softmax(T * log p) (up to the BCTS biases).

Exact duplicate texts among the selected documents (e.g. the same file imported from two sources) are
dropped before training, keeping the smallest ref_doc_id: a copy in another fold would leak.
Re-training a classifier of the same name replaces it; its generation scores are removed (they came from
the old model): score the runs again.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest import __version__
from ingest.classify.backends import Backend, make_backend, softmax
from ingest.errors import UserError
from ingest.lake import Lake, make_key, partition_name
from ingest.mixture.calibration import Calibrator, fit_calibrator
from ingest.references import TRAIN_SPLIT

CALIBRATIONS = ("ts", "bcts", "none")
CLASSIFIERS_DIR = "classifiers"
META_FILE = "classifier.json"


@dataclass(frozen=True)
class TrainSummary:
    classifier_id: str
    name: str
    backend: str
    domains: tuple[str, ...]
    n_docs: int
    folds: int
    temperature: float
    oof_accuracy: float
    nll_heldout_uncalibrated: float
    nll_heldout_calibrated: float
    path: Path
    replaced: bool
    dropped_duplicates: int
    warning: str | None = None

    def line(self) -> str:
        verb = "replaced" if self.replaced else "trained"
        return (f"{verb} classifier {self.name!r} ({self.backend}, {len(self.domains)} domains, {self.n_docs} "
                f"reference documents, {self.folds}-fold cross-fitted): out-of-fold accuracy "
                f"{self.oof_accuracy:.3f}, T = {self.temperature:.3g}, held-out NLL {self.nll_heldout_uncalibrated:.4f}"
                f" -> {self.nll_heldout_calibrated:.4f}; saved in {self.path}"
                + (f"\nwarning: {self.warning}" if self.warning else ""))


def classifier_id_for(name: str) -> str:
    return make_key(name)


def classifier_dir(home: Path, name: str) -> Path:
    """The classifier's folder, as its last `classify train` meant it: a train killed between its lake commit
    and its folder swap is finished here (`settle_classifier_files`), so the next load finds the model the
    lake registers."""
    path = _folder(home, name)
    if path.parent.is_dir() and any(p.name.startswith(f".{path.name}.") for p in path.parent.iterdir()):
        settle_classifier_files(Lake(home))
    return path


def _folder(home: Path, name: str) -> Path:
    from ingest.names import check_name, inside

    base = Path(home) / CLASSIFIERS_DIR
    return inside(base, base / partition_name(check_name("classifier name", name)))


def nll(p: np.ndarray, y: np.ndarray) -> float:
    """Mean negative log-likelihood of the true labels (probabilities clipped at 1e-12)."""
    if len(y) == 0:
        return float("nan")
    return float(-np.mean(np.log(np.maximum(p[np.arange(len(y)), y], 1e-12))))


def _calibrator_json(c: Calibrator) -> dict[str, Any]:
    return {"kind": c.kind, "temperature": c.temperature, "biases": None if c.biases is None else c.biases.tolist(),
            "success": c.success, "iterations": c.iterations, "message": c.message}


def calibrator_from_json(d: dict[str, Any]) -> Calibrator:
    return Calibrator(kind=d["kind"], temperature=float(d["temperature"]),
                      biases=None if d.get("biases") is None else np.asarray(d["biases"], dtype=float),
                      success=bool(d.get("success", True)), message=d.get("message", ""),
                      iterations=int(d.get("iterations", 0)))


def select_references(lake: Lake, domains: list[str] | None,
                      sources: list[str] | None = None) -> tuple[list[str], dict[str, np.ndarray], int]:
    """The training reference documents of `domains` (all when None; of the given `sources` only, when given):
    (domains, {"ref_doc_id", "text", "label", "fold"} arrays sorted by ref_doc_id, duplicates dropped)."""
    t = lake.read("reference_docs")
    if t.num_rows == 0:
        raise UserError("no reference documents in the warehouse; import them with `lmaudit reference import`")
    t = t.filter(pc.fill_null(pc.equal(t.column("split"), TRAIN_SPLIT), True))
    if sources is not None:
        known = sorted({s for s in t.column("source").to_pylist() if s is not None})
        missing = [s for s in sources if s not in known]
        if missing:
            raise UserError(f"no reference documents of source(s) {missing}; known sources: {', '.join(known)}")
        t = t.filter(pc.is_in(t.column("source"), value_set=pa.array(sources)))
    present = sorted(set(t.column("domain").to_pylist()))
    if domains is None:
        domains = present
    else:
        missing = [d for d in domains if d not in present]
        if missing:
            raise UserError(f"domain(s) {missing} have no reference documents; import them with `lmaudit reference "
                            f"import` or drop them from --domains (known: {', '.join(present)})")
        if len(set(domains)) != len(domains):
            raise UserError(f"--domains lists a domain twice: {domains}")
    if len(domains) < 2:
        raise UserError(f"a domain classifier needs at least 2 domains, got {domains}")
    t = t.filter(pc.is_in(t.column("domain"), value_set=pa.array(domains)))
    if t.column("fold").null_count:
        raise UserError("some reference documents have no fold; re-import them with `lmaudit reference import`")
    # dedupe exact texts (a copy in another fold would leak), keeping the smallest ref_doc_id
    t = t.sort_by("ref_doc_id")
    ids = t.column("ref_doc_id").to_pylist()
    texts = t.column("text").to_pylist()
    keep, seen = [], set()
    for i, text in enumerate(texts):
        if text not in seen:
            seen.add(text)
            keep.append(i)
    dropped = len(texts) - len(keep)
    index = {d: i for i, d in enumerate(domains)}
    cols = {
        "ref_doc_id": np.asarray([ids[i] for i in keep], dtype=object),
        "text": np.asarray([texts[i] for i in keep], dtype=object),
        "label": np.asarray([index[d] for d in t.column("domain").take(keep).to_pylist()], dtype=np.int64),
        "fold": t.column("fold").take(keep).to_numpy().astype(np.int64),
    }
    return domains, cols, dropped


def check_folds(domains: list[str], labels: np.ndarray, folds: np.ndarray) -> list[int]:
    fold_ids = sorted(set(folds.tolist()))
    if len(fold_ids) < 2:
        raise UserError(f"the reference documents span {len(fold_ids)} fold(s); cross-fitting needs at least 2 "
                        f"(re-import with --folds 5)")
    for f in fold_ids:
        train = labels[folds != f]
        missing = [domains[k] for k in range(len(domains)) if not np.any(train == k)]
        if missing:
            raise UserError(f"domain(s) {missing} appear only in fold {f}: the model for fold {f} could not learn "
                            "them; import more documents of those domains (at least one per fold)")
    return fold_ids


def _progress(enabled: bool):
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from ingest.progress import progress_bar

    return progress_bar(TextColumn("[bold]classify train"), TextColumn("{task.description}"), BarColumn(),
                        MofNCompleteColumn(), TimeElapsedColumn(), console=Console(stderr=True), enabled=enabled)


@dataclass
class CrossFit:
    """What cross-fitting and calibration give: out-of-fold posteriors before (`raw`) and after (`probs`) the
    chosen calibration, both fitted calibrators, the final model trained on every document (it scores
    generations; apply `chosen` to its softmax), and the fallback taken, if any."""

    raw: np.ndarray
    probs: np.ndarray
    ts: Calibrator
    bcts: Calibrator
    chosen: Calibrator
    fallback: str | None
    final: Backend

    def posteriors(self, texts: list[str]) -> np.ndarray:
        """Calibrated posteriors of new texts from the final model (as `classify score` computes them)."""
        if not texts:
            return np.zeros((0, self.raw.shape[1]))
        return self.chosen(softmax(self.final.logits(texts)))


def crossfit(proto: Backend, texts: np.ndarray, labels: np.ndarray, folds: np.ndarray, fold_ids: list[int], *,
             calibration: str = "ts", calibration_fold: int = 0, seed: int = 0, progress: bool = True) -> CrossFit:
    """Steps 1-3 of the protocol (module docstring), in memory: `classify train` stores what this returns,
    `lmaudit mixture sweep` (ingest/mixture/sweep.py) uses it for every grid point's classifier."""
    k = proto.n_domains
    oof_logits = np.zeros((len(texts), k))
    with _progress(progress) as bar:
        for f in fold_ids:
            tr = np.flatnonzero(folds != f)
            te = np.flatnonzero(folds == f)
            model = proto.fresh(seed=seed + 1 + f)
            task = bar.add_task(f"fold {f} ({len(tr)} train / {len(te)} held out)", total=model.steps(len(tr)))
            model.fit(texts[tr].tolist(), labels[tr], on_step=lambda d, t, task=task: bar.update(task, completed=d))
            oof_logits[te] = model.logits(texts[te].tolist())
            bar.update(task, completed=model.steps(len(tr)))
        final = proto.fresh(seed=seed)
        task = bar.add_task(f"final model ({len(texts)} documents)", total=final.steps(len(texts)))
        final.fit(texts.tolist(), labels, on_step=lambda d, t: bar.update(task, completed=d))
        bar.update(task, completed=final.steps(len(texts)))

    raw = softmax(oof_logits)
    if not np.all(np.isfinite(raw)):
        raise UserError("the classifier produced NaN posteriors for some reference documents; check the backend "
                        "parameters (learning rate) and retrain")
    cal_mask = folds == calibration_fold
    ts = fit_calibrator(raw[cal_mask], labels[cal_mask], "ts")
    bcts = fit_calibrator(raw[cal_mask], labels[cal_mask], "bcts")
    fallback = None
    if np.all(np.argmax(raw[cal_mask], axis=1) == labels[cal_mask]):
        # Every calibration document is classified correctly: the NLL falls monotonically as T -> 0 and has
        # no finite minimiser (the optimiser stops at some tiny T that makes every later error near-certain).
        fallback = ("separable_calibration_fold:uncalibrated (every calibration document is classified correctly, "
                    "so the temperature has no finite maximum-likelihood value; posteriors left uncalibrated)")
        ts = Calibrator(kind="ts", success=False, message="separable calibration fold")
        bcts = Calibrator(kind="bcts", success=False, message="separable calibration fold")
    chosen = {"ts": ts, "bcts": bcts, "none": Calibrator(kind="none")}[calibration]
    return CrossFit(raw=raw, probs=chosen(raw), ts=ts, bcts=bcts, chosen=chosen, fallback=fallback, final=final)


def train_classifier(lake: Lake, *, backend: str = "tfidf", domains: list[str] | None = None, name: str | None = None,
                     calibration: str = "ts", calibration_fold: int = 0, seed: int = 0,
                     params: dict[str, Any] | None = None, progress: bool = True) -> TrainSummary:
    """Cross-fit, calibrate, train the final model, save it, and write `classifiers` + reference outputs."""
    home = lake.home
    if calibration not in CALIBRATIONS:
        raise UserError(f"--calibration must be one of {', '.join(CALIBRATIONS)}, got {calibration!r}")
    name = name or backend
    _folder(home, name)  # a valid name that stays inside <warehouse>/classifiers, before any work
    domains, refs, dropped = select_references(lake, domains)
    k = len(domains)
    labels, folds, texts = refs["label"], refs["fold"], refs["text"]
    fold_ids = check_folds(domains, labels, folds)
    if calibration_fold not in fold_ids:
        raise UserError(f"--calibration-fold {calibration_fold} is not one of the folds {fold_ids}")
    proto: Backend = make_backend(backend, k, seed=seed, **(params or {}))
    cf = crossfit(proto, texts, labels, folds, fold_ids, calibration=calibration,
                  calibration_fold=calibration_fold, seed=seed, progress=progress)
    raw, ts, bcts, chosen, fallback, final, probs = cf.raw, cf.ts, cf.bcts, cf.chosen, cf.fallback, cf.final, cf.probs
    cal_mask = folds == calibration_fold
    held = ~cal_mask
    temperature = chosen.temperature if chosen.kind != "none" and chosen.success else 1.0
    report = {
        "kind": calibration, "fold": calibration_fold, "n_calibration": int(cal_mask.sum()),
        "n_heldout": int(held.sum()), "ts": _calibrator_json(ts), "bcts": _calibrator_json(bcts),
        "applied": _calibrator_json(chosen), "fallback": fallback,
        "nll": {
            "calibration_fold": {"uncalibrated": nll(raw[cal_mask], labels[cal_mask]),
                                 "ts": nll(ts(raw[cal_mask]), labels[cal_mask]),
                                 "bcts": nll(bcts(raw[cal_mask]), labels[cal_mask])},
            "heldout_folds": {"uncalibrated": nll(raw[held], labels[held]), "ts": nll(ts(raw[held]), labels[held]),
                              "bcts": nll(bcts(raw[held]), labels[held])},
        },
    }
    oof_acc = float(np.mean(np.argmax(raw, axis=1) == labels))
    support = {d: int(np.sum(labels == i)) for i, d in enumerate(domains)}

    cid = classifier_id_for(name)
    path = _folder(home, name)
    all_params = {
        "backend_params": proto.get_params(), "seed": seed, "folds": len(fold_ids), "fold_ids": fold_ids,
        "calibration_fold": calibration_fold, "calibration": report, "oof_accuracy": oof_acc, "support": support,
        "n_reference": int(len(texts)), "dropped_duplicates": dropped, "code_version": __version__,
        "path": str(path),
    }
    # The model's files and the lake rows change together: the files are staged in a hidden folder named by
    # a fresh `files_id`, the lake transaction (whose classifiers row records that files_id) is the commit
    # point, and the staged folder then replaces the old one. A kill before the commit leaves the old
    # classifier whole (the staged folder is removed by the next train or load); a kill after it leaves a
    # staged folder that the lake names, and `settle_classifier_files` (next train, next load) installs it.
    files_id = uuid.uuid4().hex
    all_params["files_id"] = files_id
    replaced = partition_name("clf", name) in lake.partitions("classifiers")
    rows = [{"output_id": make_key(cid, rid), "classifier_id": cid, "item_id": rid, "item_kind": "reference",
             "fold": int(f), "probs": p.tolist()} for rid, f, p in zip(refs["ref_doc_id"], folds, probs)]
    fitted_on = (f"reference_docs: {len(texts)} documents of {k} domains, {len(fold_ids)}-fold cross-fitted; "
                 f"{calibration} calibration on fold {calibration_fold} ({int(cal_mask.sum())} documents)")
    base = path.parent
    with _classifiers_lock(base):
        _settle(lake, base)
        staged = base / f".{path.name}.{files_id}.new"
        staged.mkdir()
        try:
            final.save(staged)
            meta = {"classifier_id": cid, "name": name, "backend": backend, "domains": domains,
                    "calibration": _calibrator_json(chosen), "params": all_params}
            (staged / META_FILE).write_text(json.dumps(_clean(meta), indent=1, sort_keys=True))
            # lake, as one transaction (the old scores, the new posteriors and the classifiers row are visible
            # together): old generation scores of this classifier go (they came from the replaced model)
            with lake.transaction():
                for part in lake.partitions("classifier_outputs"):
                    if part.startswith(f"gen--{cid}"):
                        lake.delete("classifier_outputs", part)
                lake.write("classifier_outputs", partition_name("ref", cid), rows)
                lake.write("classifiers", partition_name("clf", name), [{
                    "classifier_id": cid, "name": name, "backend": backend,
                    "params": json.dumps(_clean(all_params), sort_keys=True),
                    "domains": domains, "temperature": float(temperature), "fitted_on": fitted_on,
                    "created_at": datetime.now(timezone.utc)}])
        except BaseException:
            shutil.rmtree(staged, ignore_errors=True)
            raise
        _install(staged, path)
    nll_h = report["nll"]["heldout_folds"]
    return TrainSummary(classifier_id=cid, name=name, backend=backend, domains=tuple(domains), n_docs=len(texts),
                        folds=len(fold_ids), temperature=float(temperature), oof_accuracy=oof_acc,
                        nll_heldout_uncalibrated=nll_h["uncalibrated"],
                        nll_heldout_calibrated=nll_h.get(calibration, nll_h["uncalibrated"]), path=path,
                        replaced=replaced, dropped_duplicates=dropped, warning=fallback)


# a hidden folder of the classifiers folder: `.<folder>.<files_id>.new` (staged), `.old` (being replaced),
# `.tmp` (staged by versions before files_id)
_HIDDEN = re.compile(r"^\.(?P<folder>.+)\.(?P<files_id>[0-9a-f]{32})\.(?P<kind>new|old|tmp)$")


@contextmanager
def _classifiers_lock(base: Path):
    """One writer of `<warehouse>/classifiers` at a time (an flock on the folder itself, so no lock file)."""
    import fcntl

    base.mkdir(parents=True, exist_ok=True)
    fd = os.open(base, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _files_id(folder: Path) -> str | None:
    try:
        return json.loads((folder / META_FILE).read_text()).get("params", {}).get("files_id")
    except (OSError, ValueError, AttributeError):
        return None


def _install(staged: Path, path: Path) -> None:
    """Put the staged folder in the classifier's place (the old one moved aside first, then removed)."""
    old = None
    if path.exists():
        old = path.parent / f".{path.name}.{uuid.uuid4().hex}.old"
        path.rename(old)
    staged.rename(path)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _settle(lake: Lake, base: Path) -> list[str]:
    """Finish or undo what a killed `classify train` left (the caller holds `_classifiers_lock`): a staged
    folder that the lake's classifiers row names replaces the installed one; every other hidden folder goes."""
    if not base.is_dir():
        return []
    wanted = {}
    for row in lake.read("classifiers").to_pylist():
        try:
            fid = json.loads(row["params"] or "{}").get("files_id")
        except (ValueError, AttributeError):
            fid = None
        if fid:
            wanted[_folder(lake.home, row["name"]).name] = fid
    done = []
    for p in sorted(base.iterdir()):
        m = _HIDDEN.match(p.name)
        if m is None or not p.is_dir():
            continue
        folder, fid = m.group("folder"), m.group("files_id")
        if m.group("kind") == "new" and wanted.get(folder) == fid and _files_id(base / folder) != fid:
            _install(p, base / folder)
            done.append(f"installed {folder}")
        else:
            shutil.rmtree(p, ignore_errors=True)
            done.append(f"removed {p.name}")
    return done


def settle_classifier_files(lake: Lake) -> list[str]:
    """Repair `<warehouse>/classifiers` after a killed `classify train` (see `train_classifier`): run by the next
    train and by `load_classifier`, so a kill between the lake commit and the folder swap never leaves a
    classifier unusable. Returns what it did (empty when nothing was left)."""
    base = Path(lake.home) / CLASSIFIERS_DIR
    if not base.is_dir() or not any(_HIDDEN.match(p.name) for p in base.iterdir()):
        return []
    with _classifiers_lock(base):
        return _settle(lake, base)


def _clean(x: Any) -> Any:
    """JSON-safe: numpy scalars to Python, NaN/inf to null (DuckDB's JSON reader rejects NaN)."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        v = float(x)
        return v if math.isfinite(v) else None
    if isinstance(x, (str, int, bool)) or x is None:
        return x
    return str(x)
