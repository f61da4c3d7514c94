"""Secrets out of command lines before they are stored, printed or exported. Pure.

What counts: `--conf`/`-D` properties whose name looks secret, application options whose name
contains pass, secret, token, credential or key (`--db-pass=V`, `--db-password V`), and inside
any argument: URL userinfo (`scheme://user:PASS@host`), `password=`/`pwd=` parameters of JDBC
URLs, and `-Dname=value` properties inside a value (spark.*.extraJavaOptions).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

REDACTED = "***"
_SECRET_SUBSTRINGS = ("password", "passwd", "secret", "token", "credential", "passphrase")
# "key" as a whole word; camelCase compounds that hold secrets are listed, because splitting
# camelCase would also catch `keyStore`/`keyTab` (paths).
_SECRET_WORDS = frozenset({"key", "pwd", "apikey", "privatekey", "accesskey", "accountkey"})


def is_secret_key(key: str) -> bool:
    """Does a property or flag name look like it holds a secret?

    `password`/`secret`/`token`/`credential` count anywhere (`keyStorePassword`,
    `oauthToken`); `key` only as a whole word (`fs.s3a.access.key`, `api-key`), so
    `spark.executor.cores`, `keytab` or `spark.ssl.keyStore` (a path) are left alone.
    """
    lower = key.lower()
    if any(s in lower for s in _SECRET_SUBSTRINGS):
        return True
    words = re.split(r"[^a-z0-9]+", lower)
    return any(w in _SECRET_WORDS for w in words)


# Application options: the issue of record is any option *containing* one of these.
_SECRET_OPTION_PARTS = ("pass", "secret", "token", "credential", "key")
# The scheme starts where a run of scheme characters starts (the look-behind): without it, a
# long run of letters is re-scanned from every position, which is quadratic in its length.
_USERINFO = re.compile(
    r"(?<![A-Za-z0-9+.\-])(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^/@:\s]*):(?P<secret>[^@/\s]+)@"
)
_URL_PASSWORD = re.compile(r"(?i)(?P<head>[;?&](?:password|passwd|pwd)=)(?P<secret>[^;&\s]*)")
_EMBEDDED_PROPERTY = re.compile(r"(?P<head>-D(?P<key>[^\s=]+)=)(?P<secret>\S*)")


def is_secret_option(name: str) -> bool:
    """An application option (`--db-pass`, `--api-key`) whose value is taken to be secret."""
    lower = name.lower().lstrip("-")
    # Paths to key files are not secrets themselves, and a user debugging needs to see them.
    lower = lower.replace("keytab", "").replace("keystore", "")
    return any(part in lower for part in _SECRET_OPTION_PARTS) or is_secret_key(lower)


def scrub(text: str) -> str:
    """Secrets inside one argument: URL userinfo, JDBC password parameters, -Dsecret=value."""
    text = _USERINFO.sub(lambda m: f"{m['head']}:{REDACTED}@", text)
    text = _URL_PASSWORD.sub(lambda m: m["head"] + REDACTED, text)
    return _EMBEDDED_PROPERTY.sub(
        lambda m: m["head"] + REDACTED if is_secret_key(m["key"]) else m[0], text
    )


def _redact_assignment(text: str) -> str:
    key, eq, value = text.partition("=")
    if eq and value and is_secret_key(key):
        return f"{key}={REDACTED}"
    return text


_CONF_FLAGS = frozenset({"--conf", "-c", "-D"})


def redact(argv: Sequence[str]) -> list[str]:
    """argv with secret values replaced by `***` (see the module doc); never for running."""
    return [scrub(tok) for tok in _redact_flags(argv)]


def _redact_flags(argv: Sequence[str]) -> list[str]:
    """argv with secret values replaced by `***`, for storing and printing, never for running.

    Covers `--conf k=v`, `--conf=k=v`, `-c k=v`, `-Dk=v`, `-D k=v`, bare `spark.k=v` tokens,
    and `--some-password v` / `--some-password=v` flags.
    """
    out: list[str] = []
    hide_next = False
    assignment_next = False
    for tok in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        if assignment_next:
            out.append(_redact_assignment(tok))
            assignment_next = False
            continue
        if tok in _CONF_FLAGS:
            out.append(tok)
            assignment_next = True
            continue
        if tok.startswith("--conf=") or tok.startswith("-c="):
            flag, _, rest = tok.partition("=")
            out.append(f"{flag}={_redact_assignment(rest)}")
            continue
        if tok.startswith("-D") and len(tok) > 2:
            out.append("-D" + _redact_assignment(tok[2:]))
            continue
        if tok.startswith("-") and not tok.startswith("---"):
            name, eq, value = tok.partition("=")
            if is_secret_option(name):
                if eq:
                    out.append(f"{name}={REDACTED}" if value else tok)
                else:
                    out.append(tok)
                    hide_next = True
                continue
            out.append(tok)
            continue
        if re.match(r"^[A-Za-z0-9_.\-]+=", tok):
            out.append(_redact_assignment(tok))
            continue
        out.append(tok)
    return out
