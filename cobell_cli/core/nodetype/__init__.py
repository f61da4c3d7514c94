"""Node types (YARN node labels / partitions, or machine types): where a job's executors go.

speeds.py learns how fast each type serves each resource from the jobs that ran on several;
factors.py models one job's runtime per type (one scale-out curve, a factor per type, a
profile prior for a type it never ran on); labels.py plans each label with cobell's planner
and picks the cheapest (label, scale-out) that meets the target, each label's price
multiplying executor-seconds.
Pure: no I/O.
"""

from cobell_cli.core.nodetype.factors import DEFAULT_TYPE, NodeTypeModel, node_type
from cobell_cli.core.nodetype.labels import (
    LabelOption,
    base_history,
    cheapest_label,
    plan_labels,
)
from cobell_cli.core.nodetype.speeds import TIME_CLASSES, TypeFactor, TypeSpeeds, time_shares

__all__ = [
    "DEFAULT_TYPE",
    "TIME_CLASSES",
    "LabelOption",
    "NodeTypeModel",
    "TypeFactor",
    "TypeSpeeds",
    "base_history",
    "cheapest_label",
    "node_type",
    "plan_labels",
    "time_shares",
]
