"""The etcd3 storage: Kubernetes storage semantics straight over etcd (the uncached
path). ``Etcd3Store`` implements ``storage.interfaces.Interface``."""

from __future__ import annotations

from storage.etcd3.store import Etcd3Store, check_preconditions
from storage.etcd3.watcher import Etcd3Watcher

__all__ = ["Etcd3Store", "Etcd3Watcher", "check_preconditions"]
