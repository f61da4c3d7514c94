"""What a job name may be: one rule for `submit`, every import and the history.

A job name travels where spaces, commas and long text break things: in the YARN tag
`cobell-job:<job>` (YARN splits tags at commas and refuses a tag that is not printable ASCII
or longer than 100 characters), in Spark's app name, in file names (`model plot -o DIR/`),
and in table columns. So a name is 1 to `JOB_NAME_MAX_CHARS` printable ASCII characters
other than white space and commas. Importers map an app name that breaks the rule to one
that keeps it (`valid_job_name`) and say so; `submit` and the history refuse one.
"""

from __future__ import annotations

import hashlib
import re

JOB_NAME_MAX_CHARS = 64
JOB_NAME_RULE = (
    f"1-{JOB_NAME_MAX_CHARS} printable ASCII characters, no spaces or commas"
)


_OTHERS = re.compile(r"[^\x21-\x2b\x2d-\x7e]+")  # not printable ASCII, white space or ","


def job_name_problem(name: str) -> str | None:
    """Why `name` is not a job name, or None when it is one."""
    if not name:
        return "it is empty"
    if len(name) > JOB_NAME_MAX_CHARS:
        return f"it has {len(name)} characters (at most {JOB_NAME_MAX_CHARS})"
    bad = sorted(set("".join(_OTHERS.findall(name))))
    if bad:
        return "it contains " + ", ".join(repr(c) for c in bad[:5])
    return None


def valid_job_name(name: str) -> str:
    """`name` itself when it keeps the rule; else each run of other characters becomes one
    `-` (`adhoc report` -> `adhoc-report`), and a name still too long (or left empty) gets a
    short hash of the whole, so two such names stay two jobs."""
    if job_name_problem(name) is None:
        return name
    mapped = "-".join(part for part in _OTHERS.split(name) if part)
    if mapped and len(mapped) <= JOB_NAME_MAX_CHARS:
        return mapped
    digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{mapped[: JOB_NAME_MAX_CHARS - 9] or 'app'}-{digest}"


def check_job_name(name: str, option: str = "--job") -> str:
    """`name`, or the usage error that says what a job name is."""
    from cobell_cli.errors import UsageError

    problem = job_name_problem(name)
    if problem is None:
        return name
    shown = name if len(name) <= 40 else f"{name[:40]}..."
    raise UsageError(
        f"{option} {shown!r} is not a job name: {problem}",
        hint=f"a job name is {JOB_NAME_RULE} (e.g. {valid_job_name(name)!r})",
    )
