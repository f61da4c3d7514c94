"""`cobell config`: what cobell will use, and where each value came from."""

from __future__ import annotations

import json

import typer

from cobell_cli.cli.common import settings

app = typer.Typer(help="Show the effective configuration.", no_args_is_help=True)


@app.command("show")
def show(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Print every setting, its effective value and where it came from.

    Example: COBELL_MAX_SCALE_OUT=24 cobell config show
    """
    from cobell_cli import api

    resolved = settings(ctx)
    rows = api.settings_rows(resolved)
    if as_json:
        typer.echo(json.dumps({"config_file": str(resolved.config_file or ""), "settings": rows}))
        return
    from cobell_cli.output import table

    typer.echo(f"config file: {resolved.config_file or '(none)'}")
    typer.echo(table(rows, ["key", "value", "source", "env"]))
