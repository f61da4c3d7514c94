"""What every command shares: the global options, settings, the history, stderr messages."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from cobell_cli.config import Settings
    from cobell_cli.store import History


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


def open_history(ctx: typer.Context, *, create: bool = True) -> History:
    from cobell_cli.store import History

    return History.open(settings(ctx).db_path, create=create)


def is_tty() -> bool:
    return sys.stdout.isatty()
