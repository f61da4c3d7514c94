"""`cobell local-cluster`: a real Spark standalone cluster on this machine, to try cobell."""

from __future__ import annotations

import json

import typer

from cobell_cli.cli.common import info

app = typer.Typer(
    help=(
        "Start, stop and inspect a Spark standalone master and workers on 127.0.0.1, run from "
        "the pyspark wheel (needs the `spark` extra and Java 17). Pid files and logs live under "
        "$XDG_DATA_HOME/cobell/local-cluster."
    ),
    no_args_is_help=True,
)


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
    timeout_s: float = typer.Option(
        120.0, "--timeout", metavar="SECONDS", help="How long to wait for the workers."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the status as one JSON object."),
) -> None:
    """Start the cluster (or reuse the running one) and wait until every worker is ALIVE.

    Example: cobell local-cluster start --workers 2 --cores-per-worker 4
    """
    from cobell_cli.run.local_cluster import LocalCluster

    lc = LocalCluster()
    st = lc.start(
        workers=workers,
        cores_per_worker=cores_per_worker,
        memory_per_worker=memory_per_worker,
        port=port,
        webui_port=webui_port,
        timeout_s=timeout_s,
    )
    if as_json:
        typer.echo(json.dumps(st.to_dict()))
        return
    typer.echo(f"master  {st.master_url}")
    typer.echo(f"web UI  {st.webui_url}")
    typer.echo(f"workers {st.alive_workers} alive, {st.cores} cores in total")
    info(f"try: spark-submit --master {st.master_url} app.py; stop: cobell local-cluster stop")


@app.command("stop")
def stop() -> None:
    """Stop the workers and the master; logs are kept.

    Example: cobell local-cluster stop
    """
    from cobell_cli.run.local_cluster import LocalCluster

    stopped = LocalCluster().stop()
    info(f"stopped {', '.join(stopped)}" if stopped else "the local cluster was not running")


@app.command("status")
def status(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Show the daemons and the master's view; exit code 0 when running, 1 when not.

    Example: cobell local-cluster status --json
    """
    from cobell_cli.run.local_cluster import LocalCluster

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
