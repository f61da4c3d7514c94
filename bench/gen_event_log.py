"""Write a large, realistic Spark event log (for bench/import_speed.py): plain or zstd.

    python -m bench.gen_event_log OUT [--size-mb 1024] [--zstd] [--executors 16] [--cores 4]

Every event is shaped like the ones a real Spark 4 run wrote: the first event of each kind in
a recorded log (tests/data/eventlogs/logs/, a real run on the local standalone cluster) is the
template, and only the fields that differ from event to event are set (ids, times, executors,
metrics), so the log has Spark's field names, nesting, accumulables and sizes (~3.6 KB per
task end). The application (`bench-etl`, tag `cobell-job:bench-etl`) runs jobs of three
stages until the log reaches `--size-mb` MiB uncompressed: a stage reading the input (input
bytes in its task metrics and accumulables), a shuffle stage after it and a result stage,
with lognormal task durations scheduled on executors x cores slots; a quarter of the
executors leave after a third of the jobs and come back after two thirds (dynamic
allocation: the peak scale-out and the time-weighted mean differ). Deterministic for a seed.
The file goes where OUT says; keep it out of the repository (e.g. under /tmp).
"""

from __future__ import annotations

import argparse
import copy
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE_LOG = ROOT / "tests" / "data" / "eventlogs" / "logs" / "app-20261122233927-0000.zstd"
APP_ID = "app-20990101000000-0001"
APP_NAME = "bench-etl"
START_MS = 4_070_908_800_000  # 2099-01-01, far from any real app
MiB = 1 << 20
INPUT_BYTES = "internal.metrics.input.bytesRead"


def templates(path: Path = TEMPLATE_LOG) -> dict[str, dict[str, Any]]:
    """The first event of each kind in a real log, by event name."""
    from cobell_cli.sources.eventlog import iter_events

    found: dict[str, dict[str, Any]] = {}
    for event in iter_events(path):
        found.setdefault(event["Event"], event)
    return found


class Generator:
    """Events of one synthetic application, in time order, as compact JSON lines."""

    def __init__(self, tpl: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
        self.tpl = tpl
        self.rng = random.Random(args.seed)
        self.executors = args.executors
        self.cores = args.cores
        self.task_id = 0
        self.stage_id = 0
        self.now = START_MS

    def line(self, event: dict[str, Any]) -> bytes:
        return json.dumps(event, separators=(",", ":")).encode() + b"\n"

    def like(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = dict(self.tpl[kind])
        event.update(fields)
        return event

    def prologue(self) -> Iterator[bytes]:
        yield self.line(self.tpl["SparkListenerLogStart"])
        yield self.line(self.tpl["SparkListenerResourceProfileAdded"])
        env = copy.deepcopy(self.tpl["SparkListenerEnvironmentUpdate"])
        props = dict(env["Spark Properties"])
        props.update(
            {
                "spark.app.name": APP_NAME,
                "spark.app.id": APP_ID,
                "spark.yarn.tags": f"cobell-job:{APP_NAME}",
                "spark.executor.cores": str(self.cores),
            }
        )
        env["Spark Properties"] = props
        yield self.line(env)
        yield self.line(
            self.like(
                "SparkListenerApplicationStart",
                **{"App ID": APP_ID, "App Name": APP_NAME, "Timestamp": self.now},
            )
        )
        self.now += 2000
        for k in range(1, self.executors + 1):
            yield from self.executor_added(str(k))

    def executor_added(self, executor_id: str) -> Iterator[bytes]:
        info = dict(self.tpl["SparkListenerExecutorAdded"]["Executor Info"])
        info.update({"Total Cores": self.cores, "Registration Time": self.now})
        yield self.line(
            self.like(
                "SparkListenerExecutorAdded",
                **{"Executor ID": executor_id, "Timestamp": self.now, "Executor Info": info},
            )
        )
        manager = dict(self.tpl["SparkListenerBlockManagerAdded"]["Block Manager ID"])
        manager["Executor ID"] = executor_id
        yield self.line(
            self.like(
                "SparkListenerBlockManagerAdded",
                **{"Timestamp": self.now, "Block Manager ID": manager},
            )
        )

    def vary(self, value: Any) -> Any:
        """A positive whole number scaled by 0.5-1.5 (metrics differ from task to task)."""
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return int(value * (0.5 + self.rng.random()))
        return value

    def varied(self, metrics: dict[str, Any]) -> dict[str, Any]:
        return {k: self.vary(v) for k, v in metrics.items()}

    def executor_removed(self, executor_id: str) -> bytes:
        return self.line(
            {
                "Event": "SparkListenerExecutorRemoved",
                "Timestamp": self.now,
                "Executor ID": executor_id,
                "Removed Reason": "Executor killed by driver (dynamic allocation: idle).",
            }
        )

    def stage_info(self, stage_id: int, tasks: int, parents: list[int]) -> dict[str, Any]:
        info = dict(self.tpl["SparkListenerStageSubmitted"]["Stage Info"])
        info.update(
            {
                "Stage ID": stage_id,
                "Stage Name": f"stage {stage_id} at etl.py:{10 + stage_id % 50}",
                "Number of Tasks": tasks,
                "Parent IDs": parents,
            }
        )
        return info

    def job(self, job_id: int, live: list[str]) -> Iterator[bytes]:
        """One job: input stage -> shuffle stage -> result stage."""
        first = self.stage_id
        shapes = [
            (first, self.rng.randint(100, 400), []),
            (first + 1, self.rng.randint(50, 200), [first]),
            (first + 2, self.rng.randint(20, 100), [first + 1]),
        ]
        self.stage_id += 3
        infos = [self.stage_info(s, n, p) for s, n, p in shapes]
        yield self.line(
            self.like(
                "SparkListenerJobStart",
                **{
                    "Job ID": job_id,
                    "Submission Time": self.now,
                    "Stage Infos": infos,
                    "Stage IDs": [s for s, _, _ in shapes],
                },
            )
        )
        for (stage_id, tasks, parents), info in zip(shapes, infos, strict=True):
            yield from self.stage(stage_id, tasks, not parents, info, live)
        yield self.line(
            self.like(
                "SparkListenerJobEnd",
                **{
                    "Job ID": job_id,
                    "Completion Time": self.now,
                    "Job Result": {"Result": "JobSucceeded"},
                },
            )
        )
        self.now += self.rng.randint(200, 1500)  # the driver's work between jobs

    def stage(
        self, stage_id: int, tasks: int, reads_input: bool, info: dict[str, Any], live: list[str]
    ) -> Iterator[bytes]:
        submitted = self.now
        yield self.line(
            self.like(
                "SparkListenerStageSubmitted",
                **{"Stage Info": {**info, "Submission Time": submitted}},
            )
        )
        slots = [(submitted + 5, ex) for ex in live for _ in range(self.cores)]
        events: list[tuple[int, int, bytes]] = []
        read_total = 0
        for index in range(tasks):
            slots.sort()
            launch, executor = slots[0]
            run_ms = int(self.rng.lognormvariate(7.0, 0.5))  # ~1.1 s median
            finish = launch + run_ms + 3
            slots[0] = (finish + 1, executor)
            read = self.rng.randint(100, 140) * MiB if reads_input else 0
            read_total += read
            start_ev, end_ev = self.task(stage_id, index, launch, finish, executor, run_ms, read)
            events += [(launch, 0, start_ev), (finish, 1, end_ev)]
        events.sort(key=lambda e: (e[0], e[1]))
        for _, _, line in events:
            yield line
        self.now = max(finish for finish, _ in slots) + 10
        done = {**info, "Submission Time": submitted, "Completion Time": self.now}
        if reads_input:
            kept = [a for a in info.get("Accumulables") or () if a.get("Name") != INPUT_BYTES]
            done["Accumulables"] = [
                *kept,
                {"ID": 1000 + stage_id, "Name": INPUT_BYTES, "Value": read_total,
                 "Internal": True, "Count Failed Values": True},
            ]  # fmt: skip
        yield self.line(self.like("SparkListenerStageCompleted", **{"Stage Info": done}))

    def task(
        self,
        stage_id: int,
        index: int,
        launch: int,
        finish: int,
        executor: str,
        run_ms: int,
        read: int,
    ) -> tuple[bytes, bytes]:
        self.task_id += 1
        base = {
            "Task ID": self.task_id,
            "Index": index,
            "Partition ID": index,
            "Launch Time": launch,
            "Executor ID": executor,
        }
        start_info = {**self.tpl["SparkListenerTaskStart"]["Task Info"], **base}
        start = self.like(
            "SparkListenerTaskStart", **{"Stage ID": stage_id, "Task Info": start_info}
        )
        end_tpl = self.tpl["SparkListenerTaskEnd"]
        end_info = {**end_tpl["Task Info"], **base, "Finish Time": finish}
        end_info["Accumulables"] = [
            {**a, "Update": self.vary(a.get("Update")), "Value": self.vary(a.get("Value"))}
            for a in end_info.get("Accumulables") or ()
        ]
        metrics = self.varied(end_tpl["Task Metrics"])
        metrics["Executor Run Time"] = run_ms
        metrics["Input Metrics"] = {"Bytes Read": read, "Records Read": read // 100}
        end = self.like(
            "SparkListenerTaskEnd",
            **{
                "Stage ID": stage_id,
                "Task Info": end_info,
                "Task Metrics": metrics,
                "Task Executor Metrics": self.varied(end_tpl["Task Executor Metrics"]),
            },
        )
        return self.line(start), self.line(end)

    def events(self, size_bytes: int) -> Iterator[bytes]:
        written = 0
        live = [str(k) for k in range(1, self.executors + 1)]
        gone: list[str] = []
        job_id = 0
        for line in self.prologue():
            written += len(line)
            yield line
        while written < size_bytes:
            share = written / size_bytes
            if share > 1 / 3 and not gone and share < 2 / 3:  # dynamic allocation gives back
                gone = live[-max(1, self.executors // 4) :]
                live = live[: -len(gone)]
                for ex in gone:
                    line = self.executor_removed(ex)
                    written += len(line)
                    yield line
            elif share >= 2 / 3 and gone:  # and asks again
                for k, _ in enumerate(gone):
                    ex = str(self.executors + k + 1)
                    live.append(ex)
                    for line in self.executor_added(ex):
                        written += len(line)
                        yield line
                gone = []
            for line in self.job(job_id, live):
                written += len(line)
                yield line
            job_id += 1
        yield self.line(
            self.like("SparkListenerApplicationEnd", **{"Timestamp": self.now, "ExitCode": 0})
        )


def write(out: BinaryIO, lines: Iterator[bytes]) -> int:
    """Write in ~1 MiB batches; returns the uncompressed bytes written."""
    total, batch = 0, []
    size = 0
    for line in lines:
        batch.append(line)
        size += len(line)
        if size >= MiB:
            out.write(b"".join(batch))
            total, batch, size = total + size, [], 0
    out.write(b"".join(batch))
    return total + size


def generate(path: Path, size_mb: float, *, zstd: bool = False, **options: Any) -> int:
    """Write the log to `path` (zstd-compressed when asked); returns its uncompressed bytes."""
    args = argparse.Namespace(**{"seed": 1, "executors": 16, "cores": 4, **options})
    gen = Generator(templates(), args)
    lines = gen.events(int(size_mb * MiB))
    with path.open("wb") as raw:
        if not zstd:
            return write(raw, lines)
        import zstandard

        with zstandard.ZstdCompressor(level=3).stream_writer(raw, closefd=False) as packed:
            return write(packed, lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the log file to write (e.g. /tmp/app-1.zstd)")
    parser.add_argument("--size-mb", type=float, default=1024.0, help="uncompressed MiB")
    parser.add_argument("--zstd", action="store_true", help="compress with zstd (Spark 4's codec)")
    parser.add_argument("--executors", type=int, default=16)
    parser.add_argument("--cores", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    size = generate(
        args.out,
        args.size_mb,
        zstd=args.zstd,
        seed=args.seed,
        executors=args.executors,
        cores=args.cores,
    )
    on_disk = args.out.stat().st_size / MiB
    print(f"{args.out}: {size / MiB:.0f} MiB of events, {on_disk:.0f} MiB on disk")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
