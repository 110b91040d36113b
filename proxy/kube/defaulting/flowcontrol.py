"""The flowcontrol.apiserver.k8s.io group's defaults
(``pkg/apis/flowcontrol/v1/defaults.go``)."""

from __future__ import annotations

from collections.abc import Callable

from proxy.kube.defaulting.fields import JSON, child, default_nil, default_zero, member

__all__ = ["DEFAULTERS"]


def flow_schema(obj: JSON) -> None:
    """``SetDefaults_FlowSchemaSpec``: matchingPrecedence 1000."""
    if (spec := child(obj, "spec")) is not None:
        default_zero(spec, "matchingPrecedence", 1000)


def priority_level_configuration(obj: JSON) -> None:
    """``SetDefaults_LimitedPriorityLevelConfiguration`` (30 shares, none lendable),
    ``SetDefaults_QueuingConfiguration`` (64 queues, hand size 8, 50 long) and
    ``SetDefaults_ExemptPriorityLevelConfiguration`` (0 shares, none lendable)."""
    spec = member(obj, "spec")
    if spec is None:
        return
    if (limited := member(spec, "limited")) is not None:
        default_nil(limited, "nominalConcurrencyShares", 30)
        default_nil(limited, "lendablePercent", 0)
        response = member(limited, "limitResponse")
        queuing = member(response, "queuing") if response is not None else None
        if queuing is not None:
            default_zero(queuing, "handSize", 8)
            default_zero(queuing, "queues", 64)
            default_zero(queuing, "queueLengthLimit", 50)
    if (exempt := member(spec, "exempt")) is not None:
        default_nil(exempt, "nominalConcurrencyShares", 0)
        default_nil(exempt, "lendablePercent", 0)


DEFAULTERS: dict[str, Callable[[JSON], None]] = {
    "FlowSchema": flow_schema,
    "PriorityLevelConfiguration": priority_level_configuration,
}
