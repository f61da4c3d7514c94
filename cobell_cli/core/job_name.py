"""What a job name may be: one rule for `submit`, every import and the history.

A job name is 1 to `JOB_NAME_MAX_CHARS` printable characters of any script (`ジョブ-夜間`,
`😀-emoji-job`, `שלום-rtl`, combining accents), without white space or commas: a name travels
through table columns, Spark's app name, file names (`model plot -o DIR/`) and YARN tags. What
is refused is what a person cannot see or a terminal would act on: control characters (tab,
newline, ESC) and invisible format characters (zero-width space and joiner, bidi overrides),
besides white space and commas. Names are kept in Unicode's composed form (NFC), so `café`
typed with a combining accent and with a precomposed `é` is one job.

YARN splits tags at commas, lower-cases them and refuses one that is not printable ASCII or
longer than 100 characters, so a name's tag (`job_tag`) is `cobell-job:<name>` for ASCII
names, `cobell-job-u:<Punycode>` for others (RFC 3492, ASCII and case-insensitive, as IDNA
uses it), and `cobell-job-h:<hash>` for a name whose Punycode is too long: the job is then
recognised among the known ones. Importers map an app name that breaks the rule to one that
keeps it (`valid_job_name`) and say so; `submit` and the history refuse one.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from cobell_cli.core.digest import sha1

JOB_NAME_MAX_CHARS = 64
JOB_NAME_RULE = (
    f"1-{JOB_NAME_MAX_CHARS} printable characters of any script, no spaces, commas, control "
    "or invisible characters"
)
JOB_TAG_PREFIX = "cobell-job:"  # an ASCII name as it is
JOB_TAG_UNICODE = "cobell-job-u:"  # any other name, in Punycode
JOB_TAG_HASHED = "cobell-job-h:"  # a name whose Punycode is longer than a tag may be
YARN_TAG_MAX_CHARS = 100


def allowed(char: str) -> bool:
    """A character a job name may hold: printable (not a control, format, surrogate, private
    or unassigned one), not white space, not a comma."""
    return char.isprintable() and not char.isspace() and char != ","


def normal(name: str) -> str:
    """The composed form (NFC) a name is kept in."""
    return unicodedata.normalize("NFC", name)


def shown(char: str) -> str:
    """A refused character named so that a person sees which: `'\\t'`, `U+200B ZERO WIDTH
    SPACE`."""
    if char.isascii():
        return repr(char)
    return f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed character')}"


def job_name_problem(name: str) -> str | None:
    """Why `name` is not a job name, or None when it is one."""
    if not name:
        return "it is empty"
    name = normal(name)
    if len(name) > JOB_NAME_MAX_CHARS:
        return f"it has {len(name)} characters (at most {JOB_NAME_MAX_CHARS})"
    bad = sorted({c for c in name if not allowed(c)})
    if bad:
        return "it contains " + ", ".join(shown(c) for c in bad[:5])
    return None


def valid_job_name(name: str) -> str:
    """`name` itself (composed) when it keeps the rule; else each run of other characters
    becomes one `-` (`adhoc report` -> `adhoc-report`), and a name still too long (or left
    empty) gets a short hash of the whole, so two such names stay two jobs."""
    name = normal(name)
    if job_name_problem(name) is None:
        return name
    parts, word = [], []
    for char in name:
        if allowed(char):
            word.append(char)
        elif word:
            parts.append("".join(word))
            word = []
    parts.append("".join(word))
    mapped = "-".join(part for part in parts if part)
    if mapped and len(mapped) <= JOB_NAME_MAX_CHARS:
        return mapped
    digest = sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{mapped[: JOB_NAME_MAX_CHARS - 9] or 'app'}-{digest}"


def check_job_name(name: str, option: str = "--job") -> str:
    """`name` in its composed form, or the usage error that says what a job name is."""
    from cobell_cli.errors import UsageError

    problem = job_name_problem(name)
    if problem is None:
        return normal(name)
    cut = name if len(name) <= 40 else f"{name[:40]}..."
    raise UsageError(
        f"{option} {_escaped(cut)} is not a job name: {problem}",
        hint=f"a job name is {JOB_NAME_RULE} (e.g. {valid_job_name(name)!r})",
    )


def _escaped(text: str) -> str:
    """A refused name quoted with what is invisible or active in it escaped (repr escapes
    controls but prints format characters such as a bidi override raw)."""
    return "'" + "".join(c if allowed(c) or c == " " else f"\\u{ord(c):04x}"
                         if ord(c) > 0xFF else repr(c)[1:-1] for c in text) + "'"


def job_tag(job: str) -> str:
    """The YARN application tag cobell puts on what it submits for `job` (module doc)."""
    if job.isascii():
        return f"{JOB_TAG_PREFIX}{job}"
    coded = f"{JOB_TAG_UNICODE}{job.encode('punycode').decode('ascii')}"
    if len(coded) <= YARN_TAG_MAX_CHARS:
        return coded
    return f"{JOB_TAG_HASHED}{_tag_hash(job)}"


def job_from_tag(tag: str, known_jobs: Iterable[str] = ()) -> str | None:
    """The job a `job_tag` names, spelled as the known job it matches (YARN lower-cased the
    tag's ASCII letters); None for a tag that is not cobell's, or a hashed tag of no known
    job."""
    lowered = tag.strip().lower()
    known = list(known_jobs)
    if lowered.startswith(JOB_TAG_HASHED):
        digest = lowered[len(JOB_TAG_HASHED):]
        return next((job for job in known if _tag_hash(job) == digest), None)
    if lowered.startswith(JOB_TAG_UNICODE):
        try:
            value = tag.strip()[len(JOB_TAG_UNICODE):].encode("ascii").decode("punycode")
        except (UnicodeError, ValueError):
            return None
    elif lowered.startswith(JOB_TAG_PREFIX):
        value = tag.strip()[len(JOB_TAG_PREFIX):].strip()
    else:
        return None
    if not value:
        return None
    value = valid_job_name(value)
    return next((job for job in known if job.lower() == value.lower()), value)


def _tag_hash(job: str) -> str:
    return sha1(normal(job).encode("utf-8")).hexdigest()[:16]
