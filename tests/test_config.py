"""Configuration precedence: flags > COBELL_* env > config file > defaults, with sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cobell_cli import config
from cobell_cli.errors import ConfigError
from tests.cli_support import cobell


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_precedence_flag_env_file_default(tmp_path: Path) -> None:
    cfg = write(tmp_path / "c.toml", 'max_scale_out = 30\nmin_scale_out = 2\ncluster = "yarn"\n')
    env = {"COBELL_MAX_SCALE_OUT": "40", "COBELL_CLUSTER": "none"}
    s = config.load({"cluster": "standalone"}, cfg, env)
    assert (s.cluster, s.sources["cluster"]) == ("standalone", "flag")
    assert (s.max_scale_out, s.sources["max_scale_out"]) == (40, "env COBELL_MAX_SCALE_OUT")
    assert (s.min_scale_out, s.sources["min_scale_out"]) == (2, f"file {cfg}")
    assert (s.timeout_s, s.sources["timeout_s"]) == (10.0, "default")


def test_default_file_location_follows_xdg(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_DATA_HOME": str(tmp_path / "data")}
    write(
        tmp_path / "cfg" / "cobell" / "config.toml", "rm_url = ['http://a:8088', 'http://b:8088']\n"
    )
    s = config.load({}, None, env)
    assert s.rm_url == ["http://a:8088", "http://b:8088"]
    assert config.default_db_path(env) == tmp_path / "data" / "cobell" / "history.db"


def test_unknown_keys_are_reported(tmp_path: Path) -> None:
    cfg = write(tmp_path / "c.toml", "max_scale_outt = 3\n")
    s = config.load({}, cfg, {})
    assert any("unknown key 'max_scale_outt'" in w for w in s.warnings)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("max_scale_out = [\n", "not valid TOML"),
        ("max_scale_out = 'many'\n", "bad value for max_scale_out"),
        ("cluster = 'mesos'\n", "expected one of"),
        ("min_scale_out = 9\nmax_scale_out = 3\n", "larger than max_scale_out"),
        ("confidence = 1.5\n", "between 0 and 1"),
    ],
)
def test_bad_files_are_config_errors(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        config.load({}, write(tmp_path / "c.toml", text), {})


def test_bad_env_value_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="COBELL_TIMEOUT_S"):
        config.load({}, None, {"COBELL_TIMEOUT_S": "-1", "HOME": "/nonexistent"})


def test_missing_explicit_config_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        config.load({}, tmp_path / "nope.toml", {})


def test_config_show_cli(tmp_path: Path) -> None:
    cfg = write(tmp_path / "c.toml", "max_scale_out = 12\nbogus = 1\n")
    result = cobell("--config", cfg, "config", "show", "--json", env={"COBELL_MIN_SCALE_OUT": "3"})
    assert result.exit_code == 0, result.stderr
    rows = {r["key"]: r for r in json.loads(result.stdout)["settings"]}
    assert rows["max_scale_out"]["value"] == 12 and rows["max_scale_out"]["source"].startswith(
        "file"
    )
    assert rows["min_scale_out"]["source"] == "env COBELL_MIN_SCALE_OUT"
    assert "unknown key 'bogus'" in result.stderr
    broken = cobell("--config", write(tmp_path / "b.toml", "x = [\n"), "config", "show")
    assert broken.exit_code == 2 and "not valid TOML" in broken.stderr
    assert "Traceback" not in broken.stderr
