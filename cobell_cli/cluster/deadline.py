"""One total time budget for one cluster query, enforced down to the socket.

A request timeout (requests' `timeout=`) bounds each connect and each read separately, so a
server that answers one byte per second, or whose HA partner hangs too, costs retries x RMs x
timeout, or for ever. A `Deadline` is the moment the whole query (every retry, RM, redirect
and body read) must be done by; `cut_at` arms a timer that shuts the sockets of the requests
made inside it down at that moment, so even a status line or headers trickled byte by byte
end there. The body is also read in small pieces with the deadline checked between them
(cluster.http), which names the cause; the timer is the backstop for what requests reads
itself.

Adapters pass the `Deadline` on (`JsonClient.deadline`, `cluster.query()`), so that code
asking more of the cluster in the same query (a co-runner's live progress, say) can keep to
what is left of it.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any


class Deadline:
    """When one cluster query must be done by (monotonic clock)."""

    def __init__(self, budget_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.budget_s = budget_s
        self._clock = clock
        self.at = clock() + budget_s

    def remaining_s(self) -> float:
        """Seconds left, never below 0 (inf for an unbounded query)."""
        return max(self.at - self._clock(), 0.0)

    @property
    def expired(self) -> bool:
        return self.remaining_s() <= 0.0

    def cap(self, timeout_s: float) -> float:
        """A per-request timeout cut to what is left of the budget."""
        return min(timeout_s, self.remaining_s())

    def sooner(self, within_s: float) -> Deadline:
        """A deadline `within_s` from now, or this one if it comes first (one request's)."""
        if within_s >= self.remaining_s():
            return self
        return Deadline(within_s, self._clock)

    def __repr__(self) -> str:
        return f"Deadline(budget_s={self.budget_s:g}, remaining_s={self.remaining_s():.3f})"


UNBOUNDED = Deadline(math.inf)

_CURRENT = threading.local()  # the _Cutter of the request this thread is making, if any


class _Cutter:
    """The connections one request uses, shut down when its deadline passes."""

    def __init__(self) -> None:
        self.connections: list[Any] = []
        self.fired = False
        self._lock = threading.Lock()

    def add(self, connection: Any) -> None:
        with self._lock:
            if connection not in self.connections:
                self.connections.append(connection)

    def fire(self) -> None:
        import socket

        with self._lock:
            self.fired = True
            sockets = [getattr(c, "sock", None) for c in self.connections]
        for sock in sockets:
            if sock is not None:
                with suppress(OSError):  # already closed
                    sock.shutdown(socket.SHUT_RDWR)  # wakes a recv blocked in another thread


@contextmanager
def cut_at(deadline: Deadline) -> Iterator[_Cutter]:
    """Shut down the sockets of requests made in this block (on a `deadline_session`) when
    `deadline` passes; `.fired` tells afterwards whether it did."""
    cutter = _Cutter()
    remaining = deadline.remaining_s()
    timer = None
    if math.isfinite(remaining):
        timer = threading.Timer(remaining, cutter.fire)
        timer.daemon = True
        timer.start()
    previous = getattr(_CURRENT, "cutter", None)
    _CURRENT.cutter = cutter
    try:
        yield cutter
    finally:
        _CURRENT.cutter = previous
        if timer is not None:
            timer.cancel()


@functools.cache
def _watched(connection_cls: type) -> type:
    """`connection_cls` whose connections join the current request's cutter."""

    class Watched(connection_cls):  # type: ignore[misc, valid-type]
        def connect(self) -> None:
            _join(self)
            super().connect()

        def request(self, *args: Any, **kwargs: Any) -> Any:
            _join(self)  # a kept-alive connection is reused without connect()
            return super().request(*args, **kwargs)

    Watched.__name__ = f"Watched{connection_cls.__name__}"
    return Watched


@functools.cache
def _watched_pool(pool_cls: type) -> type:
    """`pool_cls` (plain, TLS or SOCKS) making watched connections of its own kind."""
    watched = _watched(pool_cls.ConnectionCls)
    return type(f"Watched{pool_cls.__name__}", (pool_cls,), {"ConnectionCls": watched})


def _watch(manager: Any) -> Any:
    """A urllib3 pool manager whose pools make watched connections."""
    manager.pool_classes_by_scheme = {
        scheme: _watched_pool(pool_cls)
        for scheme, pool_cls in manager.pool_classes_by_scheme.items()
    }
    return manager


def _join(connection: Any) -> None:
    cutter = getattr(_CURRENT, "cutter", None)
    if cutter is not None:
        cutter.add(connection)


def deadline_session() -> Any:
    """A requests.Session whose connections (direct or through a proxy) `cut_at` can shut
    down."""
    import requests
    from requests.adapters import HTTPAdapter

    class Adapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            _watch(self.poolmanager)

        def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
            known = proxy in self.proxy_manager
            manager = super().proxy_manager_for(proxy, **kwargs)
            return manager if known else _watch(manager)

    session = requests.Session()
    adapter = Adapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
