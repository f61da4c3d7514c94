"""JSON over HTTP for the cluster backends: retries, HA failover, auth, TLS, one-line errors.

Every failure becomes a ClusterError (exit 4) whose single line names the URL(s) tried and
what to do about it, so `cobell` never shows a requests traceback.

Retry policy: a *round* asks each base URL in order and returns the first usable answer; a
dead or failing server makes the round move on to the next one at once. Only when a whole
round fails (connection refused, timeout, HTTP 5xx) is it retried, up to `retries` more
times, sleeping `backoff_s * 2**round` in between. Answers that another attempt would not
change (401/403, other 4xx, non-JSON, TLS verification) fail at once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from cobell_cli.errors import ClusterError, ConfigError


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
    parts = urlsplit(text)
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
        fix: str = "",
        sleep: Callable[[float], None] = time.sleep,
        session: Any = None,
    ) -> None:
        import requests

        if auth not in {"simple", "kerberos", "none"}:
            raise ConfigError(f"unknown auth mode {auth!r}", hint="use simple, kerberos or none")
        self.what = what
        self.auth = auth
        self.user = user or os.environ.get("USER") or os.environ.get("LOGNAME")
        self.ca_bundle = ca_bundle
        self.timeout_s = timeout_s
        self.retries = max(0, int(retries))
        self.backoff_s = backoff_s
        self.fix = fix
        self._sleep = sleep
        self.session = session or requests.Session()
        self.session.headers.setdefault("Accept", "application/json")
        if auth == "kerberos":
            self.session.auth = _spnego_auth(what)
        if ca_bundle and not os.path.isfile(ca_bundle):
            raise ConfigError(
                f"CA bundle {ca_bundle} does not exist", hint="check --ca-bundle / COBELL_CA_BUNDLE"
            )

    @property
    def attempts(self) -> int:
        return self.retries + 1

    def get(
        self,
        bases: Sequence[str],
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        missing_ok: bool = False,
        accept: Callable[[Answer], str | None] | None = None,
    ) -> Answer | None:
        """GET path from the first base that answers; None for a 404 when missing_ok.

        `accept` may turn down a good answer with a reason (an HA standby); the next base is
        asked, and a round in which every base was turned down counts as failed.
        """
        if not bases:
            raise ClusterError(f"no {self.what} URL configured", hint=self.fix or None)
        query = dict(params or {})
        if self.auth == "simple" and self.user:
            query.setdefault("user.name", self.user)
        errors: dict[str, str] = {}
        for round_no in range(self.attempts):
            errors = {}
            for base in bases:
                try:
                    answer = self._once(base, path, query, missing_ok=missing_ok)
                except _Transient as exc:
                    errors[base] = str(exc)
                    continue
                why = accept(answer) if (accept and answer is not None) else None
                if why is None:
                    if answer is not None and errors:
                        answer = replace(answer, skipped=tuple(errors.items()))
                    return answer
                errors[base] = why
            if round_no + 1 < self.attempts:
                self._sleep(self.backoff_s * 2**round_no)
        tried = "; ".join(f"{b}: {e}" for b, e in errors.items())
        raise ClusterError(
            f"cannot get an answer from the {self.what} after {self.attempts} attempt(s) ({tried})",
            hint=self.fix or None,
        )

    def _once(
        self, base: str, path: str, query: Mapping[str, Any], *, missing_ok: bool
    ) -> Answer | None:
        import requests

        url = base + path
        verify: bool | str = self.ca_bundle or True
        started = time.monotonic()
        try:
            resp = self.session.get(url, params=query, timeout=self.timeout_s, verify=verify)
        except requests.exceptions.SSLError as exc:
            raise ClusterError(
                f"TLS verification of the {self.what} at {base} failed ({_short(exc)})",
                hint="pass --ca-bundle FILE with the cluster's CA certificate(s)",
            ) from None
        except requests.exceptions.Timeout:
            raise _Transient(f"no answer within {self.timeout_s:g} s") from None
        except requests.exceptions.TooManyRedirects:
            raise ClusterError(
                f"the {self.what} at {base} redirects in a loop",
                hint="check the HA configuration; pass the active RM with --rm-url",
            ) from None
        except requests.exceptions.ConnectionError as exc:
            raise _Transient(_connection_reason(exc)) from None
        except requests.exceptions.RequestException as exc:
            raise ClusterError(f"cannot ask the {self.what} at {base}: {_short(exc)}") from None
        latency_s = time.monotonic() - started
        answered = base_of(resp.url or url)
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
        try:
            data = resp.json()
        except ValueError:
            snippet = resp.text[:40].replace("\n", " ")
            raise ClusterError(
                f"the {self.what} at {answered} answered something that is not JSON "
                f"({snippet!r}) for {path}",
                hint="check that the URL points at its web address" + _fix_suffix(self.fix),
            ) from None
        return Answer(
            data=data,
            base_url=answered,
            asked_url=base,
            redirected=bool(resp.history),
            latency_s=latency_s,
            status=resp.status_code,
        )


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
