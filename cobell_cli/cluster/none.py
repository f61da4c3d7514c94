"""No cluster information: offline use. Says so loudly wherever it is described."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

from cobell_cli.cluster.deadline import UNBOUNDED, Deadline
from cobell_cli.core.running import RunningApp

WARNING = (
    "NO CLUSTER INFORMATION: co-runners are not read, so predictions assume the job runs alone"
)


class NoCluster:
    """A cluster that is always empty; the planner then predicts without interference."""

    name = "none"

    def __init__(self, reason: str = "cluster = none") -> None:
        self.reason = reason

    def query(self) -> AbstractContextManager[Deadline]:
        """Nothing is asked, so nothing waits: an unbounded Deadline."""
        return nullcontext(UNBOUNDED)

    def running_apps(self) -> list[RunningApp]:
        return []

    def apps_finished_since(self, since: float) -> list[RunningApp]:
        return []

    def app(self, app_id: str) -> RunningApp | None:
        return None

    def check(self) -> dict[str, Any]:
        return {
            "backend": "none",
            "url": None,
            "ha_state": None,
            "auth": None,
            "latency_ms": None,
            "reason": self.reason,
            "warning": WARNING,
        }

    def describe(self) -> str:
        return WARNING.replace(":", f" ({self.reason}):", 1)
