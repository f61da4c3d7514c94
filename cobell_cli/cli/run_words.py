"""How a run ended, in the words `cobell submit`'s summary and the demos' summary share: a run
that was killed or failed says so ("killed after 12 s", "failed (exit 1)"), and only a run
that succeeded is held against its target ("target 60 s: met" or "missed")."""

from __future__ import annotations


def ending(status: str, runtime_s: float | None, exit_code: int | None,
           failure_reason: str | None = None) -> str:
    """`succeeded in 48 s`, `killed after 12 s`, `failed for memory (exit 52) after 3.1 s`
    (durations as core/words.duration_text writes them everywhere)."""
    from cobell_cli.api import duration_text

    took = "" if runtime_s is None else f" after {duration_text(runtime_s)}"
    if status == "killed":
        return f"killed{took}"
    if status == "failed":
        why = " for memory" if failure_reason == "memory" else ""
        return f"failed{why} (exit {exit_code}){took}"
    return f"{status}" + ("" if runtime_s is None else f" in {duration_text(runtime_s)}")


def against_target(status: str, runtime_s: float | None, predicted_s: float | None,
                   target_s: float) -> str:
    """`prediction 53 s, target 60 s: met`; a run that did not succeed met or missed nothing."""
    from cobell_cli.api import duration_text

    predicted = f"prediction {duration_text(predicted_s)}, " if predicted_s else ""
    if status != "succeeded":
        return f"{predicted}target {duration_text(target_s)}"
    met = runtime_s is not None and runtime_s <= target_s
    return f"{predicted}target {duration_text(target_s)}: {'met' if met else 'missed'}"
