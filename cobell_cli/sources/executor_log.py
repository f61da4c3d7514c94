"""The tail of a YARN executor's log, from the NodeManager its event log names.

Read to tell an executor its own JVM killed after an OutOfMemoryError from one killed from
outside (core/memory/failures.py, `oom-hook`): both end with SIGTERM and exit 143. Spark's
event log gives each executor's log page (`/node/containerlogs/<container>/<user>/<file>`);
that HTML page forgets a container once it ended, so the NodeManager's REST API is asked
instead (`/ws/v1/node/containers/<container>/logs/<file>`, Hadoop >= 2.9: the local log, or
the aggregated one once the node handed it over). A log that cannot be read costs only the
check (None), never the run's record.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Fetch = Callable[[str, float], "str | None"]  # (url, timeout_s) -> the page's text, or None

TAIL_BYTES = 256 * 1024  # the OOM comes just before the kill; shutdown lines follow it
LOG_PAGE = re.compile(r"^(?P<base>https?://[^/]+)/node/containerlogs/(?P<container>[^/]+)/"
                      r"[^/]+/(?P<file>[^/?#]+)")
LOG_DUMP = "LogContents:"  # how the NodeManager's REST API frames each log it returns


def rest_url(page_url: str, tail_bytes: int = TAIL_BYTES) -> str | None:
    """The NodeManager REST URL of the log a Spark log page names, asking for its last
    `tail_bytes`; None for a URL of another form (not YARN's)."""
    found = LOG_PAGE.match(page_url)
    if found is None:
        return None
    return (f"{found['base']}/ws/v1/node/containers/{found['container']}/logs/"
            f"{found['file']}?size=-{tail_bytes}")


def read_executor_log(page_url: str, timeout_s: float, fetch: Fetch | None = None) -> str | None:
    """The log's tail as the NodeManager frames it, or None when it does not answer with it.
    `fetch`: the cluster client's (cluster/http.JsonClient.text: its auth and TLS, as a
    Kerberos or TLS NodeManager needs); without one, a plain GET."""
    url = rest_url(page_url)
    if url is None:
        return None
    text = (fetch or _plain_get)(url, timeout_s)
    return text if text is not None and LOG_DUMP in text else None


def _plain_get(url: str, timeout_s: float) -> str | None:
    import requests

    try:
        answer = requests.get(url, timeout=timeout_s, headers={"Accept": "text/plain"})
    except (requests.RequestException, ValueError):
        return None
    return answer.text if answer.ok else None
