"""Which recurring job is that app? A pure mapping shared by every backend and the store.

Order, first hit wins:

1. a YARN application tag ``cobell-job:<job>`` (what ``cobell submit`` adds; a name beyond
   ASCII in Punycode or hashed: core/job_name.py);
2. an app name ``cobell:<job>`` (what ``cobell submit`` uses on Spark standalone, which has
   no tags);
3. the configured patterns (``job_patterns``: job -> regex, searched in the app name, in the
   order they were configured);
4. an app name equal to a known job;
5. otherwise None: an "unknown" co-runner, which still counts as interference.

YARN lower-cases application tags, so a tag value is matched case-insensitively against the
known jobs and the known spelling is returned; an unknown tag value is returned as tagged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from cobell_cli.core.job_name import (
    JOB_NAME_RULE,
    job_from_tag,
    job_name_problem,
    job_tag,
    valid_job_name,
)
from cobell_cli.errors import ConfigError

__all__ = ["JOB_NAME_PREFIX", "compile_patterns", "job_app_name", "job_tag", "map_job",
           "split_tags"]
JOB_NAME_PREFIX = "cobell:"


def job_app_name(job: str) -> str:
    """The app name cobell uses where the backend has no tags (Spark standalone)."""
    return f"{JOB_NAME_PREFIX}{job}"


def split_tags(raw: object) -> tuple[str, ...]:
    """YARN sends applicationTags as one comma-separated string; some proxies send a list."""
    if raw is None:
        return ()
    parts = raw if isinstance(raw, list | tuple) else str(raw).split(",")
    return tuple(p.strip() for p in (str(x) for x in parts) if p.strip())


def compile_patterns(patterns: Mapping[str, str]) -> dict[str, re.Pattern[str]]:
    """Compile job_patterns once; a bad regex is the user's input, hence a usage error."""
    compiled: dict[str, re.Pattern[str]] = {}
    for job, regex in patterns.items():
        problem = job_name_problem(job)
        if problem is not None:
            raise ConfigError(
                f"job_patterns: {job[:40]!r} is not a job name: {problem}",
                hint=f"name it with {JOB_NAME_RULE}",
            )
        try:
            compiled[job] = re.compile(regex)
        except re.error as exc:
            raise ConfigError(
                f"job_patterns: the regex for job {job!r} is invalid ({exc})",
                hint="fix it in config.toml or COBELL_JOB_PATTERNS",
            ) from None
    return compiled


def map_job(
    name: str,
    tags: Iterable[str],
    known_jobs: Iterable[str],
    patterns: Mapping[str, re.Pattern[str] | str] | None = None,
) -> str | None:
    """The job an app belongs to, or None for an unknown co-runner (see module docstring)."""
    known = list(known_jobs)
    for tag in tags:
        job = job_from_tag(tag, known)
        if job is not None:
            return job
    if name.startswith(JOB_NAME_PREFIX):
        value = name[len(JOB_NAME_PREFIX) :].strip()
        if value:
            return valid_job_name(value)
    for job, pattern in (patterns or {}).items():
        if re.search(pattern, name):
            return job
    if name in known:
        return name
    return None
