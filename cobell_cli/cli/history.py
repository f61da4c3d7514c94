"""`cobell history`: list, show, summarise, import, export and remove recorded runs."""

from __future__ import annotations

import typer

app = typer.Typer(help="Inspect and edit the run history.", no_args_is_help=True)


@app.command("list")
def list_runs(ctx: typer.Context) -> None:
    """List recorded runs (placeholder while the store lands)."""
