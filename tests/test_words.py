"""One vocabulary for a plan: the table, the reasons, --json, --help, the man page and
docs/planning.md say prediction, upper bound, P(meet), meets and executor-s, each with its
JSON key."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli_support import cobell

ROOT = Path(__file__).parents[1]
# word -> its --json key
WORDS = {
    "prediction": "predicted_s",
    "upper bound": "upper_s",
    "P(meet)": "meet_probability",
    "meets": "meets_target",
    "executor-s": "executor_seconds",
}


def _flat(text: str) -> str:
    """Text without line breaks, man-page escapes or Markdown code marks."""
    text = text.replace("\\-", "-").replace("`", "")
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("source", ["help", "man", "docs"])
def test_every_word_is_explained_with_its_json_key(source: str) -> None:
    if source == "help":
        text = cobell("predict", "--help").stdout
    elif source == "man":
        text = (ROOT / "man" / "cobell-predict.1").read_text()
    else:
        text = (ROOT / "docs" / "planning.md").read_text()
    flat = _flat(text).lower()
    for word, key in WORDS.items():
        assert f"{word.lower()} [{key}]" in flat, (source, word)


def test_the_table_the_reason_and_the_json_use_the_words(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    assert cobell("--db", db, "history", "import", ROOT / "history" / "example.csv").exit_code == 0
    args = ["--db", db, "predict", "-j", "sgd", "-t", "300", "--cluster", "none"]
    shown = cobell(*args).stdout
    header = next(line for line in shown.splitlines() if line.startswith("scale-out"))
    for column in ("prediction s", "upper bound s", "P(meet)", "meets", "executor-s"):
        assert column in header
    decision = next(line for line in shown.splitlines() if line.startswith("decision:"))
    assert "prediction " in decision and "upper bound " in decision and "P(meet) " in decision
    assert "predicts" not in decision and "upper 90% bound" not in decision
    plan = json.loads(cobell(*args, "--json").stdout)
    for key in WORDS.values():
        assert key in plan["candidates"][0]
