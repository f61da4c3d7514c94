"""JSON over HTTP for the cluster backends: one time budget, retries, HA failover, auth, TLS.

Every failure becomes a ClusterError (exit 4) whose single line names the URL(s) tried and
what to do about it, so `cobell` never shows a requests traceback.

Time: one `get` (or every `get` inside one `query()`) is one cluster query and ends by its
Deadline, `budget_s` after it began (setting `cluster_budget_s`): every retry, every RM of an
HA list, every redirect and the body read count against it. Within a round each RM not yet
asked gets an equal share of what is left (a hanging RM leaves its HA partner time).
`timeout_s` stays what it was, the longest wait for a connection or for the next bytes of
an answer, cut to the request's share. The body is streamed in small reads with the deadline
checked between them, and `deadline.cut_at` shuts the socket down at the deadline whatever
requests is waiting for (a status line trickled byte by byte, say), so an RM trickling one
byte per second costs the budget, not the length of its answer in seconds.

Retry policy: a *round* asks each base URL in order and returns the first usable answer; a
dead or failing server makes the round move on to the next one at once. Only when a whole
round fails (connection refused, timeout, HTTP 5xx) is it retried, up to `retries` more
times, sleeping `backoff_s * 2**round` in between, and only while the budget lasts. Answers
that another attempt would not change (401/403, other 4xx, non-JSON, TLS verification) fail
at once. Redirects (an HA standby's 307 to the active RM) are followed, at most
MAX_REDIRECTS hops, with the same auth and TLS settings.

Writes: `put` sends a JSON body (the RM's application state, to kill an app) with the same
budget, auth, TLS and retries: the only write cobell makes, a kill, is idempotent. A 307 keeps
its method and body, so an HA standby's redirect reaches the active RM with the PUT intact.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urljoin, urlsplit

from cobell_cli.cluster.deadline import Deadline, cut_at, deadline_session
from cobell_cli.config import CLUSTER_BUDGET_S as DEFAULT_BUDGET_S
from cobell_cli.core.words import count
from cobell_cli.errors import ClusterError, ConfigError

__all__ = ["DEFAULT_BUDGET_S", "Answer", "Deadline", "JsonClient", "base_of", "normalize_url"]

MAX_REDIRECTS = 5  # hops one request may follow (a standby's 307 needs one)
READ_BYTES = 64 * 1024  # one streamed read of a body; the deadline is checked between reads
MIN_REQUEST_S = 0.01  # less budget than this left: do not start another request


@dataclass(frozen=True)
class Answer:
    """A decoded JSON answer and which server gave it (after any HA redirect)."""

    data: Any
    base_url: str  # scheme://host:port of the server that answered
    asked_url: str  # the base URL the request was sent to
    redirected: bool
    latency_s: float
    status: int
    skipped: tuple[tuple[str, str], ...] = ()  # (base URL, why) tried before this one


def normalize_url(url: str) -> str:
    """Accept `host:port` as users type it; reject what cannot be a web address."""
    text = url.strip().rstrip("/")
    if not text:
        raise ConfigError("empty cluster URL", hint="give a URL such as http://rm1:8088")
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port that is not one
    except ValueError as exc:
        raise ConfigError(
            f"{url!r} is not a valid URL ({exc})", hint="give a URL such as http://rm1:8088"
        ) from None
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ConfigError(
            f"{url!r} is not an http(s) URL", hint="give a URL such as http://rm1:8088"
        )
    return text


def base_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class _Transient(Exception):
    """A failure another attempt may cure (refused, timeout, 5xx)."""


@dataclass(frozen=True)
class _Body:
    """A request's JSON body (its presence makes the request a PUT)."""

    value: Any


class JsonClient:
    """Asks one backend (YARN RM or Spark master) for JSON; see the module docstring."""

    def __init__(
        self,
        *,
        what: str,
        auth: str = "none",
        user: str | None = None,
        ca_bundle: str | None = None,
        timeout_s: float = 10.0,
        retries: int = 2,
        backoff_s: float = 0.5,
        budget_s: float = DEFAULT_BUDGET_S,
        fix: str = "",
        sleep: Callable[[float], None] = time.sleep,
        session: Any = None,
    ) -> None:
        if auth not in {"simple", "kerberos", "none"}:
            raise ConfigError(f"unknown auth mode {auth!r}", hint="use simple, kerberos or none")
        self.what = what
        self.auth = auth
        self.user = user or os.environ.get("USER") or os.environ.get("LOGNAME")
        self.ca_bundle = ca_bundle
        self.timeout_s = timeout_s
        self.retries = max(0, int(retries))
        self.backoff_s = backoff_s
        self.budget_s = budget_s
        self.fix = fix
        self._sleep = sleep
        self._deadline: Deadline | None = None
        self.session = session or deadline_session()
        self.session.max_redirects = MAX_REDIRECTS
        # requests' own default is `*/*`, which a Hadoop ConfServlet (/conf) answers in XML
        if self.session.headers.get("Accept") in (None, "*/*"):
            self.session.headers["Accept"] = "application/json"
        if auth == "kerberos":
            self.session.auth = _spnego_auth(what)
        if ca_bundle and not os.path.isfile(ca_bundle):
            raise ConfigError(
                f"CA bundle {ca_bundle} does not exist", hint="check --ca-bundle / COBELL_CA_BUNDLE"
            )

    def pause(self, seconds: float) -> None:
        """Sleep as this client sleeps between retries (tests make it instant)."""
        self._sleep(seconds)

    @property
    def attempts(self) -> int:
        return self.retries + 1

    @property
    def deadline(self) -> Deadline | None:
        """The Deadline of the query in progress (inside `query()`), else None."""
        return self._deadline

    @contextmanager
    def query(self) -> Iterator[Deadline]:
        """One cluster query: every `get` inside shares one Deadline, `budget_s` from now.

        Re-entrant: a query opened inside another one is part of it (same Deadline).
        """
        if self._deadline is not None:
            yield self._deadline
            return
        self._deadline = Deadline(self.budget_s)
        try:
            yield self._deadline
        finally:
            self._deadline = None

    def get(
        self,
        bases: Sequence[str],
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        missing_ok: bool = False,
        accept: Callable[[Answer], str | None] | None = None,
        redirect_probe: str | None = None,
    ) -> Answer | None:
        """GET path from the first base that answers; None for a 404 when missing_ok.

        `accept` may turn down a good answer with a reason (an HA standby); the next base is
        asked, and a round in which every base was turned down counts as failed, unless
        `redirect_probe` is given: a path the turned-down server redirects to the right one
        (an HA standby's 307 to the active RM), whose target is then asked for `path`.
        """
        with self.query() as deadline:
            return self._rounds(bases, path, self._query(bases, params), deadline, missing_ok,
                                accept, redirect_probe)

    def put(
        self,
        bases: Sequence[str],
        path: str,
        body: Any,
        params: Mapping[str, Any] | None = None,
        *,
        missing_ok: bool = False,
    ) -> Answer | None:
        """PUT `body` as JSON to path on the first base that answers (module doc, "Writes");
        None for a 404 when missing_ok."""
        with self.query() as deadline:
            return self._rounds(bases, path, self._query(bases, params), deadline, missing_ok,
                                None, None, body=_Body(body))

    def text(self, url: str, timeout_s: float) -> str | None:
        """A plain-text page at an absolute `url` (a NodeManager's container log) with this
        client's auth and TLS: one attempt, no failover, no retries; None unless it answers 200.
        The caller's budget bounds it, not the client's."""
        import requests

        params = {"user.name": self.user} if self.auth == "simple" and self.user else None
        try:
            with self.session.get(url, params=params, timeout=timeout_s,
                                  verify=self.ca_bundle or True,
                                  headers={"Accept": "text/plain"}) as answer:
                return answer.text if answer.ok else None
        except (requests.RequestException, ValueError):
            return None

    def _query(self, bases: Sequence[str], params: Mapping[str, Any] | None) -> dict[str, Any]:
        """The query string: the caller's parameters and, with simple auth, user.name."""
        if not bases:
            raise ClusterError(f"no {self.what} URL configured", hint=self.fix or None)
        query = dict(params or {})
        if self.auth == "simple" and self.user:
            query.setdefault("user.name", self.user)
        return query

    def _rounds(
        self,
        bases: Sequence[str],
        path: str,
        query: Mapping[str, Any],
        deadline: Deadline,
        missing_ok: bool,
        accept: Callable[[Answer], str | None] | None,
        redirect_probe: str | None,
        body: _Body | None = None,
    ) -> Answer | None:
        errors: dict[str, str] = {}
        rounds = 0
        for round_no in range(self.attempts):
            rounds += 1
            errors = {}
            turned_down: list[str] = []
            for k, base in enumerate(bases):
                # An HA RM that hangs must leave the next one time to answer: each base of the
                # round gets at most an equal share of what is left.
                share_s = deadline.remaining_s() / (len(bases) - k)
                try:
                    answer = self._once(base, path, query, deadline, missing_ok=missing_ok,
                                        share_s=share_s, body=body)
                except _Transient as exc:
                    errors[base] = str(exc)
                    continue
                why = accept(answer) if (accept and answer is not None) else None
                if why is None:
                    return _with_skipped(answer, errors)
                errors[base] = why
                turned_down.append(base)
            for base in turned_down if redirect_probe else ():
                found = self._behind(base, redirect_probe or "", path, query, deadline, accept)
                if isinstance(found, Answer):
                    return _with_skipped(found, {b: e for b, e in errors.items() if b != base})
                if found:
                    errors[base] += f", then {found}"
            pause = self.backoff_s * 2**round_no
            if round_no + 1 < self.attempts and pause + MIN_REQUEST_S < deadline.remaining_s():
                self._sleep(pause)
            elif round_no + 1 < self.attempts:
                break
        raise self._failure(rounds, deadline, errors)

    def _failure(self, rounds: int, deadline: Deadline, errors: Mapping[str, str]) -> ClusterError:
        tried = "; ".join(f"{b}: {e}" for b, e in errors.items())
        spent = rounds < self.attempts or deadline.expired
        within = f" within the {deadline.budget_s:g} s budget (cluster_budget_s)" if spent else ""
        return ClusterError(
            f"cannot get an answer from the {self.what} after {count(rounds, 'attempt')}{within} "
            f"({tried})",
            hint=self.fix or None,
        )

    def _behind(
        self,
        base: str,
        probe: str,
        path: str,
        query: Mapping[str, Any],
        deadline: Deadline,
        accept: Callable[[Answer], str | None] | None,
    ) -> Answer | str | None:
        """The answer of the server `base` redirects `probe` to, or why there is none."""
        try:
            target = self._redirect_target(base, probe, query, deadline)
            if target is None or target == base:
                return None
            answer = self._once(target, path, query, deadline, missing_ok=False)
        except _Transient as exc:
            return str(exc)
        assert answer is not None
        why = accept(answer) if accept else None
        if why is not None:
            return f"its redirect to {target}: {why}"
        return replace(answer, asked_url=base, redirected=True)

    def _window(self, deadline: Deadline, share_s: float) -> tuple[Deadline, float]:
        """One request's deadline (its share of the budget) and its per-read timeout."""
        request = deadline.sooner(share_s)
        window_s = request.remaining_s()
        if window_s < MIN_REQUEST_S:
            raise _Transient("not asked: the budget was spent")
        return request, min(self.timeout_s, window_s)

    def _redirect_target(
        self, base: str, probe: str, query: Mapping[str, Any], deadline: Deadline
    ) -> str | None:
        """Where `base` redirects `probe` (scheme://host:port), None if it does not."""
        import requests

        request, timeout = self._window(deadline, math.inf)
        with cut_at(request):
            try:
                resp = self._send(base + probe, query, timeout, follow=False)
            except requests.exceptions.RequestException:
                return None
            resp.close()
        location = resp.headers.get("Location") if resp.is_redirect else None
        return base_of(urljoin(base + probe, location)) if location else None

    def _send(
        self,
        url: str,
        query: Mapping[str, Any],
        timeout_s: float,
        *,
        follow: bool = True,
        body: _Body | None = None,
    ) -> Any:
        """One GET (a PUT with a `body`) with this client's TLS settings; the answer's body
        is left to be streamed."""
        extra = {} if body is None else {"json": body.value}
        return self.session.request(
            "GET" if body is None else "PUT",
            url,
            params=query,
            timeout=timeout_s,
            verify=self.ca_bundle or True,
            allow_redirects=follow,
            stream=True,
            **extra,
        )

    def _once(
        self,
        base: str,
        path: str,
        query: Mapping[str, Any],
        deadline: Deadline,
        *,
        missing_ok: bool,
        share_s: float = math.inf,
        body: _Body | None = None,
    ) -> Answer | None:
        """One request (redirects followed), its answer read by the request's deadline."""
        started = time.monotonic()
        resp, data = self._fetch(base, path, query, *self._window(deadline, share_s), body=body)
        latency_s = time.monotonic() - started
        answered = base_of(resp.url or base + path)
        if resp.status_code >= 500:
            raise _Transient(f"HTTP {resp.status_code} {resp.reason or ''}".strip())
        if resp.status_code in (401, 403):
            raise ClusterError(
                f"the {self.what} at {answered} refused access (HTTP {resp.status_code})",
                hint=_auth_hint(self.auth),
            )
        if resp.status_code == 404 and missing_ok:
            return None
        if resp.status_code >= 400:
            raise ClusterError(
                f"the {self.what} at {answered} answered HTTP {resp.status_code} for {path}",
                hint=self.fix or None,
            )
        return Answer(
            data=self._decode(data, answered, path),
            base_url=answered,
            asked_url=base,
            redirected=bool(resp.history),
            latency_s=latency_s,
            status=resp.status_code,
        )

    def _fetch(
        self,
        base: str,
        path: str,
        query: Mapping[str, Any],
        request: Deadline,
        timeout_s: float,
        body: _Body | None = None,
    ) -> tuple[Any, bytes]:
        """The response and its body (empty for errors); requests' errors as ours.

        `timeout_s` bounds each connect and read (requests' timeout); `request` the whole of
        it: the socket is shut down then (cut_at), and the body read stops.
        """
        import requests

        window_s = request.remaining_s()
        with cut_at(request) as cutter:
            try:
                resp = self._send(base + path, query, timeout_s, body=body)
                try:
                    ok = resp.status_code < 400
                    return resp, _read_body(resp, request, window_s) if ok else b""
                finally:
                    resp.close()
            except requests.exceptions.Timeout:
                raise _Transient(_no_answer(timeout_s)) from None
            except requests.exceptions.TooManyRedirects:
                raise ClusterError(
                    f"the {self.what} at {base} redirects in a loop (more than "
                    f"{MAX_REDIRECTS} hops)",
                    hint="check the HA configuration; pass the active RM with --rm-url",
                ) from None
            except requests.exceptions.RequestException as exc:
                if cutter.fired:
                    raise _Transient(f"no complete answer within {_secs(window_s)}") from None
                if isinstance(exc, requests.exceptions.SSLError):
                    raise ClusterError(
                        f"TLS verification of the {self.what} at {base} failed ({_short(exc)})",
                        hint="pass --ca-bundle FILE with the cluster's CA certificate(s)",
                    ) from None
                if isinstance(exc, requests.exceptions.ConnectionError):
                    raise _Transient(_connection_reason(exc)) from None
                raise ClusterError(f"cannot ask the {self.what} at {base}: {_short(exc)}") from None

    def _decode(self, body: bytes, answered: str, path: str) -> Any:
        try:
            return json.loads(body)
        except ValueError:
            snippet = body[:40].decode("utf-8", "replace").replace("\n", " ")
            raise ClusterError(
                f"the {self.what} at {answered} answered something that is not JSON "
                f"({snippet!r}) for {path}",
                hint="check that the URL points at its web address" + _fix_suffix(self.fix),
            ) from None
        except RecursionError:
            raise ClusterError(
                f"the {self.what} at {answered} answered JSON nested too deeply for {path}",
                hint="check that the URL points at its web address" + _fix_suffix(self.fix),
            ) from None


def _with_skipped(answer: Answer | None, errors: Mapping[str, str]) -> Answer | None:
    if answer is not None and errors:
        return replace(answer, skipped=tuple(errors.items()))
    return answer


def _read_body(resp: Any, request: Deadline, window_s: float) -> bytes:
    """The whole body, read piece by piece until `request` passes (then _Transient)."""
    from urllib3.exceptions import HTTPError as Urllib3Error

    raw = resp.raw
    read = getattr(raw, "read1", None) or raw.read  # read1: what has arrived, never more
    parts: list[bytes] = []
    received = 0
    while True:
        if request.expired:
            raise _Transient(
                f"the answer did not arrive within {_secs(window_s)} "
                f"({received} bytes of it did)"
            )
        try:
            chunk = read(READ_BYTES, decode_content=True)
        except Urllib3Error as exc:
            if request.expired:
                continue  # the cutter shut the socket: say so above
            raise _Transient(f"the answer broke off ({_short(exc)})") from None
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
        received += len(chunk)


def _secs(seconds: float) -> str:
    return f"{round(seconds, 1):g} s"


def _no_answer(timeout_s: float) -> str:
    return f"no answer within {_secs(timeout_s)}"


def _fix_suffix(fix: str) -> str:
    return f" ({fix})" if fix else ""


def _short(exc: BaseException) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= 120 else text[:117] + "..."


def _connection_reason(exc: BaseException) -> str:
    text = str(exc)
    for needle, reason in (
        ("Connection refused", "connection refused"),
        ("Name or service not known", "unknown host"),
        ("nodename nor servname", "unknown host"),
        ("Temporary failure in name resolution", "unknown host"),
        ("No route to host", "no route to host"),
        ("Connection reset", "connection reset"),
        ("RemoteDisconnected", "connection closed without an answer"),
    ):
        if needle in text:
            return reason
    return _short(exc)


def _auth_hint(auth: str) -> str:
    if auth == "kerberos":
        return "get a Kerberos ticket (kinit) for a principal the RM accepts"
    if auth == "simple":
        return (
            "the RM may require Kerberos: set auth = kerberos (COBELL_AUTH=kerberos), or "
            "set rm_user (COBELL_RM_USER) to a user the RM's ACLs allow"
        )
    return "the RM requires authentication: set auth = simple or kerberos (COBELL_AUTH)"


def _spnego_auth(what: str) -> Any:
    try:
        from requests_gssapi import OPTIONAL, HTTPSPNEGOAuth
    except ImportError:
        raise ClusterError(
            f"Kerberos authentication to the {what} needs the optional requests-gssapi package",
            hint="pip install 'cobell[kerberos]', or set auth = simple",
        ) from None
    return HTTPSPNEGOAuth(mutual_authentication=OPTIONAL)
