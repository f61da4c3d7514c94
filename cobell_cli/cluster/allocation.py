"""What container a YARN cluster grants: its allocation step and largest container, in MB.

The scheduler rounds every request up to a multiple of `yarn.scheduler.minimum-allocation-mb`
(the Fair Scheduler to `yarn.resource-types.memory-mb.increment-allocation`, default the same
1024) and refuses one above `yarn.scheduler.maximum-allocation-mb`. Read, in order, from the
ResourceManager's own configuration (`/conf?format=json`, the ConfServlet every
Hadoop daemon serves: what the RM really runs with), else from yarn-site.xml (what this host's
clients are configured with), else Spark's and YARN's defaults (1024 MB step, no known
maximum), said so in `source`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MIN_ALLOCATION = "yarn.scheduler.minimum-allocation-mb"
MAX_ALLOCATION = "yarn.scheduler.maximum-allocation-mb"
INCREMENT = "yarn.resource-types.memory-mb.increment-allocation"
FAIR = "FairScheduler"
SCHEDULER_CLASS = "yarn.resourcemanager.scheduler.class"


@dataclass(frozen=True)
class Allocation:
    """The cluster's container rounding: step and largest container (None: unknown)."""

    step_mb: int | None
    maximum_mb: int | None
    source: str  # "resourcemanager", "yarn-site.xml", or "default"


def conf_values(document: Any) -> dict[str, str]:
    """key -> value of a ConfServlet JSON answer: `{"properties": [...]}` for the whole
    configuration, `{"property": {...}}` for one `name`; anything else gives nothing."""
    if not isinstance(document, Mapping):
        return {}
    items = document.get("properties")
    if items is None and isinstance(document.get("property"), Mapping):
        items = [document["property"]]
    out = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, Mapping) and isinstance(item.get("key"), str):
            out[item["key"]] = str(item.get("value", "")).strip()
    return out


def allocation_of(props: Mapping[str, str], source: str) -> Allocation | None:
    """The allocation a set of YARN properties gives; None when they do not name it."""
    fair = FAIR in props.get(SCHEDULER_CLASS, "")
    step = _mb(props.get(INCREMENT)) if fair else None
    step = step or _mb(props.get(MIN_ALLOCATION))
    maximum = _mb(props.get(MAX_ALLOCATION))
    if step is None and maximum is None:
        return None
    return Allocation(step, maximum, source)


def _mb(value: str | None) -> int | None:
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


DEFAULT = Allocation(None, None, "default")
