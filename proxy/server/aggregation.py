"""What the generic server asks of API aggregation, when it is on (upstream's
kube-aggregator is the outermost delegate; here its ``Aggregator``,
``proxy.aggregator.server``, is handed to the server by the composition root): the
remote groups merged into discovery and the OpenAPI index, and whether the local
APIServices are registered yet (a readyz check). The server library never imports
``proxy.aggregator``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from aiohttp import web

from proxy.openapi.cached_document import CachedDocument

__all__ = ["AGGREGATION", "Aggregation"]

JSON = dict[str, Any]


class Aggregation(Protocol):
    def aggregated_apis(self, local: CachedDocument) -> CachedDocument:
        """The aggregated ``/apis`` (apidiscovery v2) with the remote groups."""
        ...

    def legacy_apis(self) -> JSON:
        """The ``/apis`` APIGroupList: local and remote groups by APIService priority."""
        ...

    def api_group(self, group: str) -> JSON | None:
        """``/apis/<group>`` of a remote group; None for a local one."""
        ...

    def openapi_index(
        self, local: CachedDocument, request_headers: Mapping[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        """``/openapi/v3`` with the remote group-versions: (status, headers, body)."""
        ...

    def autoregistered(self) -> bool:
        """The local group-versions' APIServices are stored."""
        ...


AGGREGATION = web.AppKey("watchcache_aggregation", Aggregation)
