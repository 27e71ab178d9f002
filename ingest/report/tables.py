"""Report tables of the mixture marts, in LLMSurgeon's Table 2 shape: models x estimators, overlap accuracy."""

from __future__ import annotations

import html

ESTIMATOR_ORDER = ("direct", "cc", "acc", "pacc", "llmsurgeon_code", "emq", "bbse", "rlls", "bpe_merges",
                   "mia_loss", "mia_zlib", "mia_mink", "mia_minkpp", "mia_ref")

TABLE2_SQL = """
with runs as (select run_id, coalesce(setting, '') as setting, temperature from stg_runs),
ev as (
    select ev.run_model, ev.documented_model, ev.run_id, ev.classifier_name, ev.estimator, ev.overlap_accuracy,
           runs.setting, runs.temperature
    from fct_mixture_evaluation as ev left join runs on ev.run_id = runs.run_id
),
model_level as (select * from ev where run_id is null),
run_level as (select * from ev where run_id is not null)
select run_level.run_model, run_level.documented_model, run_level.run_id, run_level.classifier_name,
       run_level.setting, run_level.temperature, run_level.estimator, run_level.overlap_accuracy
from run_level
union all
select model_level.run_model, model_level.documented_model, r.run_id, r.classifier_name, r.setting, r.temperature,
       model_level.estimator, model_level.overlap_accuracy
from model_level
left join (select distinct run_model, run_id, classifier_name, setting, temperature from run_level) as r
    on model_level.run_model = r.run_model
"""


def short_model(model: str) -> str:
    """A model path as a table label: its last path part, the folder above a generic `model`, and a sandbox
    checkpoint as <model>@step<N>."""
    import re

    m = re.match(r"^(.*)/checkpoints/step-0*([0-9]+)/?$", model)
    base, step = (m.group(1), f"@step{m.group(2)}") if m else (model, "")
    parts = base.rstrip("/").split("/")
    name = parts[-2] if parts[-1] == "model" and len(parts) > 1 else parts[-1]
    return name + step


def table2(con) -> list[tuple[str, dict[str, float | None]]]:
    """One row per (model, run, classifier) with every estimator's overlap accuracy in %: the generation-based
    estimators of that run beside the model-level ones (mia_*, bpe_merges) of the same model. A model with no
    run gets one row of its model-level estimators."""
    rows = con.execute(TABLE2_SQL).fetchall()
    out: dict[str, dict[str, float | None]] = {}
    for model, documented, run_id, clf, setting, temp, est, oa in rows:
        name = short_model(model)
        documented = "" if documented == model else f" ({documented})"
        temp = "" if temp is None else f" T={float(temp):g}"
        label = f"{name}{documented}" + (f" | {run_id}, {setting}{temp}, {clf}" if run_id else "")
        out.setdefault(label, {})[est] = None if oa is None else 100 * float(oa)
    return sorted(out.items())


def table2_html(con) -> str:
    try:
        rows = table2(con)
    except Exception as e:  # noqa: BLE001 - a missing mart leaves a note, not a crash
        return f"<h2>Mixture estimators (Table 2)</h2><p><em>not available: {html.escape(str(e).splitlines()[0])}</em></p>"
    if not rows:
        return "<h2>Mixture estimators (Table 2)</h2><p><em>no rows</em></p>"
    present = {e for _, cells in rows for e in cells}
    cols = [e for e in ESTIMATOR_ORDER if e in present] + sorted(present - set(ESTIMATOR_ORDER))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in ["model (documented) | run, setting, classifier", *cols])
    body = "".join(
        "<tr><td>" + html.escape(label) + "</td>"
        + "".join(f"<td>{'' if cells.get(c) is None else f'{cells[c]:.1f}'}</td>" for c in cols) + "</tr>"
        for label, cells in rows)
    return ("<h2>Mixture estimators (Table 2): overlap accuracy % against the documented mixture</h2>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


TABLE5_ESTIMATOR = "pacc"  # the paper's method as written
STYLE_ORDER = ("instructional", "expository", "conversational", "coding", "category", "neutral", "lmaudit_neutral",
               "unconditional")


def table5(con, estimator: str = TABLE5_ESTIMATOR) -> tuple[list[str], list[tuple[str, dict[str, float | None]]]]:
    """LLMSurgeon's Table 5 shape: one row per prompt style, one column per model, the overlap accuracy in %
    of one estimator (the mean over the style's runs and classifiers of that model, usually one)."""
    rows = con.execute(
        "select style, model, avg(overlap_accuracy) from fct_mixture_prompt_styles where estimator = ? "
        "group by style, model", [estimator]).fetchall()
    models = sorted({short_model(m) for _, m, _ in rows})
    out: dict[str, dict[str, float | None]] = {}
    for style, model, oa in rows:
        out.setdefault(style, {})[short_model(model)] = None if oa is None else 100 * float(oa)
    order = [s for s in STYLE_ORDER if s in out] + sorted(set(out) - set(STYLE_ORDER))
    return models, [(s, out[s]) for s in order]


def table5_html(con, estimator: str = TABLE5_ESTIMATOR) -> str:
    title = f"Prompt styles (Table 5): overlap accuracy % of {estimator} against the documented mixture"
    try:
        models, rows = table5(con, estimator)
    except Exception as e:  # noqa: BLE001 - a missing mart leaves a note, not a crash
        return f"<h2>{html.escape(title)}</h2><p><em>not available: {html.escape(str(e).splitlines()[0])}</em></p>"
    if not rows:
        return f"<h2>{html.escape(title)}</h2><p><em>no rows</em></p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in ["style", *models])
    body = "".join(
        "<tr><td>" + html.escape(style) + "</td>"
        + "".join(f"<td>{'' if cells.get(m) is None else f'{cells[m]:.1f}'}</td>" for m in models) + "</tr>"
        for style, cells in rows)
    return f"<h2>{html.escape(title)}</h2><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# ---------------------------------------------------------------- ablations (fct_mixture_sweeps): Tables 3, 4, 9

SWEEP_TABLES = {  # axis -> (title, row header): LLMSurgeon's ablation tables, rows = the axis's values
    "backend": ("Classifier backbone (Table 3)", "classifier"),
    "reference": ("Reference documents per domain (Table 4)", "samples / domain"),
    "granularity": ("Domain granularity", "classes"),
    "temperature": ("Sampling temperature", "temperature"),
    "generations": ("Number of generations", "generations"),
}


def sweep_table(con, axis: str, estimator: str = TABLE5_ESTIMATOR) -> tuple[list[str], list[tuple[str, dict]]]:
    """One of the paper's ablation tables: one row per value of `axis` (numbers in order), one column per
    model, the overlap accuracy in % of one estimator (the mean over the model's studies, usually one)."""
    rows = con.execute(
        "select value, value_num, model, avg(overlap_accuracy) from fct_mixture_sweeps "
        "where axis = ? and estimator = ? group by value, value_num, model", [axis, estimator]).fetchall()
    models = sorted({short_model(m) for _, _, m, _ in rows})
    order: dict[str, tuple] = {}
    out: dict[str, dict[str, float | None]] = {}
    for value, num, model, oa in rows:
        order[value] = (num is None, num if num is not None else 0.0, value)
        out.setdefault(value, {})[short_model(model)] = None if oa is None else 100 * float(oa)
    return models, [(v, out[v]) for v in sorted(out, key=lambda v: order[v])]


def sweep_tables_html(con, estimator: str = TABLE5_ESTIMATOR) -> str:
    """Every ablation axis present in fct_mixture_sweeps as a table (Tables 3 and 4 first), then Table 9."""
    try:
        axes = {a for (a,) in con.execute("select distinct axis from fct_mixture_sweeps").fetchall()}
    except Exception as e:  # noqa: BLE001 - a missing mart leaves a note, not a crash
        return ("<h2>Ablations (Tables 3, 4, 9)</h2><p><em>not available: "
                f"{html.escape(str(e).splitlines()[0])}</em></p>")
    if not axes:
        return "<h2>Ablations (Tables 3, 4, 9)</h2><p><em>no rows (lmaudit mixture sweep / inject)</em></p>"
    parts = []
    for axis, (title, header) in SWEEP_TABLES.items():
        if axis not in axes:
            continue
        models, rows = sweep_table(con, axis, estimator)
        head = "".join(f"<th>{html.escape(c)}</th>" for c in [header, *models])
        body = "".join(
            "<tr><td>" + html.escape(v) + "</td>"
            + "".join(f"<td>{'' if cells.get(m) is None else f'{cells[m]:.1f}'}</td>" for m in models) + "</tr>"
            for v, cells in rows)
        parts.append(f"<h2>{html.escape(title)}: overlap accuracy % of {html.escape(estimator)}</h2>"
                     f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    if "inject" in axes:
        parts.append(table9_html(con, estimator))
    return "".join(parts)


def table9(con, estimator: str = TABLE5_ESTIMATOR) -> list[tuple[str, str, float | None, float | None, float | None]]:
    """LLMSurgeon's Table 9 shape: per injection model (by study, then share; labelled "model (study)"), the
    injected domain, its true and estimated share in % and the estimate's accuracy 100 - |difference|."""
    rows = con.execute(
        "select study, model, target_domain, target_truth, target_estimate, target_accuracy, value_num "
        "from fct_mixture_sweeps where axis = 'inject' and estimator = ? order by study, value_num",
        [estimator]).fetchall()

    def pct(x):
        return None if x is None else 100 * float(x)

    return [(f"{short_model(m)} ({s})", d, pct(t), pct(e), pct(a)) for s, m, d, t, e, a, _v in rows]


def table9_html(con, estimator: str = TABLE5_ESTIMATOR) -> str:
    title = f"Injected domain (Table 9): true vs estimated share, {estimator}"
    try:
        rows = table9(con, estimator)
    except Exception as e:  # noqa: BLE001 - a missing mart leaves a note, not a crash
        return f"<h2>{html.escape(title)}</h2><p><em>not available: {html.escape(str(e).splitlines()[0])}</em></p>"
    if not rows:
        return f"<h2>{html.escape(title)}</h2><p><em>no rows (lmaudit mixture inject)</em></p>"

    def cell(x):
        return "" if x is None else f"{x:.2f}"

    head = "".join(f"<th>{c}</th>" for c in ("model (study)", "injected domain", "true share (%)", "estimated share (%)",
                                             "estimation accuracy (%)"))
    body = "".join(f"<tr><td>{html.escape(m)}</td><td>{html.escape(d or '')}</td><td>{cell(t)}</td>"
                   f"<td>{cell(e)}</td><td>{cell(a)}</td></tr>" for m, d, t, e, a in rows)
    return f"<h2>{html.escape(title)}</h2><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def injection_figure(con, path) -> bool:
    """Table 9 as a figure: the estimated share of the injected domain against its true share (one line per
    study and estimator, the diagonal for reference); False when there are no inject rows."""
    rows = con.execute(
        "select study, target_domain, estimator, target_truth, target_estimate from fct_mixture_sweeps "
        "where axis = 'inject' and estimator in ('pacc', 'direct', 'emq') and target_estimate is not null "
        "and target_truth is not null order by study, estimator, target_truth").fetchall()
    if not rows:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    series: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for study, dom, est, t, e in rows:
        series.setdefault((study, dom, est), []).append((100 * float(t), 100 * float(e)))
    top = max(max(x, y) for pts in series.values() for x, y in pts)
    ax.plot([0, top * 1.05], [0, top * 1.05], color="grey", lw=1, ls="--", label="estimate = truth")
    for (study, dom, est), pts in series.items():
        ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=f"{dom} ({study}), {est}")
    ax.set_xlabel("true share of the injected domain (%)")
    ax.set_ylabel("estimated share (%)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
