"""`cobell predict`: the plan `cobell submit` would follow, without running anything."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from cobell_cli.cli.common import (
    AllowNoClusterOpt,
    CaBundleOpt,
    ClusterOpt,
    ConfidenceOpt,
    InputSizeOpt,
    InputToleranceOpt,
    JobOpt,
    LabelPriceOpt,
    MaxScaleOutOpt,
    MinScaleOutOpt,
    NodeLabelOpt,
    RmUrlOpt,
    StandaloneUrlOpt,
    StepOpt,
    StrictOpt,
    TargetOpt,
    cluster_flags,
    label_flags,
    open_history,
    planning_flags,
    settings,
    warn,
)

if TYPE_CHECKING:
    from cobell_cli.api import Prediction


def render(prediction: Prediction) -> str:
    """The human view of a plan: co-runners, candidates, decision and why."""
    from cobell_cli.output import iso, table

    p = prediction.plan
    lines = [f"job {p.job} · target {p.target_s:g} s · cluster: {prediction.cluster}"]
    for view in p.co_runners:
        end = iso(view.predicted_end_at) if view.predicted_end_at else "outlasts the new job?"
        lines.append(
            f"  co-runner {view.app_id} job={view.job or 'unknown'} "
            f"scale-out={view.scale_out if view.scale_out is not None else '?'} "
            f"started={iso(view.started_at)} predicted end={end} ({view.source})"
        )
    if not p.co_runners:
        lines.append("  no co-runners considered")
    if p.candidates:
        app_ids = [v.app_id for v in p.co_runners if v.source != "ignored"]
        rows = []
        for c in p.candidates:
            row: dict[str, Any] = {
                "scale_out": c.scale_out,
                "predicted_s": c.predicted_s,
                "interval_s": (
                    f"{c.lower_s:.0f}-{c.upper_s:.0f}"
                    if c.lower_s is not None and c.upper_s is not None
                    else ""
                ),
                "p_meet": _percent(c.meet_probability),
                "meets": "yes" if c.meets_target else "no",
            }
            for i, app_id in enumerate(app_ids):
                ratio = c.overlap_ratio.get(app_id)
                row[f"ov{i + 1}"] = "" if ratio is None else f"{ratio:.2f}"
            row["chosen"] = "<-" if c.scale_out == p.scale_out else ""
            rows.append(row)
        columns = ["scale_out", "predicted_s", "interval_s", *[f"ov{i + 1}" for i in
                   range(len(app_ids))], "p_meet", "meets", "chosen"]
        lines.append(table(rows, columns))
        for i, app_id in enumerate(app_ids):
            lines.append(f"  ov{i + 1} = predicted overlap ratio with {app_id}")
    lines += _label_lines(prediction)
    predicted = f", predicted {p.predicted_s:.0f} s" if p.predicted_s is not None else ""
    lines.append(f"decision: scale-out {p.scale_out} ({p.phase}{predicted}): {p.reason}")
    lines.append(f"{_policy(p.confidence)}; estimated P(meet the target) at {p.scale_out}: "
                 + _percent(p.meet_probability, unknown=_unknown_why(p.phase)))
    return "\n".join(lines)


def _label_lines(prediction: Prediction) -> list[str]:
    """With --node-label: each label's plan and its cost, and the label chosen."""
    from cobell_cli.output import table

    if prediction.label_options is None:
        return []
    rows = [{"node_label": o["node_label"] or "default", "scale_out": o["scale_out"],
             "predicted_s": o["predicted_s"],
             "factor": f"{o['factor']:.2f} ({o['factor_source']})",
             "price": o["price"], "executor_s_x_price": o["cost"],
             "meets": "yes" if o["feasible"] else "no",
             "chosen": "<-" if o["node_label"] == prediction.node_label else ""}
            for o in prediction.label_options]
    label = prediction.node_label or "default"
    return [table(rows, list(rows[0])) if rows else "", f"node label: {label}"]


def _percent(probability: float | None, unknown: str = "") -> str:
    from cobell_cli.core.plan.reasons import probability_text

    return unknown if probability is None else probability_text(probability)


def _policy(confidence: float | None) -> str:
    if confidence is None:
        return "policy: point prediction (--confidence point)"
    return f"policy: P(meet) >= {confidence:g}"


def _unknown_why(phase: str) -> str:
    if phase == "bootstrap-search":
        return "unknown (binary search: no model yet)"
    return "unknown (too few runs to measure the model's errors)"


def run_prediction(
    ctx: typer.Context,
    *,
    job: str,
    target_s: float,
    input_bytes: int | None,
    flags: dict[str, Any],
    require_history: bool,
    now: float,
    queue: str | None = None,
) -> tuple[Prediction, Any]:
    """Shared by predict and submit: resolve settings, open the history, ask the cluster, plan.

    Returns the prediction and the cluster adapter (submit asks it again after the run).
    """
    from cobell_cli import api
    from cobell_cli.cli.common import connect_cluster

    resolved = settings(ctx, **flags)
    api.check_request(target_s, resolved.min_scale_out, resolved.max_scale_out)
    with open_history(
        ctx, create=not require_history, read_only=require_history
    ) as history:
        cluster = connect_cluster(resolved, history.job_names())
        prediction = api.predict(
            history,
            cluster,
            resolved,
            job=job,
            target_s=target_s,
            now=now,
            input_bytes=input_bytes,
            require_history=require_history,
            queue=queue,
        )
    for message in prediction.warnings:
        warn(message)
    return prediction, cluster


def predict(
    ctx: typer.Context,
    job: JobOpt,
    target_runtime: TargetOpt,
    min_scale_out: MinScaleOutOpt = None,
    max_scale_out: MaxScaleOutOpt = None,
    step: StepOpt = None,
    confidence: ConfidenceOpt = None,
    input_size: InputSizeOpt = None,
    input_tolerance: InputToleranceOpt = None,
    strict: StrictOpt = False,
    node_label: NodeLabelOpt = None,
    label_price: LabelPriceOpt = None,
    as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
    cluster: ClusterOpt = None,
    rm_url: RmUrlOpt = None,
    standalone_url: StandaloneUrlOpt = None,
    ca_bundle: CaBundleOpt = None,
    allow_no_cluster: AllowNoClusterOpt = None,
) -> None:
    """Predict the runtime at every scale-out and pick the smallest that meets the target.

    By default the smallest scale-out whose estimated probability of meeting the target is
    at least 0.9 (p_meet in the table, calibrated on the job's held-out prediction errors);
    --confidence sets another level, --confidence point the paper's point decision.

    Example: cobell predict --job sgd --target-runtime 300 --max-scale-out 24 --cluster none

    Example: cobell predict -j sgd -t 300 --confidence point --json

    Example: cobell predict -j sgd -t 300 --node-label default,fast --label-price fast=2
    """
    import time

    from cobell_cli.cli.common import parse_size
    from cobell_cli.errors import NoFeasibleScaleOut
    from cobell_cli.output import to_json

    flags = {
        **planning_flags(min_scale_out, max_scale_out, step, confidence, input_tolerance),
        **cluster_flags(cluster, rm_url, standalone_url, ca_bundle, allow_no_cluster),
        **label_flags(node_label, label_price),
    }
    prediction, _ = run_prediction(
        ctx,
        job=job,
        target_s=target_runtime,
        input_bytes=parse_size(input_size) if input_size is not None else None,
        flags=flags,
        require_history=True,
        now=time.time(),
    )
    typer.echo(to_json(prediction.to_dict()) if as_json else render(prediction))
    if not prediction.plan.feasible:
        for message in prediction.plan.warnings:
            warn(message)
        if strict:
            raise NoFeasibleScaleOut(
                f"no scale-out in [{prediction.plan.min_scale_out}, "
                f"{prediction.plan.max_scale_out}] meets the {target_runtime:g} s target",
                hint="raise --max-scale-out or the target",
            )
