"""`lmaudit classify score`: posteriors of a run's generations from a saved classifier.

The final model of the classifier (trained on all reference documents) scores every non-empty generation
of the run; the posteriors get the classifier's calibration and go into `classifier_outputs` (item_kind
"generation", fold NULL), one partition per (classifier, run), so scoring a run again replaces its rows.
Empty generations are skipped and counted: their posterior would be the classifier's prior, which pulls
the observed mean toward the reference mixture. Each posterior carries the hash of the text it was computed
from; the marts use it only while the generation still has that text (a regenerated or re-imported run
must be scored again, and until then its stale posteriors are left out, never mixed with new ones).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from ingest.classify.backends import Backend, load_backend, softmax
from ingest.classify.train import META_FILE, calibrator_from_json, classifier_dir
from ingest.errors import UserError
from ingest.lake import Lake, make_key, partition_name, text_hash
from ingest.mixture.calibration import Calibrator


@dataclass
class LoadedClassifier:
    classifier_id: str
    name: str
    backend_name: str
    domains: tuple[str, ...]
    calibrator: Calibrator
    backend: Backend
    path: Path

    def posteriors(self, texts: list[str], on_step=None) -> np.ndarray:
        """Calibrated posteriors (n, K) in the classifier's domain order."""
        if not texts:
            return np.zeros((0, len(self.domains)))
        return self.calibrator(softmax(self.backend.logits(texts, on_step=on_step)))


@dataclass(frozen=True)
class ScoreSummary:
    classifier: str
    run_id: str
    n_scored: int
    n_empty: int
    mean_posterior: dict[str, float]

    def line(self) -> str:
        mean = ", ".join(f"{d} {v:.3f}" for d, v in self.mean_posterior.items())
        skipped = f"; skipped {self.n_empty} empty generations" if self.n_empty else ""
        return (f"scored run {self.run_id!r} with {self.classifier!r}: {self.n_scored} generations "
                f"(mean posterior {mean}){skipped}")


def resolve_classifier(lake: Lake, name: str | None) -> dict:
    """The `classifiers` row of `name`, or of the only classifier when no name is given."""
    rows = lake.read("classifiers").to_pylist()
    if not rows:
        raise UserError("no classifier in the warehouse; train one with `lmaudit classify train`")
    names = sorted(r["name"] for r in rows)
    if name is None:
        if len(rows) > 1:
            raise UserError(f"several classifiers ({', '.join(names)}); choose one with --classifier")
        return rows[0]
    match = [r for r in rows if r["name"] == name]
    if not match:
        raise UserError(f"unknown classifier {name!r}; known: {', '.join(names)}")
    return match[0]


def load_classifier(lake: Lake, name: str | None = None) -> LoadedClassifier:
    row = resolve_classifier(lake, name)
    path = classifier_dir(lake.home, row["name"])
    meta_path = path / META_FILE
    if not meta_path.exists():
        raise UserError(f"classifier {row['name']!r} is registered but its files are missing at {path}; retrain it "
                        "with `lmaudit classify train`")
    meta = json.loads(meta_path.read_text())
    if meta["classifier_id"] != row["classifier_id"] or list(meta["domains"]) != list(row["domains"]):
        raise UserError(f"the files at {path} do not belong to classifier {row['name']!r} as registered; retrain it")
    return LoadedClassifier(classifier_id=row["classifier_id"], name=row["name"], backend_name=row["backend"],
                            domains=tuple(meta["domains"]), calibrator=calibrator_from_json(meta["calibration"]),
                            backend=load_backend(path), path=path)


def _run_generations(lake: Lake, run_id: str) -> pa.Table:
    from ingest.lake.runs import run_generations

    return run_generations(lake, run_id)


def is_scored(lake: Lake, classifier: str, run_id: str) -> bool:
    """True when `classifier` has a current posterior for every non-empty generation of the run: one
    computed from the text the generation has now (a regenerated run needs scoring again)."""
    from ingest.classify.train import classifier_id_for

    part = partition_name("gen", classifier_id_for(classifier), run_id)
    if part not in lake.partitions("classifier_outputs"):
        return False
    have = {(r["item_id"], r["text_hash"]) for r in lake.read("classifier_outputs", part).to_pylist()}
    gens = _run_generations(lake, run_id).to_pylist()
    return all((g["generation_id"], text_hash(g["text"])) in have for g in gens if g["text"] and g["text"].strip())


def score_runs(lake: Lake, run_ids: list[str], classifier: str | None = None,
               progress: bool = True) -> list[ScoreSummary]:
    """Score the generations of each run and write one `classifier_outputs` partition per run."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from ingest.progress import progress_bar

    if not run_ids:
        raise UserError("give at least one --run")
    resolve_classifier(lake, classifier)  # cheap checks first: the classifier exists, every run has generations
    tables = {r: _run_generations(lake, r) for r in run_ids}
    clf = load_classifier(lake, classifier)
    out = []
    bar = progress_bar(TextColumn("[bold]classify score"), TextColumn("{task.description}"), BarColumn(),
                       MofNCompleteColumn(), TimeElapsedColumn(), console=Console(stderr=True), enabled=progress)
    with bar:
        for run_id, t in tables.items():
            ids = t.column("generation_id").to_pylist()
            texts = t.column("text").to_pylist()
            keep = [i for i, x in enumerate(texts) if x is not None and x.strip()]
            task = bar.add_task(run_id, total=len(keep))
            p = clf.posteriors([texts[i] for i in keep], on_step=lambda d, n, task=task: bar.update(task, completed=d))
            if not np.all(np.isfinite(p)):
                raise UserError(f"run {run_id!r}: the classifier gave NaN posteriors; retrain the classifier")
            rows = [{"output_id": make_key(clf.classifier_id, ids[i]), "classifier_id": clf.classifier_id,
                     "item_id": ids[i], "item_kind": "generation", "fold": None, "probs": row.tolist(),
                     "text_hash": text_hash(texts[i])}
                    for i, row in zip(keep, p)]
            lake.write("classifier_outputs", partition_name("gen", clf.classifier_id, run_id), rows,
                       meta={"run_id": run_id, "classifier": clf.name, "n_empty": len(texts) - len(keep)})
            mean = p.mean(axis=0) if len(p) else np.full(len(clf.domains), np.nan)
            out.append(ScoreSummary(clf.name, run_id, len(keep), len(texts) - len(keep),
                                    {d: float(v) for d, v in zip(clf.domains, mean)}))
    return out
