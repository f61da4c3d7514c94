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
    LabelPriceOpt,
    MaxScaleOutOpt,
    MaxWaitOpt,
    MemoryConfidenceOpt,
    MinimizeOpt,
    MinScaleOutOpt,
    NodeLabelOpt,
    RmUrlOpt,
    StandaloneUrlOpt,
    StartNowOpt,
    StepOpt,
    StrictOpt,
    TargetOpt,
    cluster_flags,
    deadline_request,
    label_flags,
    open_history,
    planning_flags,
    settings,
    unused_options,
    warn,
    warn_plan,
)

if TYPE_CHECKING:
    from cobell_cli.api import Prediction, StartDecision
    from cobell_cli.api.deadlines import DeadlineRequest, Planned


AROUND = 3  # candidate rows shown on each side of the decision without --all


DECISION_WIDTH = 160  # a decision line read at 6 am: details under --verbose and --json


def render(prediction: Prediction, show_all: bool = False, verbose: bool = False) -> str:
    """The human view of a plan: co-runners, candidates around the decision, the decision in
    one short line (with `verbose`, the planner's whole reason under it)."""
    p = prediction.plan
    lines = [_header(prediction), *_co_runner_lines(p)]
    if p.candidates:
        lines.extend(_candidates(prediction, show_all))
    lines += _label_lines(prediction)
    # with a deadline the start is the answer (as in --json): the plan at once leads to it
    lines.append(decision_line(prediction, "decision:" if prediction.start is None
                               else "if started now:"))
    if verbose:
        lines.append(f"  why: {p.reason}")
    lines.append(f"{_policy(prediction.policy, p.phase)}; P(meet) at {p.scale_out}: "
                 + _percent(p.meet_probability, unknown=_unknown_why(p.phase)))
    if p.memory is not None:
        lines.append(memory_line(p.memory))
    if prediction.start is not None:
        lines.extend(render_start(prediction.start, verbose))
    return "\n".join(lines)


def decision_line(prediction: Prediction, label: str = "decision:") -> str:
    """`decision: scale-out 7 meets the 600 s target: prediction 559 s, upper bound 597 s,
    P(meet) 95% (model, 3915 executor-s)`, composed from the plan's fields, at most
    DECISION_WIDTH characters (the planner's reason is under --verbose, in --json `reason`)."""
    from cobell_cli.api import duration_text

    p = prediction.plan
    target = f"the {duration_text(p.target_s)} target"
    if prediction.start is not None and _passed(prediction.start):
        verdict = ", the deadline has passed"
    elif p.predicted_s is None:
        verdict = f" for {target}"
    elif p.feasible:
        verdict = f" meets {target}"
    else:
        verdict = f", though none meets {target}"
    figures = [f"prediction {p.predicted_s:.0f} s" if p.predicted_s is not None else "",
               f"upper bound {_bound(p.upper_s)} s"
               if p.confidence is not None and p.upper_s is not None else "",
               "P(meet) " + _percent(p.meet_probability) if p.meet_probability is not None
               else ""]
    facts = [p.phase if not p.phase.startswith("bootstrap") else f"{p.phase}, run {p.run_number}",
             f"{p.executor_seconds:.0f} executor-s" if p.executor_seconds is not None else ""]
    line = f"{label} scale-out {p.scale_out}{verdict}"
    shown = ", ".join(filter(None, figures))
    for part in (f": {shown}" if shown else "", f" ({', '.join(filter(None, facts))})"):
        if len(line + part) <= DECISION_WIDTH:
            line += part
    return line


def _header(prediction: Prediction) -> str:
    from cobell_cli.output import printable

    p = prediction.plan
    cluster = prediction.cluster if prediction.cluster_ok else _no_cluster(prediction.cluster)
    return f"job {printable(p.job)} · {_target(prediction)} · cluster: {cluster}"


def _target(prediction: Prediction) -> str:
    """`target 9 min 46 s`; with a deadline that has passed, that it has (the plan then stands
    in a target of a millisecond: the fastest start)."""
    from cobell_cli.api import duration_text

    start = prediction.start
    if start is not None and _passed(start):
        return f"deadline passed {duration_text(start.now - start.deadline_at)} ago"
    return f"target {duration_text(prediction.plan.target_s)}"


def _passed(start: StartDecision) -> bool:
    return start.deadline_at <= start.now


def _no_cluster(description: str) -> str:
    """The header's short form; the warning on stderr says it in full, once."""
    if description.startswith("none"):
        return description
    return "none (co-runners not read: see the warning)"


def _co_runner_lines(p: Any) -> list[str]:
    from cobell_cli.output import iso

    lines = []
    for view in p.co_runners:
        end = iso(view.predicted_end_at) if view.predicted_end_at else "outlasts the new job?"
        lines.append(
            f"  co-runner {view.app_id} job={view.job or 'unknown'} "
            f"scale-out={view.scale_out if view.scale_out is not None else '?'} "
            f"started={iso(view.started_at)} predicted end={end} ({view.source})"
        )
    return lines or ["  no co-runners considered"]


def _candidates(prediction: Prediction, show_all: bool) -> list[str]:
    """The candidates' table (the rows around the decision unless `show_all`), what is
    hidden, and what `meets` means under this plan's policy."""
    from cobell_cli.api import meet_probability_note
    from cobell_cli.output import table

    p = prediction.plan
    app_ids = [v.app_id for v in p.co_runners if v.source != "ignored"]
    chosen = next(i for i, c in enumerate(p.candidates) if c.scale_out == p.scale_out)
    first, last = (0, len(p.candidates)) if show_all else (
        max(chosen - AROUND, 0), min(chosen + AROUND + 1, len(p.candidates)))
    overlaps = [f"ov{i + 1}" for i in range(len(app_ids))]
    columns = ["scale-out", "prediction s", "upper bound s", "P(meet)", "meets", "executor-s",
               *overlaps, *_memory_columns(p), "chosen"]
    rows = [{**_row(c, app_ids, c.scale_out == p.scale_out), **_memory_cells(c, p.minimize)}
            for c in p.candidates[first:last]]
    lines = [table(rows, columns)]
    hidden = len(p.candidates) - (last - first)
    if p.grid["kind"] == "sparse":  # a sparse grid far from the decision (core/plan/history.py)
        lines.append(f"  ({hidden} of {len(p.candidates)} judged scale-outs not shown, a sparse "
                     "grid far from the decision: --all and --json have every judged one)")
    elif hidden:
        lines.append(f"  ({hidden} of {len(p.candidates)} scale-outs not shown: --all shows "
                     "every one; --json always has them all)")
    lines.extend(f"  ov{i + 1} = predicted overlap ratio with {app_id}"
                 for i, app_id in enumerate(app_ids))
    rule = ("prediction <= target" if p.confidence is None
            else "upper bound <= target, the same as P(meet) >= the policy's level")
    lines.append(f"  meets: {rule}")
    note = meet_probability_note(p, p.candidates[first:last])
    return [*lines, note] if note else lines


def _row(c: Any, app_ids: list[str], chosen: bool) -> dict[str, Any]:
    row: dict[str, Any] = {
        "scale-out": c.scale_out,
        "prediction s": f"{c.predicted_s:.0f}",
        "upper bound s": "" if c.upper_s is None else _bound(c.upper_s),
        "P(meet)": _percent(c.meet_probability),
        "meets": "yes" if c.meets_target else "no",
        "executor-s": f"{c.executor_seconds:.0f}",
        "chosen": "<-" if chosen else "",
    }
    for i, app_id in enumerate(app_ids):
        ratio = c.overlap_ratio.get(app_id)
        row[f"ov{i + 1}"] = "" if ratio is None else f"{ratio:.2f}"
    return row


def _memory_columns(p: Any) -> list[str]:
    """The memory columns, only where memory was sized: the heap (and the YARN container)."""
    if p.memory is None or p.memory.get("executor_memory_mb") is None:
        return []
    yarn = p.memory.get("executor_overhead_mb") is not None
    cost = ["memory MB-s"] if p.minimize == "memory-mb-seconds" else []
    return ["memory MB", *(["container MB"] if yarn else []), *cost]


def _memory_cells(c: Any, minimize: str) -> dict[str, Any]:
    cells: dict[str, Any] = {"memory MB": c.executor_memory_mb, "container MB": c.container_mb}
    if minimize == "memory-mb-seconds" and c.memory_mb_seconds is not None:
        cells["memory MB-s"] = f"{c.memory_mb_seconds:.3g}"
    return cells


def memory_line(memory: Any) -> str:
    """What the executor memory is and why: the reservation as the terms YARN adds up (heap +
    overhead + the scheduler's rounding = container), the model, its confidence."""
    heap = memory.get("executor_memory_mb")
    if memory.get("source") == "none" or heap is None:
        return f"memory: not sized ({memory.get('note') or 'no memory model'})"
    if memory.get("source") == "user":
        how = "yours (the command sets it; cobell keeps it)"
    else:
        how = (f"covers the predicted need {memory.get('predicted_peak_mb'):.0f} MB up to "
               f"{memory.get('upper_peak_mb'):.0f} MB (P >= {memory.get('memory_confidence'):g})")
    from cobell_cli.api import count

    model = (f"; model {memory.get('model')} on {count(memory.get('runs') or 0, 'run')}, "
             f"chosen by {memory.get('chosen_by')}" if memory.get("model") else "")
    note = f"; {memory['note']}" if memory.get("note") else ""
    return f"memory: {container_sum(memory)} per executor, {how}{model}{note}"


def container_sum(memory: Any) -> str:
    """"512 MB heap + 384 MB overhead + 128 MB rounding = 1024 MB container" on YARN (the
    rounding only where the scheduler's step adds some); the heap alone elsewhere."""
    heap, overhead = memory.get("executor_memory_mb"), memory.get("executor_overhead_mb")
    if overhead is None or memory.get("container_mb") is None:
        return f"{heap} MB heap"
    rounding = memory.get("rounding_mb") or 0
    terms = [f"{heap} MB heap", f"{overhead} MB overhead",
             *([f"{rounding} MB rounding"] if rounding else [])]
    return f"{' + '.join(terms)} = {memory['container_mb']} MB container"


def render_start(start: StartDecision, verbose: bool = False) -> list[str]:
    """The starts weighed against the deadline, their cost, and which won (with `verbose`,
    why: the scheduler's reason)."""
    from cobell_cli.api import count, duration_text
    from cobell_cli.output import table
    from cobell_cli.timespec import local_iso

    left = (f"passed {duration_text(start.now - start.deadline_at)} ago" if _passed(start)
            else f"in {duration_text(start.deadline_at - start.now)}")
    lines = [f"deadline {local_iso(start.deadline_at)} ({left})"
             + (f"; {start.queue_wait_s:.0f} s of YARN queueing counted against it"
                if start.queue_wait_s else "")
             + (f"; {count(start.others_waiting, 'other waiting submit')} weighed"
                if start.others_waiting else "")]
    if start.options:
        rows = [{
            "start": "now" if o.start_at <= start.now + 1 else
            f"{local_iso(o.start_at)} (in {duration_text(o.start_at - start.now)})",
            "after": o.waits_for or "",
            "scale-out": o.scale_out,
            "prediction s": f"{o.predicted_s:.0f}",
            "P(meet)": _percent(o.meet_probability),
            start.minimize: f"{o.cost:,.0f}",
            "meets": "yes" if o.feasible else "no",
            "chosen": "<-" if abs(o.start_at - start.start_at) < 1 else "",
        } for o in start.options]
        lines.append(table(rows, ["start", "after", "scale-out", "prediction s", "P(meet)",
                                  start.minimize, "meets", "chosen"]))
    when = "now" if start.start_now else (
        f"at {local_iso(start.start_at)} (in {duration_text(start.start_in_s)})")
    lines.append(f"decision: start {when} at scale-out {start.scale_out}; P(meet the deadline) "
                 + _percent(start.meet_probability, unknown="unknown")
                 + ("" if start.waits_for is None else f"; waits for {start.waits_for}"))
    if verbose:
        lines.append(f"  why: {start.start_reason}")
    return lines



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
    from cobell_cli import api

    return unknown if probability is None else api.probability_text(probability)


def _bound(upper_s: float) -> str:
    from cobell_cli import api

    return api.bound_text(upper_s)


def _policy(confidence: float | None, phase: str) -> str:
    """The policy asked for, and when it is not what decides this run, what does."""
    from cobell_cli import api  # not api.deadlines: its scheduler costs a cached predict ~15 ms

    return f"policy: {api.policy_text(confidence, phase)}"


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
    memory: Any = None,
    minimize: str = "executor-seconds",
    queue: str | None = None,
    strict: bool = False,
) -> tuple[Prediction, Any]:
    """Shared by predict and submit: resolve settings, open the history, ask the cluster, plan.
    `memory` (an api.MemoryAsk) sizes each candidate's executor memory too; `strict`: a
    --minimize the plan cannot act on is a usage error.

    Returns the prediction and the cluster adapter (submit asks it again after the run).
    """
    from cobell_cli import api

    resolved = settings(ctx, **flags)
    api.check_request(target_s, resolved.min_scale_out, resolved.max_scale_out)
    with open_history(
        ctx, create=not require_history, read_only=require_history
    ) as history:
        cluster = api.connect_cluster(resolved, history.job_names())
        prediction = api.predict(
            history,
            cluster,
            resolved,
            job=job,
            target_s=target_s,
            now=now,
            input_bytes=input_bytes,
            require_history=require_history,
            memory=memory,
            minimize=minimize,
            queue=queue,
        )
    if strict:
        api.check_options_act(prediction, minimize)
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
    memory: Any = None,
    strict: bool = False,
) -> tuple[Planned, Any]:
    """`run_prediction` for a deadline: the plan at once within what the deadline leaves, and
    what the scheduler weighs later starts with (deadlines.plan_for_deadline); `memory` (an
    api.MemoryAsk) sizes each candidate's executor memory too; `strict`: a --minimize the
    plan cannot act on is a usage error before anything is decided."""
    from cobell_cli import api
    from cobell_cli.api import deadlines

    resolved = settings(ctx, **flags)
    if target_s is not None:
        api.check_request(target_s, resolved.min_scale_out, resolved.max_scale_out)
    with open_history(ctx, create=not require_history, read_only=require_history) as history:
        cluster = api.connect_cluster(resolved, history.job_names())
        planned = deadlines.plan_for_deadline(
            history, cluster, resolved, job=job, target_s=target_s, request=request, now=now,
            input_bytes=input_bytes, require_history=require_history, memory=memory)
        if strict:
            api.check_options_act(planned.prediction, request.minimize)
        if require_history:  # predict: the other waiting submits, read only
            decision = deadlines.read_decision(history, planned, now)
            planned.prediction = deadlines.start_prediction(planned, decision)
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
    show_all: bool = typer.Option(
        False, "--all",
        help="Every judged scale-out in the table, not only those around the decision.",
    ),
    minimize: MinimizeOpt = "executor-seconds",
    memory_confidence: MemoryConfidenceOpt = None,
    deadline: DeadlineOpt = None,
    max_wait: MaxWaitOpt = None,
    start_now: StartNowOpt = False,
    node_label: NodeLabelOpt = None,
    label_price: LabelPriceOpt = None,
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Under the decision, the planner's whole reason (--json: "
        "`reason`, `start_reason`)."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print the plan as JSON (always with every scale-out)."
    ),
    cluster: ClusterOpt = None,
    rm_url: RmUrlOpt = None,
    standalone_url: StandaloneUrlOpt = None,
    ca_bundle: CaBundleOpt = None,
    allow_no_cluster: AllowNoClusterOpt = None,
) -> None:
    """Predict the runtime at every scale-out and pick the smallest that meets the target.

    By default the smallest scale-out whose P(meet) is at least 0.95; --confidence sets
    another level, --confidence point the paper's point decision. The table shows the
    scale-outs around the decision (--all: every one).

    The words, the same in the table, the reasons, docs/planning.md and --json (its keys in
    brackets): prediction [predicted_s] is the runtime the model expects at a scale-out, with
    the co-runners' predicted overlap. Each scale-out has its own predictive distribution
    around it, as wide as the job's held-out errors near that scale-out say, and wider where
    the job ran rarely or never. Upper bound [upper_s] is the runtime the job stays below
    with probability P, the policy's level, under that distribution; P(meet)
    [meet_probability] the probability that the runtime is within the target. A scale-out
    meets [meets_target] the target when its upper bound is within it, that is when its
    P(meet) is at least P (--confidence point: its prediction; below the smallest scale-out
    ever run, its upper bound). When none meets it, the plan weighs P(meet) against cost and
    says why (docs/model.md). executor-s [executor_seconds] is scale-out x prediction, what
    the reservation costs.

    Example: cobell predict --job sgd --target-runtime 300 --max-scale-out 24 --cluster none

    Example: cobell predict -j sgd -t 300 --confidence point --json

    Example: cobell predict -j sgd -t 5min --all

    Each candidate's executor memory is sized from the job's runs with a measured memory peak
    (its memory model; the `memory` object in --json); --minimize memory-mb-seconds then
    prefers the scale-out whose containers cost least.

    Example: cobell predict -j sgd -t 300 --input-size 20G --minimize memory-mb-seconds

    With --deadline the table is followed by the starts weighed against it: now, and after
    each running app predicted to end in time, each at the smallest scale-out that meets the
    deadline at the confidence from there, with its P(meet) and cost; the cheapest wins.

    Example: cobell predict -j nightly-report --deadline 06:00

    Example: cobell predict -j sgd -t 300 --node-label default,fast --label-price fast=2
    """
    import time

    from cobell_cli.api import MemoryAsk, check_minimize
    from cobell_cli.cli.common import parse_size
    from cobell_cli.errors import NoFeasibleScaleOut
    from cobell_cli.output import to_json

    flags = {
        **planning_flags(min_scale_out, max_scale_out, step, confidence, input_tolerance),
        **cluster_flags(cluster, rm_url, standalone_url, ca_bundle, allow_no_cluster),
        **label_flags(node_label, label_price),
    }
    now = time.time()
    request = deadline_request(deadline, max_wait, start_now, target_runtime, now,
                               minimize=minimize, strict=strict)
    unused_options(ctx, flags, input_size, strict)
    if request is not None:
        planned, _ = run_deadline_prediction(
            ctx, job=job, target_s=target_runtime, request=request,
            input_bytes=parse_size(input_size) if input_size is not None else None, flags=flags,
            require_history=True, now=now, memory=MemoryAsk(confidence=memory_confidence),
            strict=strict)
        prediction = planned.prediction
        prediction.warnings.extend(planned.warnings)
        typer.echo(to_json(prediction.to_dict()) if as_json
                   else render(prediction, show_all, verbose))
        warn_plan(prediction.plan)
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
        memory=MemoryAsk(confidence=memory_confidence),
        minimize=check_minimize(minimize),
        strict=strict,
    )
    typer.echo(to_json(prediction.to_dict()) if as_json
               else render(prediction, show_all, verbose))
    warn_plan(prediction.plan)
    if not prediction.plan.feasible and strict:
        raise NoFeasibleScaleOut(
            f"no scale-out in [{prediction.plan.min_scale_out}, "
            f"{prediction.plan.max_scale_out}] meets the {target_runtime:g} s target",
            hint="raise --max-scale-out or the target",
        )


def _strict_deadline(prediction: Prediction, strict: bool) -> None:
    """No start meets the deadline: warn loudly, and with --strict exit 3."""
    from cobell_cli.api.deadlines import check_start

    shortfall = check_start(prediction, strict)
    if shortfall is not None:
        warn(shortfall)
