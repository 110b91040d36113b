"""Shared informers and work queues: a cut-down client-go for the server's own
controllers (and the lab's simulated ones, over HTTP).

    ListerWatcher  ─▶ Reflector ─▶ SharedIndexInformer (Indexer + event handlers)
    (storage or HTTP)                    │ handlers only enqueue keys
                                         ▼
                               WorkQueue ─▶ run_workers ─▶ reconcile(key)

See docs/architecture.md, "Shared informers and controllers", for the contract, the
resume rules and what differs from client-go.
"""

from cacher.clock import Clock, FakeClock, RealClock
from proxy.informer.backoff import Backoff
from proxy.informer.controller import process_next_work_item, run_workers
from proxy.informer.indexer import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    deletion_handling_key,
    meta_namespace_key,
    namespace_index,
)
from proxy.informer.lister_watcher import (
    ListerWatcher,
    ListResult,
    StorageListerWatcher,
    WatchError,
    WatchEvent,
    WatchStream,
)
from proxy.informer.rate_limiter import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
)
from proxy.informer.reflector import Reflector
from proxy.informer.shared_informer import (
    EventHandlers,
    NotServed,
    SharedIndexInformer,
    SharedInformerFactory,
    wait_for_cache_sync,
)
from proxy.informer.workqueue import ShutDown, WorkQueue

__all__ = [
    "NAMESPACE_INDEX",
    "Backoff",
    "BucketRateLimiter",
    "Clock",
    "DeletedFinalStateUnknown",
    "EventHandlers",
    "FakeClock",
    "Indexer",
    "ItemExponentialFailureRateLimiter",
    "ListResult",
    "ListerWatcher",
    "MaxOfRateLimiter",
    "NotServed",
    "RealClock",
    "Reflector",
    "SharedIndexInformer",
    "SharedInformerFactory",
    "ShutDown",
    "StorageListerWatcher",
    "WatchError",
    "WatchEvent",
    "WatchStream",
    "WorkQueue",
    "default_controller_rate_limiter",
    "deletion_handling_key",
    "meta_namespace_key",
    "namespace_index",
    "process_next_work_item",
    "run_workers",
    "wait_for_cache_sync",
]
