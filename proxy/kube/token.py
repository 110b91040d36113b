"""``serviceaccounts/NAME/token``'s REST storage (upstream's ``pkg/registry/core/
serviceaccount/storage/token.go``): ``kubectl create token NAME`` gets a bound
service-account token, from plain objects and the request's ``Context``.

- ``spec.expirationSeconds``: default 3600, at least 600 and at most 2^32 (422 on
  ``TokenRequest.authentication.k8s.io``), capped by
  ``--service-account-max-token-expiration``;
- ``spec.boundObjectRef``: a Pod or Secret of the namespace (400 for another kind, 404
  when absent, 409 when its uid is not the one named);
- ``spec.audiences``: default the server's ``--api-audiences``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from proxy import apierrors
from proxy.apierrors import FieldError
from proxy.authentication.service_account import BoundObject, TokenGenerator
from proxy.kube.reviews import spec_of
from proxy.registry.resources import ResourceInfo
from proxy.registry.rest import Context, ValidateObjectFunc
from storage.interfaces import JSONObject

__all__ = ["TOKEN_REQUEST", "ObjectReader", "TokenREST"]

JSON = dict[str, Any]
MIN_EXPIRATION = 600
MAX_EXPIRATION = 1 << 32
DEFAULT_EXPIRATION = 3600

TOKEN_REQUEST = ResourceInfo(group="authentication.k8s.io", version="v1", kind="TokenRequest",
                             plural="token", namespaced=True, verbs=(),
                             has_storage=False)  # fmt: skip

# (plural of a core resource, namespace, name) -> the object; a 404 Status when absent
ObjectReader = Callable[[str, str, str], Awaitable[JSON]]


@dataclass(frozen=True)
class TokenREST:
    """The ``token`` subresource of service accounts."""

    generator: TokenGenerator
    audiences: tuple[str, ...]
    max_expiration: float  # 0: no cap
    read: ObjectReader

    @property
    def kind(self) -> ResourceInfo:
        return TOKEN_REQUEST

    async def create_named(
        self, ctx: Context, name: str, obj: JSONObject, create_validation: ValidateObjectFunc
    ) -> JSONObject:
        namespace = ctx.namespace
        spec = spec_of(obj)
        seconds = self._expiration(spec, name)
        sa = await self.read("serviceaccounts", namespace, name)
        ref = spec.get("boundObjectRef")
        bound = await self._bound(ref, namespace) if isinstance(ref, dict) else None
        audiences = [str(a) for a in spec.get("audiences") or ()] or list(self.audiences)
        token, exp = self.generator.token(
            namespace, name, str(sa["metadata"].get("uid", "")), audiences, seconds, bound
        )
        expires = dt.datetime.fromtimestamp(exp, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        out_spec: JSON = {
            "audiences": audiences,
            "expirationSeconds": seconds,
            "boundObjectRef": ref if bound is not None else None,
        }
        return {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
            "spec": out_spec,
            "status": {"token": token, "expirationTimestamp": expires},
        }

    def _expiration(self, spec: JSON, name: str) -> int:
        raw = spec.get("expirationSeconds")
        seconds = DEFAULT_EXPIRATION if raw is None else raw
        if not isinstance(seconds, int) or isinstance(seconds, bool):
            raise apierrors.bad_request("spec.expirationSeconds must be an integer")
        problem = ""
        if seconds < MIN_EXPIRATION:
            problem = "may not specify a duration less than 10 minutes"
        elif seconds > MAX_EXPIRATION:
            problem = "may not specify a duration larger than 2^32 seconds"
        if problem:
            error = FieldError.invalid("spec.expirationSeconds", seconds, problem)
            raise apierrors.invalid("TokenRequest.authentication.k8s.io", name, [error])
        if self.max_expiration and seconds > self.max_expiration:
            seconds = int(self.max_expiration)
        return seconds

    async def _bound(self, ref: JSON, namespace: str) -> BoundObject | None:
        if not ref.get("name"):
            return None
        kind = str(ref.get("kind", ""))
        plural = {"Pod": "pods", "Secret": "secrets"}.get(kind)
        if plural is None:
            raise apierrors.bad_request(f"cannot bind token to object of type {kind}")
        target = await self.read(plural, namespace, str(ref["name"]))
        uid = str(target["metadata"].get("uid", ""))
        if ref.get("uid") and ref["uid"] != uid:
            raise apierrors.conflict(
                plural,
                str(ref["name"]),
                f"the UID in the bound object reference ({ref['uid']}) "
                f"does not match the UID in record. The object might "
                f"have been deleted and then recreated",
            )
        return BoundObject(kind, str(ref["name"]), uid)
