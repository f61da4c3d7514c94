"""The protocol every cluster backend speaks; nothing backend-specific here.

The record it answers with, `RunningApp`, is the core's (cobell_cli/core/running.py).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from cobell_cli.core.running import RunningApp


@runtime_checkable
class Cluster(Protocol):
    """What cobell asks a cluster; implementations live one per file in this package."""

    name: str

    def running_apps(self) -> list[RunningApp]: ...

    def apps_finished_since(self, since: float) -> list[RunningApp]: ...

    def app(self, app_id: str) -> RunningApp | None: ...

    def check(self) -> dict: ...
