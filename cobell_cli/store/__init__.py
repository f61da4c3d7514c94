"""The run history (one SQLite file), its import/export formats and the model cache.

The names most callers need are re-exported here: `from cobell_cli.store import History`.
"""

from cobell_cli.store.history import (
    APPLICATION_ID,
    RUN_COLUMNS,
    SCHEMA_VERSION,
    SOURCES,
    STATUSES,
    History,
    validate_run,
)
from cobell_cli.store.processes import this_host

__all__ = [
    "APPLICATION_ID",
    "RUN_COLUMNS",
    "SCHEMA_VERSION",
    "SOURCES",
    "STATUSES",
    "History",
    "this_host",
    "validate_run",
]
