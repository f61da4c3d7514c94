"""Settings from Python: what cobell will use, and where each value came from.

`cobell config show` and every command's option handling are a thin layer over these, so a
script resolves the same values from the same places (flags > COBELL_* environment > the
config file > defaults), with the same ConfigError for a bad value.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cobell_cli.config import Settings


def load_settings(config_file: str | Path | None = None, **flags: Any) -> Settings:
    """Every setting as the CLI resolves it: `flags` (the options' names, e.g. rm_url,
    cluster, history_window; None counts as not given) > COBELL_* environment > the config
    file > defaults. A ConfigError for a bad value."""
    from cobell_cli.config import load

    return load(flags, config_file)


def settings_rows(settings: Settings) -> list[dict[str, Any]]:
    """Each setting's effective value, where it came from (flag, env, the config file or
    default) and its environment variable: the rows `cobell config show` prints."""
    from cobell_cli.config import SETTINGS

    return [
        {
            "key": s.name,
            "value": str(settings.db_path) if s.name == "db" else settings.values[s.name],
            "source": settings.sources[s.name],
            "env": s.env,
        }
        for s in SETTINGS
    ]
