"""What every command shares: the global options, settings, the history, stderr messages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from cobell_cli.config import Settings
    from cobell_cli.store.history import History


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


def info(message: str) -> None:
    typer.echo(message, err=True)


def settings(ctx: typer.Context, **flags: Any) -> Settings:
    """Effective settings for this invocation; config warnings are printed once."""
    from cobell_cli import config

    st = state(ctx)
    flags = {"db": st.db, **flags}
    key = tuple(sorted((k, repr(v)) for k, v in flags.items()))
    if key not in st._settings:
        resolved = config.load(flags, st.config_path)
        if not st._settings:
            for message in resolved.warnings:
                warn(message)
        st._settings[key] = resolved
    return st._settings[key]


def open_history(
    ctx: typer.Context, *, create: bool = True, read_only: bool = False
) -> History:
    """The history at --db; `read_only` for commands that only look (they never change it)."""
    from cobell_cli.store.history import History

    return History.open(settings(ctx).db_path, create=create, read_only=read_only)


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


def connect_cluster(resolved: Settings, known_jobs: list[str]) -> Any:
    from cobell_cli.cluster import connect

    return connect(resolved, known_jobs)


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

JobOpt = Annotated[
    str, typer.Option("--job", "-j", metavar="NAME", help="The recurring job's name.")
]
TargetOpt = Annotated[
    float,
    typer.Option("--target-runtime", "-t", metavar="SECONDS", help="Runtime target in seconds."),
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
        help="Choose the smallest scale-out whose estimated probability of meeting the target "
        "is at least P (0-1; default 0.9), planning on the calibrated upper bound; `point` "
        "plans on the point prediction, as the CoBell paper does. "
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
    bool, typer.Option("--strict", help="Exit 3 when no scale-out in the range meets the target.")
]


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
