"""store/profile_cache.py: a profile's stored JSON decoded once, the same values read back in
other processes, and a damaged or unwritable cache a miss, never an error."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import cobell_cli.store.profile_cache as profile_cache
from cobell_cli import api, config
from cobell_cli.cluster.none import NoCluster
from cobell_cli.core.profile import AppProfile
from cobell_cli.store.history import History
from cobell_cli.store.profile_cache import ProfileCache
from tests.test_replay_cache import db, etl_profile  # noqa: F401 - the fixture

# A summary with what a real one holds: floats that round-trip by repr only, a NaN-free
# mixture of ints, None, strings (non-ASCII too), nested lists.
SUMMARY = json.dumps({**etl_profile().to_dict(), "app_name": "étl \u2603",
                      "odd": [0.1 + 0.2, 1e-310, -0.0, 2**70, None, True, "x"]})


def entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("profile-*.marshal"))


def test_a_second_process_reads_the_same_values_without_parsing_json(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = ProfileCache(tmp_path).decode(SUMMARY)
    assert first == json.loads(SUMMARY) and len(entries(tmp_path)) == 1
    expected = AppProfile.from_dict({k: v for k, v in first.items() if k != "odd"})

    def no_json(text: str) -> None:
        raise AssertionError("parsed the JSON again")

    monkeypatch.setattr(profile_cache.json, "loads", no_json)
    again = ProfileCache(tmp_path).decode(SUMMARY)
    assert again == first
    assert repr(again["odd"]) == repr(first["odd"])  # -0.0 and 1e-310 exactly
    assert AppProfile.from_dict({k: v for k, v in again.items() if k != "odd"}) == expected
    assert expected.app_name == "étl \u2603" and expected.stages == etl_profile().stages


def test_another_text_is_another_entry(tmp_path: Path) -> None:
    other = SUMMARY.replace('"task_s": [1.0', '"task_s": [1.5', 1)
    assert other != SUMMARY
    cache = ProfileCache(tmp_path)
    assert cache.decode(other) == json.loads(other) != cache.decode(SUMMARY)
    assert len(entries(tmp_path)) == 2


@pytest.mark.parametrize("damage", [b"", b"\x00garbage", b"N"], ids=["empty", "garbage",
                                                                        "not a dict"])
def test_a_damaged_entry_is_a_miss_and_is_written_again(tmp_path: Path, damage: bytes) -> None:
    ProfileCache(tmp_path).decode(SUMMARY)
    [path] = entries(tmp_path)
    path.write_bytes(damage)
    assert ProfileCache(tmp_path).decode(SUMMARY) == json.loads(SUMMARY)
    assert path.read_bytes() != damage


def test_an_unwritable_directory_is_no_cache_not_an_error(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    assert ProfileCache(blocked / "models").decode(SUMMARY) == json.loads(SUMMARY)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_the_newest_entries_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profile_cache, "MAX_PROFILES", 2)
    (tmp_path / "model.json").write_text("{}")  # the model cache's: not this cache's to prune
    texts = [json.dumps({"i": i}) for i in range(4)]
    paths = [tmp_path / f"profile-{profile_cache._key(t)}.marshal" for t in texts]
    cache = ProfileCache(tmp_path)
    for i, text in enumerate(texts):
        cache.decode(text)
        os.utime(paths[i], (1000.0 * i, 1000.0 * i))  # written in this order, however coarse
    assert entries(tmp_path) == sorted(paths[2:])
    assert (tmp_path / "model.json").exists()


def test_a_plan_with_the_cache_is_the_plan_without_it(db: Path) -> None:  # noqa: F811
    def predict(**settings: object) -> dict:
        s = config.load({"db": str(db), "max_scale_out": 16, **settings})
        with History.open(db, read_only=True) as history:
            out = api.predict(history, NoCluster("test"), s, job="etl", target_s=10.0,
                              now=1e6).to_dict()
        out.pop("model_cache", None)  # the cache's hits and misses
        return out

    off = predict(model_cache=False)
    models = config.cache_dir() / "models"
    assert entries(models) == []
    first, second = predict(), predict()
    assert len(entries(models)) == 1
    assert first["phase"] == "bootstrap-whatif" and off == first == second
