"""A job interrupted by a signal leaves no YARN application behind.

`spark-submit --deploy-mode cluster` that gets SIGINT or SIGTERM ends, but its application
keeps running on the cluster (the driver runs there); a client-mode driver usually ends its
application as it shuts down, but not always at once. So once cobell has forwarded a signal
to the job and the job has ended, it asks the ResourceManager about the run's application and
kills it if it still runs (`YarnCluster.kill`, `yarn application -kill` through the REST
API, with the RM settings every other request uses: HA, simple auth's user, Kerberos). One
line says what happened; where the kill is not possible (no RM configured, the RM does not
answer or refuses, no application id seen), one warning names the application and the
command that kills it. What the RM last reported is recorded with the run (`app_state`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cobell_cli.cluster import query
from cobell_cli.errors import CobellError

YARN_APP_ID = re.compile(r"^application_\d+_\d+$")
ENDED = ("FINISHED", "FAILED", "KILLED")
NO_RM = "no YARN ResourceManager is configured: --rm-url, COBELL_RM_URL or yarn-site.xml"


@dataclass(frozen=True)
class AppEnd:
    """What became of an interrupted run's application."""

    app_state: str | None  # the RM's last word on the app (None: not asked, or no answer)
    note: str | None = None  # one line to tell the user (the app ended, or was killed)
    warning: str | None = None  # the app may still run: what to type to end it


def end_interrupted_app(
    rm: Callable[[], Any] | None, app_id: str | None, launcher: str, job: str
) -> AppEnd | None:
    """End the application of a run cobell interrupted (module doc); None when there is
    nothing to do (not a YARN job). `rm()` gives the ResourceManager's adapter (None: none
    is configured; it may raise a CobellError saying why)."""
    if app_id is None or not YARN_APP_ID.match(app_id):
        if launcher != "spark-yarn":
            return None
        return AppEnd(None, warning=(
            "the job was interrupted before its YARN application id appeared in its output; "
            "if it was submitted it may still be running: find it with `yarn application "
            f"-list -appTags cobell-job:{job.lower()}` and end it with `yarn application "
            "-kill ID`"))
    before = None
    try:
        cluster = rm() if rm is not None else None
        if cluster is None:
            return _not_killed(app_id, None, NO_RM)
        with query(cluster):  # one cluster budget for the look and the kill
            before = cluster.app_state(app_id)
            if before in ENDED:
                return AppEnd(before, note=f"cobell: YARN application {app_id} had already "
                                           f"ended ({before})")
            state = cluster.kill(app_id) if before is not None else None
    except CobellError as exc:
        return _not_killed(app_id, before, exc.line())
    if state is None:
        return _not_killed(app_id, None, "the ResourceManager does not know it")
    if state not in ENDED:
        return _not_killed(app_id, state, f"the ResourceManager still reports it {state} after "
                                          "the kill")
    return AppEnd(state, note=f"cobell: killed YARN application {app_id} through the "
                              f"ResourceManager ({state})")


def _not_killed(app_id: str, state: str | None, why: str) -> AppEnd:
    return AppEnd(state, warning=(
        f"YARN application {app_id} may still be running ({why}); end it with `yarn "
        f"application -kill {app_id}`"))
