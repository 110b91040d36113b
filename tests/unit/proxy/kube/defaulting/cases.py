"""What the defaulting tables share: a case runs the entry point on a copy of what a
client sends and compares the whole result with what kube-apiserver 1.37 returns."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from proxy.kube.defaulting import default_object

JSON = dict[str, Any]


@dataclass(frozen=True)
class Case:
    """``sent`` (as a client writes it) defaulted as ``group/version`` ``kind`` must be
    ``want``; ``source`` names the upstream function that decides it."""

    id: str
    group: str
    version: str
    kind: str
    sent: JSON
    want: JSON
    source: str

    def run(self) -> JSON:
        return default_object(self.group, self.version, self.kind, copy.deepcopy(self.sent))


# what SetDefaults_PodSpec and SetDefaults_Container give a one-container spec
CONTAINER_DEFAULTS: JSON = {
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
}
POD_SPEC_DEFAULTS: JSON = {
    "dnsPolicy": "ClusterFirst",
    "restartPolicy": "Always",
    "securityContext": {},
    "terminationGracePeriodSeconds": 30,
    "schedulerName": "default-scheduler",
}


def template(image: str = "nginx", **labels: str) -> JSON:
    """A pod template as ``kubectl create`` sends it."""
    return {
        "metadata": {"labels": dict(labels or {"app": "web"})},
        "spec": {"containers": [{"name": "c", "image": image}]},
    }


def defaulted_template(image: str = "nginx", pull: str = "Always", **labels: str) -> JSON:
    """``template(image)`` as kube returns it: the PodSpec defaults, never the Pod's."""
    return {
        "metadata": {"labels": dict(labels or {"app": "web"})},
        "spec": {
            "containers": [
                {"name": "c", "image": image, "imagePullPolicy": pull, **CONTAINER_DEFAULTS}
            ],
            **POD_SPEC_DEFAULTS,
        },
    }
