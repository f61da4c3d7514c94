"""The demo's deadline step: with the co-runner running, `cobell predict --deadline` for the
demo job, and its decision in two short lines (start now, or wait for the co-runner to end
and run alone on fewer executor-seconds). A module of its own so that a test can run the
step against any cluster (cli/demo.py runs it on the local Spark cluster)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping, Sequence

# Far enough that the job still meets it after the co-runner has ended (the co-runner's
# predicted end stretched by its error, ~75 s, then the job's upper bound alone, ~90 s at 1-2
# executors: docs/demo.md), near enough to read as a deadline.
DEMO_DEADLINE = "+5min"
# What a start "waits for" while it gathers the submits cron fires with it (a start now:
# core/schedule/decision.GATHERING, as predict --json spells it)
GATHERING = "submits arriving with it"


def deadline_step(cli: Sequence[str], job: str, options: Sequence[str],
                  show: Callable[[list[str]], None], env: Mapping[str, str] | None = None,
                  ) -> list[str]:
    """Run `predict --deadline` (shown as the user would type it, without --json) and return
    what the demo prints of its decision; one line saying why, when it fails."""
    step = [*cli, "predict", "-j", job, "--deadline", DEMO_DEADLINE, *options]
    show(step)
    done = subprocess.run([*step, "--json"], capture_output=True, text=True,
                          env=dict(env) if env is not None else None)
    try:
        decision = json.loads(done.stdout)
    except ValueError:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return [f"deadline step: predict --deadline failed ({last})"]
    return decision_lines(decision)


def decision_lines(decision: Mapping[str, object]) -> list[str]:
    """`predict --deadline --json` in two lines of at most 160 characters: the start and why."""
    from cobell_cli.api import count, duration_text

    scale_out = count(int(decision.get("scale_out") or 0), "executor")
    p = decision.get("meet_probability")
    chance = f"; P(meet the deadline) {p:.0%}" if isinstance(p, float) else ""
    waits_for = decision.get("waits_for")
    wait_s = decision.get("start_in_s") or 0.0
    if waits_for and waits_for != GATHERING and isinstance(wait_s, (int, float)) and wait_s > 0:
        head = (f"deadline decision: wait {duration_text(wait_s)} for "
                f"{_short(str(waits_for))}, then {scale_out}{chance}")
    else:
        head = f"deadline decision: start now on {scale_out}{chance}"
    why = str(decision.get("start_reason") or "")
    return [_fit(head), _fit(f"  why: {why}")]


def _short(name: str) -> str:
    """`corunner-demo (app-2026...-0001)` as `corunner-demo`: the job is what a person knows."""
    return name.split(" (", 1)[0]


def _fit(line: str, width: int = 160) -> str:
    return line if len(line) <= width else line[: width - 3] + "..."
