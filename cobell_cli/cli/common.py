"""What every command shares: the global options, settings, the history, stderr messages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from cobell_cli.api import History, Settings


@dataclass
class State:
    config_path: str | None = None
    db: str | None = None
    debug: bool = False
    _settings: dict[tuple, Settings] = field(default_factory=dict)


def state(ctx: typer.Context) -> State:
    root = ctx.find_root()
    if root.obj is None:
        root.obj = State()
    return root.obj


def warn(message: str) -> None:
    typer.echo(f"cobell: warning: {message}", err=True)


def warn_plan(plan: Any) -> None:
    """The plan's own warnings (runs left out by --input-size, a --executor-memory below the
    memory model's bound, ...) on stderr, feasible or not: predict and submit print them after
    the plan, in text and with --json (which carries them in `warnings` too)."""
    for message in plan.warnings:
        warn(message)


def info(message: str) -> None:
    typer.echo(message, err=True)


def settings(ctx: typer.Context, **flags: Any) -> Settings:
    """Effective settings for this invocation; config warnings are printed once."""
    from cobell_cli import api

    st = state(ctx)
    flags = {"db": st.db, **flags}
    key = tuple(sorted((k, repr(v)) for k, v in flags.items()))
    if key not in st._settings:
        resolved = api.load_settings(st.config_path, **flags)
        if not st._settings:
            for message in resolved.warnings:
                warn(message)
        st._settings[key] = resolved
    return st._settings[key]


def open_history(
    ctx: typer.Context, *, create: bool = True, read_only: bool = False
) -> History:
    """The history at --db; `read_only` for commands that only look (they never change it)."""
    from cobell_cli import api

    resolved = settings(ctx)
    return api.open_history(resolved.db_path, create=create, read_only=read_only,
                            settings=resolved)


# -- options shared by the commands that ask the cluster ------------------------------------

ClusterOpt = Annotated[
    str | None,
    typer.Option(
        "--cluster",
        metavar="yarn|standalone|none|auto",
        help="Where to read co-runners from. [env: COBELL_CLUSTER]",
        rich_help_panel="Cluster",
    ),
]
RmUrlOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--rm-url",
        metavar="URL",
        help="YARN ResourceManager web URL; repeat for HA. [env: COBELL_RM_URL]",
        rich_help_panel="Cluster",
    ),
]
StandaloneUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--standalone-url",
        metavar="URL",
        help="Spark standalone master web UI. [env: COBELL_STANDALONE_URL]",
        rich_help_panel="Cluster",
    ),
]
CaBundleOpt = Annotated[
    str | None,
    typer.Option(
        "--ca-bundle",
        metavar="FILE",
        help="CA bundle to verify the RM's TLS certificate. [env: COBELL_CA_BUNDLE]",
        rich_help_panel="Cluster",
    ),
]
AllowNoClusterOpt = Annotated[
    bool | None,
    typer.Option(
        "--allow-no-cluster/--require-cluster",
        help="Plan without co-runners when the cluster cannot be asked (said in the output). "
        "[env: COBELL_ALLOW_NO_CLUSTER]",
        show_default=False,
        rich_help_panel="Cluster",
    ),
]


def cluster_flags(
    cluster: str | None,
    rm_url: list[str] | None,
    standalone_url: str | None,
    ca_bundle: str | None,
    allow_no_cluster: bool | None = None,
) -> dict[str, Any]:
    return {
        "cluster": cluster,
        "rm_url": rm_url or None,
        "standalone_url": standalone_url,
        "ca_bundle": ca_bundle,
        "allow_no_cluster": allow_no_cluster,
    }


SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}


def parse_size(text: str) -> int:
    """`123`, `10G`, `512MiB`, `1.5TB` -> bytes (binary multiples)."""
    from cobell_cli.errors import UsageError

    cleaned = text.strip().lower().removesuffix("ib").removesuffix("b")
    number, unit = cleaned, ""
    if cleaned and cleaned[-1] in SIZE_UNITS:
        number, unit = cleaned[:-1], cleaned[-1]
    try:
        value = float(number) * SIZE_UNITS[unit]
    except ValueError:
        raise UsageError(
            f"--input-size {text!r} is not a size", hint="use bytes or e.g. 512M, 10G, 1.5T"
        ) from None
    if not 0 <= value < 2**63:  # also NaN and inf: a size the history can store
        raise UsageError(
            f"--input-size must be >= 0 and below 8 EiB, got {text!r}",
            hint="use bytes or e.g. 512M, 10G, 1.5T",
        )
    return int(value)


# -- options shared by predict and submit ---------------------------------------------------

def job_name(text: str) -> str:
    """--job as a job name in its composed form, or the usage error saying what one is (names
    of any script: core/job_name.py)."""
    from cobell_cli import api

    return api.check_job_name(str(text))


JobOpt = Annotated[
    str, typer.Option("--job", "-j", metavar="NAME", parser=job_name,
                      help="The recurring job's name.")
]
def target_runtime(text: str) -> float:
    """--target-runtime as people write it: 600, 90s, 5min, 1h30m (cobell_cli/timespec.py)."""
    from cobell_cli.errors import UsageError
    from cobell_cli.timespec import parse_duration

    if not str(text).strip().startswith("-"):
        seconds = parse_duration(str(text), "--target-runtime")
        if seconds > 0:
            return seconds
    raise UsageError(f"--target-runtime must be > 0 seconds, got {text!r}")


TARGET_HELP = ("Runtime target: seconds, or a duration such as 90s, 5min, 1h30m (optional "
               "with --deadline: then both hold).")
TargetOpt = Annotated[
    float | None,
    typer.Option("--target-runtime", "-t", metavar="DURATION", parser=target_runtime,
                 help=TARGET_HELP),
]
DeadlineOpt = Annotated[
    str | None,
    typer.Option(
        "--deadline", metavar="TIME",
        help="Finish by this time: 06:00 (the next 06:00, local time), an ISO date-time with or "
        "without zone (2026-11-26T06:00+01:00), or +2h30m. Weighs starting now against waiting "
        "for running apps to end. Example: --deadline 06:00",
        rich_help_panel="Deadline",
    ),
]
MaxWaitOpt = Annotated[
    str | None,
    typer.Option(
        "--max-wait", metavar="DURATION",
        help="With --deadline: wait at most this long for a better start (90s, 5min, 1h30m); "
        "also allows a deadline more than a week ahead. Example: --max-wait 20min",
        rich_help_panel="Deadline",
    ),
]
StartNowOpt = Annotated[
    bool,
    typer.Option(
        "--start-now", help="With --deadline: start at once, sized for the deadline (no wait).",
        rich_help_panel="Deadline",
    ),
]
MinScaleOutOpt = Annotated[
    int | None,
    typer.Option(
        "--min-scale-out",
        min=1,
        metavar="N",
        help="Smallest scale-out. [env: COBELL_MIN_SCALE_OUT]",
    ),
]
MaxScaleOutOpt = Annotated[
    int | None,
    typer.Option(
        "--max-scale-out", min=1, metavar="N", help="Largest scale-out. [env: COBELL_MAX_SCALE_OUT]"
    ),
]
StepOpt = Annotated[
    int | None,
    typer.Option(
        "--step", min=1, metavar="N", help="Step between candidates. [env: COBELL_SCALE_OUT_STEP]"
    ),
]
ConfidenceOpt = Annotated[
    str | None,
    typer.Option(
        "--confidence",
        metavar="P|point",
        help="The policy: the smallest scale-out whose upper bound at P is within the target, "
        "so that its P(meet) is at least P (0-1; default 0.95); `point` plans on the "
        "prediction, as the CoBell paper does. "
        "Example: --confidence 0.99. [env: COBELL_CONFIDENCE]",
    ),
]
InputSizeOpt = Annotated[
    str | None,
    typer.Option(
        "--input-size", metavar="BYTES", help="Input size (e.g. 10G); plans on similar runs only."
    ),
]
InputToleranceOpt = Annotated[
    float | None,
    typer.Option(
        "--input-tolerance",
        metavar="FRACTION",
        help="Runs count as similar within ± this fraction of the input size. "
        "[env: COBELL_INPUT_TOLERANCE]",
    ),
]
NodeLabelOpt = Annotated[
    str | None,
    typer.Option(
        "--node-label",
        metavar="LABEL,...|auto",
        help="Choose among these YARN node labels (partitions; 'default' is the default "
        "partition) the (label, scale-out) that meets the target at the least price x "
        "executor-seconds; 'auto': every label the submit's queue may use. YARN only: the "
        "label expression is injected, co-runners count in their own partition. "
        "Example: --node-label default,fast. [env: COBELL_NODE_LABELS]",
    ),
]
LabelPriceOpt = Annotated[
    str | None,
    typer.Option(
        "--label-price",
        metavar="LABEL=PRICE,...",
        help="Each node label's price per executor-second (default 1). "
        "Example: --label-price default=1,fast=2.5. [env: COBELL_LABEL_PRICES]",
    ),
]


def label_flags(node_label: str | None, label_price: str | None) -> dict[str, Any]:
    return {"node_labels": node_label, "label_prices": label_price}


StrictOpt = Annotated[
    bool, typer.Option("--strict", help="Exit 3 when no scale-out in the range meets the target "
                       "(with --deadline: when no start meets the deadline); exit 2 for a "
                       "deadline that has passed or an option that changes nothing (without "
                       "--strict: a warning); nothing runs.")
]


def unused_options(ctx: typer.Context, flags: dict[str, Any], input_size: str | None,
                   strict: bool) -> None:
    """Options given that change nothing: a warning each, or with `strict` a usage error
    (exit 2). --label-price without node labels to choose among, --input-tolerance without
    --input-size (every run counts as similar then). Settings from the environment or the
    config file are defaults for every command, not asked of this one: never said."""
    from cobell_cli.errors import UsageError

    resolved = settings(ctx, **flags)
    unused = []
    if flags.get("label_prices") is not None and not resolved.node_labels:
        unused.append(("--label-price changes nothing without --node-label (no labels to "
                       "choose among)", "add --node-label LABEL,... or drop --label-price"))
    if flags.get("input_tolerance") is not None and input_size is None:
        unused.append(("--input-tolerance changes nothing without --input-size (every run "
                       "counts as similar)", "add --input-size or drop --input-tolerance"))
    for message, hint in unused:
        if strict:
            raise UsageError(message, hint=hint)
        warn(f"{message}; {hint}")
MinimizeOpt = Annotated[
    str,
    typer.Option(
        "--minimize",
        metavar="executor-seconds|memory-mb-seconds",
        help="What the reservation minimises among the scale-outs that meet the target: "
        "executor-seconds (the smallest scale-out) or memory-mb-seconds (container MB x "
        "executors x predicted runtime, with each scale-out's memory sized). "
        "Example: --minimize memory-mb-seconds.",
    ),
]
MemoryConfidenceOpt = Annotated[
    float | None,
    typer.Option(
        "--memory-confidence",
        min=0.5,
        max=0.999,
        metavar="P",
        help="Spark: size each executor's memory to cover the job's predicted need with "
        "estimated probability P (default 0.95). A level given holds out as many runs as it "
        "needs to act (19 at 0.95, 99 at 0.99) and warns while the history has fewer. "
        "Example: --memory-confidence 0.99.",
    ),
]


def deadline_request(
    deadline: str | None, max_wait: str | None, start_now: bool, target_s: float | None,
    now: float, queue: str | None = None, minimize: str = "executor-seconds",
    strict: bool = False,
) -> Any:
    """The deadline options as a `deadlines.DeadlineRequest` (None without --deadline); a
    usage error names the accepted forms, or what is missing; with `strict`, a deadline that
    has passed (without it, the plan is the fastest start, and says why)."""
    from cobell_cli.errors import UsageError

    if deadline is None:
        if max_wait is not None or start_now:
            raise UsageError("--max-wait and --start-now need --deadline",
                             hint="e.g. --deadline 06:00 --max-wait 20min")
        if target_s is None:
            raise UsageError("give --target-runtime SECONDS or --deadline TIME",
                             hint="e.g. --target-runtime 600 or --deadline 06:00")
        return None
    from cobell_cli.api.deadlines import DeadlineRequest, check_deadline
    from cobell_cli.timespec import local_zone, parse_duration, parse_moment

    at = parse_moment(deadline, "--deadline", now, local_zone(now))
    wait_s = parse_duration(max_wait, "--max-wait") if max_wait is not None else None
    request = DeadlineRequest(deadline_at=at, submitted_at=now, max_wait_s=wait_s,
                              start_now=start_now, minimize=minimize,  # type: ignore[arg-type]
                              **({"queue": queue} if queue else {}))
    check_deadline(request, now)
    if strict and at <= now:
        from cobell_cli.api.deadlines import passed_text

        raise UsageError(passed_text(at, now) + "; nothing was started",
                         hint="give a later --deadline (06:00 is the next 06:00), or drop "
                         "--strict to start at once at the fastest scale-out")
    return request


def planning_flags(
    min_scale_out: int | None,
    max_scale_out: int | None,
    step: int | None,
    confidence: str | None,
    input_tolerance: float | None,
) -> dict[str, Any]:
    return {
        "min_scale_out": min_scale_out,
        "max_scale_out": max_scale_out,
        "scale_out_step": step,
        "confidence": confidence,
        "input_tolerance": input_tolerance,
    }
