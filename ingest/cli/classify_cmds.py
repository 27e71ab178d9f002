"""`lmaudit classify train|score|list`: domain classifiers and the posteriors of generations.

`register(app)` adds this group and `lmaudit reference` to the root command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ingest.cli.context import console, state
from ingest.errors import UserError

app = typer.Typer(help="Domain classifiers: train (cross-fitted, calibrated) and score generations.",
                  no_args_is_help=True)


def register(root: typer.Typer) -> None:
    """Add `classify` and `reference` to the root command."""
    from ingest.cli import reference_cmds

    root.add_typer(app, name="classify")
    root.add_typer(reference_cmds.app, name="reference")


def _split_domains(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    out = [d.strip() for v in values for d in v.split(",") if d.strip()]
    return out or None


def _parse_params(items: list[str] | None) -> dict:
    from ingest.options import parse_key_values

    return parse_key_values(items or [], "--param", "C=4", dashes=True)


@app.command("train")
def train(
    ctx: typer.Context,
    backend: Annotated[str, typer.Option(help="tfidf (CPU default) or transformer.")] = "tfidf",
    domains: Annotated[list[str] | None, typer.Option("--domains", help="Domains to classify, comma-separated or repeated (default: every imported domain).")] = None,
    name: Annotated[str | None, typer.Option(help="Classifier name (default: the backend); training the same name again replaces it.")] = None,
    checkpoint: Annotated[Path | None, typer.Option(help="transformer: local model folder to fine-tune (e.g. DistilBERT); without it a small model is trained from scratch.")] = None,
    epochs: Annotated[int | None, typer.Option(help="transformer: epochs (3).")] = None,
    lr: Annotated[float | None, typer.Option(help="transformer: learning rate (2e-5 fine-tuning, 5e-4 from scratch).")] = None,
    max_len: Annotated[int | None, typer.Option("--max-len", help="transformer: tokens per text (256).")] = None,
    batch_size: Annotated[int | None, typer.Option("--batch-size", help="transformer: batch size (16).")] = None,
    param: Annotated[list[str] | None, typer.Option("--param", help="Other backend parameter KEY=VALUE (tfidf: C, max_chars, max_features, min_df; transformer: dim, n_layers, n_heads, vocab_size, device).")] = None,
    calibration: Annotated[str, typer.Option(help="Calibration applied to stored posteriors: ts, bcts or none.")] = "ts",
    calibration_fold: Annotated[int, typer.Option("--calibration-fold", help="Fold whose out-of-fold posteriors fit the calibration (excluded from the confusion matrix).")] = 0,
    seed: Annotated[int, typer.Option(help="Seed of model initialisation and training.")] = 0,
) -> None:
    """Train a domain classifier: cross-fitted reference posteriors, calibration on a held-out fold, final model.

    Every reference document is scored by the fold model that did not train on it; temperature (and BCTS)
    calibration is fitted on one fold that the confusion matrix leaves out; the final model, trained on all
    documents, is saved under $LMAUDIT_HOME/classifiers/NAME for `lmaudit classify score`.
    """
    from ingest.classify.train import train_classifier

    params = _parse_params(param)
    for key, value in (("checkpoint", checkpoint), ("epochs", epochs), ("lr", lr), ("max_len", max_len),
                       ("batch_size", batch_size)):
        if value is not None:
            if backend != "transformer":
                raise UserError(f"--{key.replace('_', '-')} applies to --backend transformer only")
            params[key] = str(value) if isinstance(value, Path) else value
    s = train_classifier(state(ctx).lake, backend=backend, domains=_split_domains(domains), name=name,
                         calibration=calibration, calibration_fold=calibration_fold, seed=seed, params=params)
    console.print(s.line(), highlight=False, soft_wrap=True)
    if s.replaced:
        console.print("its earlier generation scores were removed: run `lmaudit classify score` again", highlight=False)


@app.command("score")
def score(
    ctx: typer.Context,
    run: Annotated[list[str], typer.Option("--run", help="Run to score (repeat for several).")],
    classifier: Annotated[str | None, typer.Option(help="Classifier name (default: the only one).")] = None,
) -> None:
    """Posteriors of a run's generations (calibrated) into classifier_outputs; scoring again replaces them."""
    from ingest.classify.score import score_runs

    for s in score_runs(state(ctx).lake, list(run), classifier=classifier):
        console.print(s.line(), highlight=False, soft_wrap=True)


@app.command("list")
def list_(ctx: typer.Context) -> None:
    """The trained classifiers."""
    rows = state(ctx).lake.read("classifiers").to_pylist()
    if not rows:
        console.print("no classifiers; train one with `lmaudit classify train`")
        return
    for r in sorted(rows, key=lambda r: r["name"]):
        console.print(f"{r['name']}: {r['backend']}, domains {', '.join(r['domains'])}, T = {r['temperature']:.3g}; "
                      f"{r['fitted_on']}", highlight=False, soft_wrap=True)
