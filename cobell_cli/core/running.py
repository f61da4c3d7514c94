"""An application running on the cluster, as the planner sees it: the co-runner record.

It lives in the core because the planner, the overlap prediction and the calibration plan
with it; the cluster adapters (cluster/), the importers (sources/) and the tests only build it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only co-runners asked for their progress carry one (cluster/progress.py)
    from cobell_cli.core.remaining import DriverProgress


@dataclass(frozen=True)
class RunningApp:
    """One application as cobell sees it; times are UTC epoch seconds.

    `job` is the recurring job the app maps to (cobell tag, configured pattern, or a name equal
    to a known job), or None for an unknown co-runner, which still counts as interference.
    `progress` is the backend's own figure (YARN's; Spark's ApplicationMaster always says 10 %),
    `driver` what the app's Spark driver said of its jobs and stages (cluster/progress.py), None
    when it was not asked or did not answer.
    """

    app_id: str
    name: str
    job: str | None
    user: str | None
    queue: str | None
    state: str  # backend's state, upper-case: RUNNING, ACCEPTED, FINISHED, FAILED, KILLED, ...
    started_at: float | None
    finished_at: float | None = None
    scale_out: int | None = None
    progress: float | None = None  # 0..1, None where the backend does not know
    tags: tuple[str, ...] = field(default_factory=tuple)
    backend: str = "none"
    ui_url: str | None = None  # where the backend says its web UI is (YARN: the RM's proxy)
    driver: DriverProgress | None = None
    # the YARN node label (partition) its executors run in: cobell's `cobell-label:` tag, else
    # the app's node-label expression; None: the default partition (cluster/node_labels.py)
    node_label: str | None = None

    @property
    def running(self) -> bool:
        return self.finished_at is None
