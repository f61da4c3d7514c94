"""`cobell local-cluster`: a real Spark standalone cluster, or a real YARN (`--yarn`), on this
machine, to try cobell."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from cobell_cli.cli.common import info

if TYPE_CHECKING:
    from cobell_cli.api import LocalYarnStatus, YarnShape

app = typer.Typer(
    help=(
        "Start, stop and inspect a Spark standalone master and workers on 127.0.0.1, run from "
        "the pyspark wheel (needs the `spark` extra and Java 17), or with --yarn a YARN "
        "ResourceManager and NodeManagers (Hadoop's jars, fetched once with Maven). Pid files "
        "and logs live under $XDG_DATA_HOME/cobell/local-cluster (local-yarn for YARN)."
    ),
    no_args_is_help=True,
)

YARN_HELP = "A YARN ResourceManager and NodeManagers instead of Spark standalone."


@app.command("start")
def start(
    workers: int | None = typer.Option(
        None, "--workers", min=1, help="Number of workers. [default: 2]"
    ),
    cores_per_worker: int | None = typer.Option(
        None,
        "--cores-per-worker",
        min=1,
        help="Cores each worker offers; may exceed the machine's. [default: 4]",
    ),
    memory_per_worker: str | None = typer.Option(
        None,
        "--memory-per-worker",
        metavar="SIZE",
        help="Memory each worker offers to executors (1g per executor by default). [default: 4g]",
    ),
    port: int | None = typer.Option(None, "--port", help="Master port. [default: 7077]"),
    webui_port: int | None = typer.Option(
        None, "--webui-port", help="Master web UI port. [default: 8080]"
    ),
    timeout_s: float | None = typer.Option(
        None,
        "--timeout",
        metavar="SECONDS",
        help="How long to wait for the workers (NodeManagers). [default: 120; 180 with --yarn]",
    ),
    yarn: bool = typer.Option(False, "--yarn", help=YARN_HELP),
    node_managers: int = typer.Option(
        2, "--node-managers", min=1, help="--yarn: NodeManagers in the default partition."
    ),
    labeled_node_managers: int = typer.Option(
        2,
        "--labeled-node-managers",
        min=0,
        help="--yarn: NodeManagers in the exclusive partition named by --node-label.",
    ),
    node_label: str = typer.Option(
        "fast", "--node-label", metavar="LABEL", help="--yarn: the exclusive partition's label."
    ),
    memory_per_node: int = typer.Option(
        4096,
        "--memory-per-node",
        metavar="MB",
        min=1024,
        help="--yarn: memory of each NodeManager.",
    ),
    vcores_per_node: int = typer.Option(
        4, "--vcores-per-node", min=1, help="--yarn: vcores of each NodeManager."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the status as one JSON object."),
) -> None:
    """Start the cluster (or reuse the running one) and wait until every worker is ALIVE.

    With --yarn: a ResourceManager (CapacityScheduler, queues default and batch) and
    NodeManagers, all in one JVM on 127.0.0.1, and a conf directory for HADOOP_CONF_DIR and
    SPARK_CONF_DIR.

    Example: cobell local-cluster start --workers 2 --cores-per-worker 4

    Example: cobell local-cluster start --yarn --node-managers 2 --labeled-node-managers 2
    """
    if yarn:
        from cobell_cli.api import YarnShape

        shape = YarnShape(
            node_managers=node_managers,
            labeled_node_managers=labeled_node_managers,
            node_label=node_label,
            memory_mb_per_node=memory_per_node,
            vcores_per_node=vcores_per_node,
        )
        _start_yarn(shape, 180.0 if timeout_s is None else timeout_s, as_json)
        return
    from cobell_cli.api import LocalCluster

    lc = LocalCluster()
    st = lc.start(
        workers=workers,
        cores_per_worker=cores_per_worker,
        memory_per_worker=memory_per_worker,
        port=port,
        webui_port=webui_port,
        timeout_s=120.0 if timeout_s is None else timeout_s,
    )
    if as_json:
        typer.echo(json.dumps(st.to_dict()))
        return
    typer.echo(f"master  {st.master_url}")
    typer.echo(f"web UI  {st.webui_url}")
    typer.echo(f"workers {st.alive_workers} alive, {st.cores} cores in total")
    info(f"try: spark-submit --master {st.master_url} app.py; stop: cobell local-cluster stop")


def _start_yarn(shape: YarnShape, timeout_s: float, as_json: bool) -> None:
    from cobell_cli.api import LocalYarn

    st = LocalYarn().start(shape, timeout_s=timeout_s)
    if as_json:
        typer.echo(json.dumps(st.to_dict()))
        return
    _print_yarn(st)
    conf = st.conf_dir
    info(
        f"try: HADOOP_CONF_DIR={conf} SPARK_CONF_DIR={conf} spark-submit --master yarn app.py; "
        "stop: cobell local-cluster stop --yarn"
    )


def _print_yarn(st: LocalYarnStatus) -> None:
    d = st.to_dict()
    typer.echo(f"ResourceManager  {d['rm_url'] or '-'}")
    typer.echo(f"conf             {d['conf_dir']}  (HADOOP_CONF_DIR and SPARK_CONF_DIR)")
    nodes = d["nodes"]
    if nodes:
        running = [n for n in nodes if n["state"] == "RUNNING"]
        labels = sorted({n["label"] for n in running if n["label"]})
        labelled = sum(1 for n in running if n["label"])
        where = f", {labelled} labelled {', '.join(labels)}" if labels else ""
        typer.echo(
            f"NodeManagers     {len(running)} running{where}; "
            f"{sum(n['memory_mb'] for n in running)} MB, "
            f"{sum(n['vcores'] for n in running)} vcores in all"
        )
        typer.echo("queues           default (70 %, up to 100 %), batch (30 %, capped)")
    if d["apps_running"] is not None:
        typer.echo(
            f"apps             {d['apps_running']} running, {d['apps_pending']} waiting, "
            f"{d['apps_completed']} completed"
        )


@app.command("stop")
def stop(yarn: bool = typer.Option(False, "--yarn", help=YARN_HELP)) -> None:
    """Stop the workers and the master (with --yarn: the local YARN); logs are kept.

    Example: cobell local-cluster stop

    Example: cobell local-cluster stop --yarn
    """
    if yarn:
        from cobell_cli.api import LocalYarn

        was = LocalYarn().stop()
        info("stopped the local YARN" if was else "the local YARN was not running")
        return
    from cobell_cli.api import LocalCluster

    stopped = LocalCluster().stop()
    info(f"stopped {', '.join(stopped)}" if stopped else "the local cluster was not running")


@app.command("status")
def status(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    yarn: bool = typer.Option(False, "--yarn", help=YARN_HELP),
) -> None:
    """Show the daemons and the master's view; exit code 0 when running, 1 when not.

    Example: cobell local-cluster status --json

    Example: cobell local-cluster status --yarn
    """
    if yarn:
        _yarn_status(as_json)
        return
    from cobell_cli.api import LocalCluster

    st = LocalCluster().status()
    if as_json:
        typer.echo(json.dumps(st.to_dict()))
    else:
        typer.echo(f"running   {'yes' if st.running else 'no'}")
        if st.master_url:
            typer.echo(f"master    {st.master_url}  (web UI {st.webui_url})")
        for d in st.daemons:
            state = "alive" if d.alive else ("stale pid file" if d.pid else "not running")
            typer.echo(f"{d.role:<9} pid {d.pid or '-'} {state}  log {d.log}")
        if st.alive_workers is not None:
            typer.echo(
                f"workers   {st.alive_workers} alive, cores {st.cores_used}/{st.cores} used, "
                f"apps {st.active_apps} running, {st.completed_apps} completed"
            )
    if not st.running:
        raise typer.Exit(1)


def _yarn_status(as_json: bool) -> None:
    from cobell_cli.api import LocalYarn

    st = LocalYarn().status()
    if as_json:
        typer.echo(json.dumps(st.to_dict()))
    else:
        typer.echo(f"running          {'yes' if st.running else 'no'}")
        typer.echo(f"JVM              pid {st.pid or '-'} {'alive' if st.alive else 'not running'}"
                   f"  log {st.log}")  # fmt: skip
        if st.alive:
            _print_yarn(st)
    if not st.running:
        raise typer.Exit(1)
