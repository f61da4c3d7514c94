"""How long the cluster's queue will hold a new app before it runs, from what the RM says.

On YARN an app waits in its queue (ACCEPTED) until the queue has room; that time counts
against a deadline, as the runtime recorded by `cobell submit` (spark-submit's own) includes
it. The RM lists the apps waiting (ACCEPTED) and running in each queue; when apps already
wait in the new app's queue, it waits behind them: until as many of the queue's running apps
as there are apps ahead of it, plus one, have ended (their predicted ends), and at least as
long as the longest of them has waited so far. No app waiting there: no wait.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from cobell_cli.core.words import count

if TYPE_CHECKING:
    from cobell_cli.core.running import RunningApp

DEFAULT_QUEUE = "default"


def queue_wait_s(
    queue: str,
    accepted: Sequence[RunningApp],
    running: Sequence[RunningApp],
    ends: Mapping[str, float | None],
    now: float,
) -> tuple[float, str | None]:
    """Seconds the new app is expected to wait in `queue`, and a note saying why (module doc).

    `ends` maps running app ids to their predicted ends (None: unknown)."""
    ahead = [a for a in accepted if _leaf(a.queue) == _leaf(queue)]
    if not ahead:
        return 0.0, None
    waited = max((now - a.started_at for a in ahead if a.started_at is not None), default=0.0)
    known = sorted(e for a in running if _leaf(a.queue) == _leaf(queue)
                   for e in [ends.get(a.app_id)] if e is not None)
    k = len(ahead)
    drain = known[k] - now if len(known) > k else (known[-1] - now if known else 0.0)
    wait = max(drain, waited, 0.0)
    return wait, (f"{count(k, 'app')} already wait{'s' if k == 1 else ''} in YARN queue "
                  f"{queue!r} (the longest for "
                  f"{waited:.0f} s): counting {wait:.0f} s of queueing against the deadline")


def _leaf(queue: str | None) -> str:
    """A queue's leaf name: the RM lists an app's queue by its path (`root.batch`, Hadoop 3),
    a submit names it by its leaf (`--queue batch`) or its path."""
    return (queue or DEFAULT_QUEUE).rsplit(".", 1)[-1]
