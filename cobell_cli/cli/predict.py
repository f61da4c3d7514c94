"""`cobell predict`: the plan `cobell submit` would follow, without running anything."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from cobell_cli.cli.common import (
    AllowNoClusterOpt,
    CaBundleOpt,
    ClusterOpt,
    ConfidenceOpt,
    DeadlineOpt,
    InputSizeOpt,
    InputToleranceOpt,
    JobOpt,
    MaxScaleOutOpt,
    MaxWaitOpt,
    MinScaleOutOpt,
    RmUrlOpt,
    StandaloneUrlOpt,
    StartNowOpt,
    StepOpt,
    StrictOpt,
    TargetOpt,
    cluster_flags,
    deadline_request,
    open_history,
    planning_flags,
    settings,
    warn,
)

if TYPE_CHECKING:
    from cobell_cli.api import Prediction
    from cobell_cli.core.schedule.decision import StartDecision
    from cobell_cli.deadlines import DeadlineRequest, Planned


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
    predicted = f", predicted {p.predicted_s:.0f} s" if p.predicted_s is not None else ""
    lines.append(f"decision: scale-out {p.scale_out} ({p.phase}{predicted}): {p.reason}")
    lines.append(f"{_policy(p.confidence)}; estimated P(meet the target) at {p.scale_out}: "
                 + _percent(p.meet_probability, unknown=_unknown_why(p.phase)))
    if prediction.start is not None:
        lines.extend(render_start(prediction.start))
    return "\n".join(lines)


def render_start(start: StartDecision) -> list[str]:
    """The starts weighed against the deadline, their cost, and which won and why."""
    from cobell_cli.output import table
    from cobell_cli.timespec import local_iso, span_text

    left = span_text(start.deadline_at - start.now)
    lines = [f"deadline {local_iso(start.deadline_at)} (in {left})"
             + (f"; {start.queue_wait_s:.0f} s of YARN queueing counted against it"
                if start.queue_wait_s else "")
             + (f"; {start.others_waiting} other waiting submit(s) weighed"
                if start.others_waiting else "")]
    if start.options:
        rows = [{
            "start": "now" if o.start_at <= start.now + 1 else
            f"{local_iso(o.start_at)} (in {span_text(o.start_at - start.now)})",
            "after": o.waits_for or "",
            "scale_out": o.scale_out,
            "predicted_s": o.predicted_s,
            "p_meet": _percent(o.meet_probability),
            start.minimize: f"{o.cost:,.0f}",
            "meets": "yes" if o.feasible else "no",
            "chosen": "<-" if abs(o.start_at - start.start_at) < 1 else "",
        } for o in start.options]
        lines.append(table(rows, ["start", "after", "scale_out", "predicted_s", "p_meet",
                                  start.minimize, "meets", "chosen"]))
    when = "now" if start.start_now else (
        f"at {local_iso(start.start_at)} (in {span_text(start.start_in_s)})")
    lines.append(f"start: {when} at scale-out {start.scale_out}; P(meet the deadline) "
                 + _percent(start.meet_probability, unknown="unknown") + f": {start.start_reason}")
    return lines



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
        )
    for message in prediction.warnings:
        warn(message)
    return prediction, cluster


def run_deadline_prediction(
    ctx: typer.Context,
    *,
    job: str,
    target_s: float | None,
    request: DeadlineRequest,
    input_bytes: int | None,
    flags: dict[str, Any],
    require_history: bool,
    now: float,
) -> tuple[Planned, Any]:
    """`run_prediction` for a deadline: the plan at once within what the deadline leaves, and
    what the scheduler weighs later starts with (deadlines.plan_for_deadline)."""
    from cobell_cli import deadlines
    from cobell_cli.cli.common import connect_cluster

    resolved = settings(ctx, **flags)
    if target_s is not None:
        from cobell_cli import api

        api.check_request(target_s, resolved.min_scale_out, resolved.max_scale_out)
    with open_history(ctx, create=not require_history, read_only=require_history) as history:
        cluster = connect_cluster(resolved, history.job_names())
        planned = deadlines.plan_for_deadline(
            history, cluster, resolved, job=job, target_s=target_s, request=request, now=now,
            input_bytes=input_bytes, require_history=require_history)
        if require_history:  # predict: the other waiting submits, read only
            decision = deadlines.read_decision(history, planned, now)
            planned.prediction.start = decision
    for message in [*planned.prediction.warnings, *planned.warnings]:
        warn(message)
    return planned, cluster


def predict(
    ctx: typer.Context,
    job: JobOpt,
    target_runtime: TargetOpt = None,
    min_scale_out: MinScaleOutOpt = None,
    max_scale_out: MaxScaleOutOpt = None,
    step: StepOpt = None,
    confidence: ConfidenceOpt = None,
    input_size: InputSizeOpt = None,
    input_tolerance: InputToleranceOpt = None,
    strict: StrictOpt = False,
    deadline: DeadlineOpt = None,
    max_wait: MaxWaitOpt = None,
    start_now: StartNowOpt = False,
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

    With --deadline the table is followed by the starts weighed against it: now, and after
    each running app predicted to end in time, each at the smallest scale-out that meets the
    deadline at the confidence from there, with its P(meet) and cost; the cheapest wins.

    Example: cobell predict -j nightly-report --deadline 06:00
    """
    import time

    from cobell_cli.cli.common import parse_size
    from cobell_cli.errors import NoFeasibleScaleOut
    from cobell_cli.output import to_json

    flags = {
        **planning_flags(min_scale_out, max_scale_out, step, confidence, input_tolerance),
        **cluster_flags(cluster, rm_url, standalone_url, ca_bundle, allow_no_cluster),
    }
    now = time.time()
    request = deadline_request(deadline, max_wait, start_now, target_runtime, now)
    if request is not None:
        planned, _ = run_deadline_prediction(
            ctx, job=job, target_s=target_runtime, request=request,
            input_bytes=parse_size(input_size) if input_size is not None else None, flags=flags,
            require_history=True, now=now)
        prediction = planned.prediction
        prediction.warnings.extend(planned.warnings)
        typer.echo(to_json(prediction.to_dict()) if as_json else render(prediction))
        _strict_deadline(prediction, strict)
        return
    assert target_runtime is not None
    prediction, _ = run_prediction(
        ctx,
        job=job,
        target_s=target_runtime,
        input_bytes=parse_size(input_size) if input_size is not None else None,
        flags=flags,
        require_history=True,
        now=now,
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


def _strict_deadline(prediction: Prediction, strict: bool) -> None:
    """No start meets the deadline: warn loudly, and with --strict exit 3."""
    from cobell_cli.errors import NoFeasibleScaleOut
    from cobell_cli.timespec import local_iso

    start = prediction.start
    if start is None or start.feasible:
        return
    message = (f"no start meets the deadline {local_iso(start.deadline_at)} at "
               f"{_policy(prediction.plan.confidence).removeprefix('policy: ')}"
               f"; best effort: scale-out {start.scale_out}, now")
    if strict:
        raise NoFeasibleScaleOut(message.split("; best effort")[0] + "; nothing was started",
                                 hint="give a later --deadline, raise --max-scale-out, "
                                 "or drop --strict")
    warn(message)
