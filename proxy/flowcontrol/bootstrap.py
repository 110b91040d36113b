"""The bootstrap configuration objects (upstream's ``apis/flowcontrol/bootstrap``): the
mandatory PriorityLevelConfigurations ``exempt`` and ``catch-all`` with FlowSchemas
``exempt``, ``probes`` and ``catch-all``, and the suggested ones (system, node-high,
leader-election, workload-high, workload-low, global-default and their FlowSchemas).
Each carries ``apf.kubernetes.io/autoupdate-spec: "true"``.

Only specs live here; ``config_producer.ensure_bootstrap_configuration`` writes them.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AUTOUPDATE_ANNOTATION",
    "MANDATORY_FLOW_SCHEMAS",
    "MANDATORY_PRIORITY_LEVELS",
    "SUGGESTED_FLOW_SCHEMAS",
    "SUGGESTED_PRIORITY_LEVELS",
]

JSON = dict[str, Any]
AUTOUPDATE_ANNOTATION = "apf.kubernetes.io/autoupdate-spec"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"


def _queued(shares: int, lendable: int, queues: int, hand: int) -> JSON:
    return {
        "type": "Limited",
        "limited": {
            "nominalConcurrencyShares": shares,
            "lendablePercent": lendable,
            "limitResponse": {
                "type": "Queue",
                "queuing": {"queues": queues, "handSize": hand, "queueLengthLimit": 50},
            },
        },
    }


def _group(name: str) -> JSON:
    return {"kind": "Group", "group": {"name": name}}


def _user(name: str) -> JSON:
    return {"kind": "User", "user": {"name": name}}


def _sa(namespace: str, name: str) -> JSON:
    return {"kind": "ServiceAccount", "serviceAccount": {"namespace": namespace, "name": name}}


def _everything(*subjects: JSON) -> list[JSON]:
    return [
        {
            "subjects": list(subjects),
            "resourceRules": [
                {
                    "verbs": ["*"],
                    "apiGroups": ["*"],
                    "resources": ["*"],
                    "clusterScope": True,
                    "namespaces": ["*"],
                }
            ],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        }
    ]


def _res(verbs: list[str], group: str, resources: list[str], cluster: bool = False) -> JSON:
    rule: JSON = {"verbs": verbs, "apiGroups": [group], "resources": resources}
    if cluster:
        rule["clusterScope"] = True
    rule["namespaces"] = ["*"]
    return rule


def _fs(level: str, precedence: int, rules: list[JSON], method: str | None = "ByUser") -> JSON:
    spec: JSON = {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": precedence}
    if method:
        spec["distinguisherMethod"] = {"type": method}
    spec["rules"] = rules
    return spec


MANDATORY_PRIORITY_LEVELS: dict[str, JSON] = {
    "exempt": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}},
    "catch-all": {
        "type": "Limited",
        "limited": {
            "nominalConcurrencyShares": 5,
            "lendablePercent": 0,
            "limitResponse": {"type": "Reject"},
        },
    },
}

SUGGESTED_PRIORITY_LEVELS: dict[str, JSON] = {
    "system": _queued(30, 33, 64, 6),
    "node-high": _queued(40, 25, 64, 6),
    "leader-election": _queued(10, 0, 16, 4),
    "workload-high": _queued(40, 50, 128, 6),
    "workload-low": _queued(100, 90, 128, 6),
    "global-default": _queued(20, 50, 128, 6),
}

_LEASES = _res(["get", "create", "update"], "coordination.k8s.io", ["leases"])

MANDATORY_FLOW_SCHEMAS: dict[str, JSON] = {
    "exempt": _fs("exempt", 1, _everything(_group("system:masters")), method=None),
    "probes": _fs(
        "exempt",
        2,
        [
            {
                "subjects": [_group(UNAUTHENTICATED), _group(AUTHENTICATED)],
                "nonResourceRules": [
                    {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}
                ],
            }
        ],
        method=None,
    ),
    "catch-all": _fs(
        "catch-all", 10000, _everything(_group(UNAUTHENTICATED), _group(AUTHENTICATED))
    ),
}

SUGGESTED_FLOW_SCHEMAS: dict[str, JSON] = {
    "system-nodes": _fs("system", 500, _everything(_group("system:nodes"))),
    "system-node-high": _fs(
        "node-high",
        400,
        [
            {
                "subjects": [_group("system:nodes")],
                "resourceRules": [
                    _res(["*"], "", ["nodes", "nodes/status"], cluster=True),
                    _res(["*"], "coordination.k8s.io", ["leases"]),
                ],
            }
        ],
    ),
    "system-leader-election": _fs(
        "leader-election",
        100,
        [
            {
                "subjects": [
                    _user("system:kube-controller-manager"),
                    _user("system:kube-scheduler"),
                    _sa("kube-system", "*"),
                ],
                "resourceRules": [_LEASES],
            }
        ],
    ),
    "workload-leader-election": _fs(
        "leader-election",
        200,
        [
            {
                "subjects": [_sa("kube-system", "*")],
                "resourceRules": [
                    _res(["get", "create", "update"], "", ["endpoints", "configmaps"]),
                    _LEASES,
                ],
            }
        ],
    ),
    "endpoint-controller": _fs(
        "workload-high",
        150,
        [
            {
                "subjects": [
                    _user("system:kube-controller-manager"),
                    _sa("kube-system", "endpoint-controller"),
                    _sa("kube-system", "endpointslicemirroring-controller"),
                ],
                "resourceRules": [_res(["get", "create", "update"], "", ["endpoints"])],
            }
        ],
    ),
    "kube-controller-manager": _fs(
        "workload-high", 800, _everything(_user("system:kube-controller-manager")), "ByNamespace"
    ),
    "kube-scheduler": _fs(
        "workload-high", 800, _everything(_user("system:kube-scheduler")), "ByNamespace"
    ),
    "kube-system-service-accounts": _fs(
        "workload-high", 900, _everything(_sa("kube-system", "*")), "ByNamespace"
    ),
    "service-accounts": _fs("workload-low", 9000, _everything(_group("system:serviceaccounts"))),
    "global-default": _fs(
        "global-default", 9900, _everything(_group(UNAUTHENTICATED), _group(AUTHENTICATED))
    ),
}
