"""History files in and out: cobell's own CSV/JSON (what `export` writes) and Bell's CSV.

Import is two-phase on purpose: every row is parsed and validated first, and only a clean set
(or, with skip_invalid, the valid subset) reaches the store in one transaction.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cobell_cli.errors import ImportFileError
from cobell_cli.store.history import RUN_COLUMNS, validate_run

EXPORT_COLUMNS: tuple[str, ...] = (*RUN_COLUMNS, "colocations")
BELL_HEADER = ["Nodes", "Runtime"]
FORMAT_TAG = "cobell_history"
FORMAT_VERSION = 1


@dataclass
class Problem:
    where: str  # "line 7" or "record 3"
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass
class Parsed:
    kind: str  # "cobell-csv", "cobell-json", "bell-csv"
    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def default_job_name(path: Path) -> str:
    """`sgd.spark.csv` -> `sgd`: Bell's files are named <job>.<framework>.csv."""
    return path.name.split(".", 1)[0]


def parse(
    path: Path,
    text: str,
    *,
    job: str | None = None,
    runtime_unit: str | None = None,
) -> Parsed:
    """Parse and validate every record of a history file; never touches the store."""
    if "\0" in text:
        raise ImportFileError(
            "binary data (NUL bytes), not a history file", hint="give a CSV or JSON history file"
        )
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")):
        parsed = _parse_json(text)
    else:
        parsed = _parse_csv(path, text, job, runtime_unit)
    if parsed.kind != "bell-csv":
        if runtime_unit not in (None, "s"):
            raise ImportFileError(
                f"{path}: --runtime-unit applies to Bell's Nodes,Runtime files only",
                hint="cobell's own files store runtime_s in seconds",
            )
        if job is not None:
            for record in parsed.records:
                record["job"] = job
    return parsed


def _parse_csv(path: Path, text: str, job: str | None, runtime_unit: str | None) -> Parsed:
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader, [])]
        if header == BELL_HEADER:
            return _parse_bell(text, job or default_job_name(path), runtime_unit or "ms")
        if "job" in header or "scale_out" in header:
            return _parse_cobell_csv(text)
    except csv.Error as exc:  # a field over the csv module's limit, a stray NUL
        raise ImportFileError(
            f"line {reader.line_num or 1}: not readable as CSV ({exc})",
            hint=f"fields longer than {csv.field_size_limit()} characters are not supported",
        ) from None
    if not header:
        raise ImportFileError(f"{path} is empty", hint="give a CSV or JSON history file")
    raise ImportFileError(
        f"{path}: line 1: unrecognised header {','.join(header)[:200]!r}",
        hint="expected cobell's CSV (see history/README.md), JSON, or Bell's Nodes,Runtime",
    )


def _redacted_command(record: dict[str, Any]) -> None:
    """An imported command is stored like a recorded one: without its secrets."""
    from cobell_cli.redact import redact, scrub

    command = record.get("command")
    if isinstance(command, str):
        try:
            argv = json.loads(command)
        except ValueError:
            argv = None
        if isinstance(argv, list) and all(isinstance(a, str) for a in argv):
            record["command"] = json.dumps(redact(argv))
        else:
            record["command"] = scrub(command)
    elif isinstance(command, list):
        record["command"] = redact([str(a) for a in command])


def _validated(record: dict[str, Any], where: str, parsed: Parsed) -> None:
    _redacted_command(record)
    try:
        parsed.records.append(validate_run(record))
    except ValueError as exc:
        parsed.problems.append(Problem(where, str(exc)))


def _parse_bell(text: str, job: str, unit: str) -> Parsed:
    scale = {"ms": 1e-3, "s": 1.0}[unit]
    parsed = Parsed("bell-csv")
    reader = csv.reader(io.StringIO(text))
    next(reader)
    for row in _rows(reader):
        where = f"line {reader.line_num}"
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != 2:
            parsed.problems.append(
                Problem(where, f"expected 2 fields (Nodes,Runtime), got {len(row)}")
            )
            continue
        nodes, runtime = (c.strip() for c in row)
        try:
            runtime_s = float(runtime) * scale
        except ValueError:
            parsed.problems.append(Problem(where, f"Runtime: expected a number, got {runtime!r}"))
            continue
        if not runtime_s > 0:
            parsed.problems.append(Problem(where, f"Runtime: must be > 0, got {runtime!r}"))
            continue
        _validated(
            {"job": job, "scale_out": nodes, "runtime_s": runtime_s, "status": "succeeded"},
            where,
            parsed,
        )
    return parsed


def _parse_cobell_csv(text: str) -> Parsed:
    parsed = Parsed("cobell-csv")
    reader = csv.DictReader(io.StringIO(text))
    unknown = [c for c in reader.fieldnames or [] if c not in EXPORT_COLUMNS]
    if unknown:
        raise ImportFileError(
            f"line 1: unknown column(s) {', '.join(unknown)}",
            hint="see history/README.md for the columns",
        )
    for row in _rows(reader):
        where = f"line {reader.line_num}"
        if None in row:
            parsed.problems.append(Problem(where, "more fields than the header has"))
            continue
        record: dict[str, Any] = {k: (v if v != "" else None) for k, v in row.items() if k}
        raw = record.pop("colocations", None)
        if raw:
            try:
                colocations = json.loads(raw)
                if not isinstance(colocations, list):
                    raise ValueError
            except ValueError:
                parsed.problems.append(Problem(where, "colocations: expected a JSON list"))
                continue
            record["colocations"] = colocations
        _validated(record, where, parsed)
    return parsed


def _rows(reader: Any) -> Any:
    """The reader's rows; a csv.Error becomes the import error naming its line."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ImportFileError(
                f"line {reader.line_num + 1}: not readable as CSV ({exc})",
                hint=f"fields longer than {csv.field_size_limit()} characters are not supported",
            ) from None
        yield row


def _parse_json(text: str) -> Parsed:
    parsed = Parsed("cobell-json")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFileError(f"line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise ImportFileError(
            "JSON nested too deeply to be a history", hint="give a file `history export` wrote"
        ) from None
    if isinstance(document, Mapping):
        runs = document.get("runs")
        version = document.get(FORMAT_TAG, FORMAT_VERSION)
        if isinstance(version, bool) or not isinstance(version, int):
            raise ImportFileError(
                f"{FORMAT_TAG}: expected a format number, got {str(version)[:40]!r}",
                hint=f"files `history export` writes have \"{FORMAT_TAG}\": {FORMAT_VERSION}",
            )
        if version > FORMAT_VERSION:
            raise ImportFileError(f"written by a newer cobell (format {version})",
                                  hint="upgrade cobell")
    else:
        runs = document
    if not isinstance(runs, list):
        raise ImportFileError("expected a list of runs (or an object with a `runs` list)")
    for index, record in enumerate(runs, start=1):
        where = f"record {index}"
        if not isinstance(record, Mapping):
            parsed.problems.append(Problem(where, "expected an object"))
            continue
        colocations = record.get("colocations")
        if colocations is not None and not isinstance(colocations, list):
            parsed.problems.append(Problem(where, "colocations: expected a list"))
            continue
        _validated(dict(record), where, parsed)
    return parsed


def export_records(runs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {c: run.get(c) for c in EXPORT_COLUMNS if c != "colocations"}
        | {"colocations": list(run.get("colocations") or [])}
        for run in runs
    ]


def to_csv(runs: Iterable[Mapping[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(EXPORT_COLUMNS)
    for run in runs:
        cells = ["" if run.get(c) is None else run.get(c) for c in EXPORT_COLUMNS[:-1]]
        colocations = run.get("colocations") or []
        cells.append(json.dumps(colocations, separators=(",", ":")) if colocations else "")
        writer.writerow(cells)
    return buf.getvalue()


def to_json(runs: Iterable[Mapping[str, Any]]) -> str:
    return json.dumps(
        {FORMAT_TAG: FORMAT_VERSION, "runs": export_records(runs)}, indent=1, allow_nan=False
    )
