"""YARN node labels (partitions): which exist, where they have active nodes, which queue may
use them; read from the ResourceManager REST API.

- `GET /ws/v1/cluster/get-node-labels`: `{"nodeLabelInfo": [{"name", "exclusivity"}]}`
  (Hadoop >= 2.8; a single object instead of a list where there is one label; older RMs
  `{"nodeLabels": ["x"]}`);
- `GET /ws/v1/cluster/nodes`: each node's `state` and `nodeLabels` (none: the default
  partition) and its `totalResource` (`memory`, `vCores`);
- `GET /ws/v1/cluster/scheduler`: the capacity scheduler's queues, each with its
  `nodeLabels` (the labels it may use; `*` for all) and `defaultNodeLabelExpression`.

`Partitions.check` turns what a submit asks for into labels it can use, or a one-line error
before anything starts: a label with no active node, or one the queue may not use, would
leave the application waiting forever. The default partition is the label "".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cobell_cli.errors import ClusterError, UsageError

DEFAULT_PARTITION = ""
ALL_LABELS = "*"


@dataclass(frozen=True)
class Partition:
    label: str
    exclusive: bool = True
    active_nodes: int = 0
    vcores: int = 0
    memory_mb: int = 0


@dataclass(frozen=True)
class Partitions:
    """The cluster's partitions, and the labels each queue may use (None: not known)."""

    partitions: Mapping[str, Partition]
    queue_labels: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def usable(self, queue: str) -> list[str]:
        """Labels the queue may use that have active nodes, the default partition first."""
        allowed = self._allowed(queue)
        return [t for t in sorted(self.partitions, key=lambda t: (t != "", t))
                if self.partitions[t].active_nodes > 0 and (allowed is None or t in allowed)]

    def _allowed(self, queue: str) -> frozenset[str] | None:
        labels = self.queue_labels.get(queue)
        if labels is None:
            return None
        if ALL_LABELS in labels:
            return frozenset(self.partitions)
        return labels | {DEFAULT_PARTITION}  # every queue may use the default partition

    def check(self, labels: Sequence[str], queue: str) -> list[str]:
        """The labels asked for ('auto': every usable one), each checked; UsageError naming
        the first that cannot run the job."""
        if list(labels) == ["auto"]:
            usable = self.usable(queue)
            if not usable:
                raise UsageError(f"queue {queue!r} may use no node label with an active node",
                                 hint="see `yarn cluster --list-node-labels` and the queue's "
                                 "accessible-node-labels")
            return usable
        allowed = self._allowed(queue)
        for label in labels:
            shown = label or "the default partition"
            part = self.partitions.get(label)
            if part is None:
                raise UsageError(f"node label {shown!r} does not exist on this cluster",
                                 hint=f"labels: {', '.join(self._names()) or 'none'}")
            if part.active_nodes == 0:
                raise UsageError(f"node label {shown!r} has no active node: the application "
                                 "would wait forever", hint="choose another label")
            if allowed is not None and label not in allowed:
                raise UsageError(f"queue {queue!r} may not use node label {shown!r}",
                                 hint="give --queue of a queue that may, or another label")
        return list(labels)

    def _names(self) -> list[str]:
        return [t or "default" for t in sorted(self.partitions)]


def _list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def parse_labels(doc: Any) -> dict[str, bool]:
    """{label: exclusive} from get-node-labels, in either documented shape."""
    if not isinstance(doc, Mapping):
        raise ClusterError("the RM's node-labels document is not an object")
    out = {}
    for item in _list(doc.get("nodeLabelInfo")):
        if isinstance(item, Mapping) and item.get("name"):
            out[str(item["name"])] = bool(item.get("exclusivity", True))
    for name in _list(doc.get("nodeLabels")):
        if isinstance(name, str) and name:
            out.setdefault(name, True)
    return out


def parse_nodes(doc: Any) -> dict[str, tuple[int, int, int]]:
    """{label: (active nodes, vcores, memory MB)} from the nodes document."""
    nodes = (doc.get("nodes") or {}) if isinstance(doc, Mapping) else {}
    out: dict[str, list[int]] = {}
    for node in _list(nodes.get("node") if isinstance(nodes, Mapping) else None):
        if not isinstance(node, Mapping) or node.get("state") != "RUNNING":
            continue
        labels = _list(node.get("nodeLabels")) or [DEFAULT_PARTITION]
        total = node.get("totalResource") or {}
        for label in labels:
            acc = out.setdefault(str(label), [0, 0, 0])
            acc[0] += 1
            acc[1] += int(total.get("vCores") or 0)
            acc[2] += int(total.get("memory") or 0)
    return {k: (v[0], v[1], v[2]) for k, v in out.items()}


def parse_queues(doc: Any) -> dict[str, frozenset[str]]:
    """{queue name: the labels it may use} from the capacity scheduler's document (leaf and
    parent queues alike); {} for other schedulers."""
    info = ((doc or {}).get("scheduler") or {}).get("schedulerInfo") if isinstance(
        doc, Mapping) else None
    out: dict[str, frozenset[str]] = {}

    def walk(queues: Any) -> None:
        for q in _list((queues or {}).get("queue") if isinstance(queues, Mapping) else None):
            if not isinstance(q, Mapping):
                continue
            if q.get("queueName"):
                out[str(q["queueName"])] = frozenset(str(v) for v in _list(q.get("nodeLabels")))
            walk(q.get("queues"))

    if isinstance(info, Mapping) and info.get("type") == "capacityScheduler":
        walk(info.get("queues"))
    return out


def partitions(labels_doc: Any, nodes_doc: Any, scheduler_doc: Any) -> Partitions:
    exclusive = {DEFAULT_PARTITION: True, **parse_labels(labels_doc)}
    active = parse_nodes(nodes_doc)
    parts = {label: Partition(label, excl, *active.get(label, (0, 0, 0)))
             for label, excl in exclusive.items()}
    return Partitions(parts, parse_queues(scheduler_doc))


def app_partition(expression: str | None) -> str:
    """The partition an app's executors run in, from its node-label expression (a single
    label; none: the default partition)."""
    return (expression or "").strip()


def same_partition(apps: Iterable[Any], label: str) -> list[Any]:
    """The apps whose executors share the label's nodes."""
    return [a for a in apps if app_partition(getattr(a, "node_label", None)) == label]
