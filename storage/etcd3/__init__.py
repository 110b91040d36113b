"""The etcd3 storage: Kubernetes storage semantics straight over etcd (the uncached
path). ``Etcd3Store`` implements ``storage.interfaces.Interface``."""

from __future__ import annotations

from storage.etcd3.compact import Compactor
from storage.etcd3.store import Etcd3Store
from storage.etcd3.watcher import Etcd3Watcher

__all__ = ["Compactor", "Etcd3Store", "Etcd3Watcher"]
