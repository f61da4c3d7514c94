"""`cobell cluster`: what cobell sees on the cluster (apps, and which RM/master answers)."""

from __future__ import annotations

import json
from typing import Any

import typer

from cobell_cli.cli.common import (
    CaBundleOpt,
    ClusterOpt,
    RmUrlOpt,
    StandaloneUrlOpt,
    cluster_flags,
    info,
    settings,
    warn,
)

app = typer.Typer(
    help="Show what cobell sees on the cluster: running apps and the RM/master it asks.",
    no_args_is_help=True,
)

APP_COLUMNS = [
    "app_id",
    "name",
    "job",
    "user",
    "queue",
    "state",
    "started",
    "scale_out",
    "progress",
]


def _connect(
    ctx: typer.Context,
    cluster: str | None,
    rm_url: list[str] | None,
    standalone_url: str | None,
    ca_bundle: str | None,
) -> Any:
    from cobell_cli import api

    flags = cluster_flags(cluster, rm_url, standalone_url, ca_bundle)
    return api.connect_cluster(settings(ctx, **flags), _known_jobs(ctx))


def _known_jobs(ctx: typer.Context) -> list[str]:
    """Jobs in the history, so apps named like one map to it; no history means none known."""
    from cobell_cli import api
    from cobell_cli.errors import HistoryError

    try:
        return api.history_jobs(settings(ctx).db_path)
    except HistoryError as exc:
        warn(f"apps are not matched to jobs by name: {exc.line()}")
        return []


def _progress(value: float | None) -> str | None:
    return None if value is None else f"{value * 100:.0f}%"


@app.command("apps")
def apps(
    ctx: typer.Context,
    cluster: ClusterOpt = None,
    rm_url: RmUrlOpt = None,
    standalone_url: StandaloneUrlOpt = None,
    ca_bundle: CaBundleOpt = None,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List the running apps as cobell sees them, and the job each one maps to.

    Apps no job claims are "unknown" co-runners: they still count as interference.

    Example: cobell cluster apps --rm-url http://rm1:8088 --rm-url http://rm2:8088
    """
    from dataclasses import asdict

    from cobell_cli import api
    from cobell_cli.output import iso, table

    backend = _connect(ctx, cluster, rm_url, standalone_url, ca_bundle)
    running = api.running_apps(backend)
    if backend.name == "none":
        warn(backend.describe())
    if as_json:
        records = [{**asdict(a), "tags": list(a.tags)} for a in running]
        payload = {"backend": backend.name, "cluster": backend.describe(), "apps": records}
        typer.echo(json.dumps(payload))
        return
    info(f"cluster: {backend.describe()}")
    rows = [
        {
            "app_id": a.app_id,
            "name": a.name,
            "job": a.job or "unknown",
            "user": a.user,
            "queue": a.queue,
            "state": a.state,
            "started": iso(a.started_at),
            "scale_out": a.scale_out,
            "progress": _progress(a.progress),
        }
        for a in running
    ]
    if not rows:
        info("no running apps")
    typer.echo(table(rows, APP_COLUMNS))


@app.command("check")
def check(
    ctx: typer.Context,
    cluster: ClusterOpt = None,
    rm_url: RmUrlOpt = None,
    standalone_url: StandaloneUrlOpt = None,
    ca_bundle: CaBundleOpt = None,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
) -> None:
    """Ask the cluster once: which RM/master answered, its HA state, auth mode and latency.

    Exits 4 when no configured RM/master answers.

    Example: cobell cluster check --json
    """
    from cobell_cli import api

    backend = _connect(ctx, cluster, rm_url, standalone_url, ca_bundle)
    report = api.check_cluster(backend)
    if backend.name == "none":
        warn(backend.describe())
    if as_json:
        typer.echo(json.dumps(report, default=str))
        return
    if backend.name == "none":
        typer.echo("backend:  none (no cluster information is used)")
        return
    lines = [
        ("backend", report["backend"]),
        ("answered", f"{report['url']}" + (" (after a redirect)" if report["redirected"] else "")),
        ("ha state", report.get("ha_state") or "not reported (no HA)"),
        ("asked", ", ".join(report.get("configured", []))),
        ("from", report.get("source")),
        ("auth", _auth_text(report)),
        ("latency", f"{report['latency_ms']:.1f} ms"),
    ]
    for entry in report.get("skipped", []):
        lines.append(("skipped", f"{entry['url']}: {entry['why']}"))
    if report.get("tls_verify"):
        lines.append(("tls", report["tls_verify"]))
    if report.get("rm_version"):
        lines.append(("version", report["rm_version"]))
    if report.get("workers_alive") is not None:
        lines.append(("workers", f"{report['workers_alive']} alive, {report.get('cores')} cores"))
    for key, value in lines:
        typer.echo(f"{key + ':':<10}{value}")


def _auth_text(report: dict[str, Any]) -> str:
    auth = report.get("auth")
    if auth == "simple":
        user = report.get("user")
        return f"simple (user.name={user})" if user else "simple (no user.name: set rm_user)"
    return str(auth)
