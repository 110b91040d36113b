"""What a Service write allocates, after kube-apiserver's
``pkg/registry/core/service/storage/alloc.go`` and the field normalisation of its
``storage.go`` (``normalizeClusterIPs``, ``patchAllocatedValues``), on a single-stack
cluster: one ``--service-cluster-ip-range``, so one IP family.

- ``ipFamilyPolicy`` defaults to SingleStack (RequireDualStack for a headless Service
  without selector), from the old object on update; ``ipFamilies`` are inferred from the
  ClusterIPs, else the cluster's family; a family or dual-stack the cluster lacks is 422
  with upstream's words.
- ``clusterIP``/``clusterIPs``: a free address of the range unless given (then it must
  be free: ``failed to allocate IP X: provided IP is already allocated``) or ``None``
  (headless); ExternalName Services get none. An update from ExternalName allocates, one
  to ExternalName releases (once the write succeeded), and a deletion releases.

Every allocation returns a :class:`Transaction`: ``revert`` undoes what a failed write
allocated, ``commit`` releases what a successful one gave up.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from proxy import apierrors
from proxy.apimachinery.validation import field as fielderr
from proxy.apimachinery.validation import go_values
from proxy.apimachinery.validation.field import ErrorList
from proxy.kube.service import node_ports
from proxy.kube.service.ipallocator import AllocationError, IPAllocator, family_of
from proxy.kube.service.portallocator import NodePortAllocator
from storage.interfaces import JSONObject

__all__ = ["Allocators", "Transaction", "normalize_cluster_ips", "patch_allocated_values"]

log = logging.getLogger("watchcache.proxy")

JSON = dict[str, Any]
NONE = "None"
_OTHER = {"IPv4": "IPv6", "IPv6": "IPv4"}


@dataclass
class Transaction:
    """What to do once the write is known: ``commit`` (it succeeded) or ``revert``."""

    on_commit: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    on_revert: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def commit(self) -> None:
        await _run_all(self.on_commit)

    async def revert(self) -> None:
        await _run_all(self.on_revert)


async def _run_all(steps: list[Callable[[], Awaitable[None]]]) -> None:
    for step in steps:
        try:
            await step()
        except Exception:  # upstream logs a failed release and goes on
            log.exception("service allocation cleanup failed")


def _spec(svc: JSONObject) -> JSON:
    spec = svc.get("spec")
    if not isinstance(spec, dict):
        spec = svc["spec"] = {}
    return spec


def _ips(spec: JSON) -> list[str]:
    ips = spec.get("clusterIPs")
    return [str(ip) for ip in ips] if isinstance(ips, list) else []


def normalize_cluster_ips(new: JSONObject, old: JSONObject | None) -> None:
    """``normalizeClusterIPs``: keep ``clusterIP`` and ``clusterIPs`` in step, as an old
    client (singular only) or a new one (both) meant them."""
    spec = _spec(new)
    ip = str(spec.get("clusterIP") or "")
    if old is None:
        if ip and not _ips(spec):
            spec["clusterIPs"] = [ip]
        return
    old_spec = _spec(old)
    old_ip, old_ips = str(old_spec.get("clusterIP") or ""), _ips(old_spec)
    if old_ips and not _ips(spec) and old_ip == ip:
        spec["clusterIPs"] = list(old_ips)
    if old_ip != ip:
        same = _ips(spec) == old_ips
        if old_ip and not ip:
            if same:
                spec.pop("clusterIPs", None)
        elif same:
            spec["clusterIPs"] = [ip]


def patch_allocated_values(new: JSONObject, old: JSONObject) -> None:
    """``patchAllocatedValues`` (ClusterIPs): a client that resubmits what it created
    keeps what was allocated for it."""
    spec, old_spec = _spec(new), _spec(old)
    if _needs_cluster_ip(old_spec) and _needs_cluster_ip(spec):
        if not spec.get("clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
        if not _ips(spec) and _ips(old_spec):
            spec["clusterIPs"] = _ips(old_spec)
    node_ports.patch_node_ports(new, old)


def _needs_cluster_ip(spec: JSON) -> bool:
    return spec.get("type") != "ExternalName"


def _headless(spec: JSON) -> bool:
    ips = _ips(spec)
    return bool(ips) and ips[0] == NONE


def _invalid(svc: JSONObject, errs: ErrorList) -> apierrors.StatusError:
    name = str((svc.get("metadata") or {}).get("name") or "")
    return fielderr.to_status("Service", name, errs)


@dataclass
class Allocators:
    """The cluster's Service allocators (one IP family: ``ip``; ``ports``: NodePorts)."""

    ip: IPAllocator
    ports: NodePortAllocator | None = None

    # ------------------------------------------------------------------ families

    def init_ip_family_fields(self, new: JSONObject, old: JSONObject | None) -> None:
        """``initIPFamilyFields`` for a single-stack cluster (422 on what it lacks)."""
        spec = _spec(new)
        if spec.get("type") == "ExternalName":
            return
        if spec.get("ipFamilyPolicy") is None:
            old_policy = _spec(old).get("ipFamilyPolicy") if old is not None else None
            if old_policy is not None:
                spec["ipFamilyPolicy"] = old_policy
            elif spec.get("clusterIP") == NONE and not spec.get("selector"):
                spec["ipFamilyPolicy"] = "RequireDualStack"
            else:
                spec["ipFamilyPolicy"] = "SingleStack"
        policy = spec["ipFamilyPolicy"]
        families = [str(f) for f in spec.get("ipFamilies") or []]
        errs = self._policy_errors(policy, _ips(spec), families)
        errs += self._infer_families(spec, families)
        if errs:
            raise _invalid(new, errs)
        if spec.get("clusterIP") == NONE and not spec.get("selector"):
            families = families or [self.ip.family]
            if len(families) < 2 and policy != "SingleStack":
                families.append(_OTHER[families[0]])
            spec["ipFamilies"] = families
            return
        if policy == "RequireDualStack":
            words = "this cluster is not configured for dual-stack services"
            errs.append(fielderr.invalid("spec.ipFamilyPolicy", policy, words))
        for i, family in enumerate(families):
            if family != self.ip.family:
                errs.append(fielderr.invalid(
                    fielderr.index("spec.ipFamilies", i), family, "not configured on this cluster"
                ))  # fmt: skip
        if errs:
            raise _invalid(new, errs)
        spec["ipFamilies"] = families or [self.ip.family]

    @staticmethod
    def _policy_errors(policy: object, ips: list[str], families: list[str]) -> ErrorList:
        if policy != "SingleStack":
            return []
        errs: ErrorList = []
        words = "must be 'RequireDualStack' or 'PreferDualStack' when multiple {} are specified"
        for count, what in ((len(ips), "cluster IPs"), (len(families), "IP families")):
            if count == 2:
                errs.append(fielderr.invalid("spec.ipFamilyPolicy", policy, words.format(what)))
        return errs

    def _infer_families(self, spec: JSON, families: list[str]) -> ErrorList:
        """ipFamilies inferred from the ClusterIPs (``families`` is extended in place)."""
        errs: ErrorList = []
        ips = _ips(spec)
        for i, ip in enumerate(ips):
            if ip == NONE:
                break
            try:
                family = family_of(ip)
            except ValueError:
                break  # not an IP: validation says so
            if i >= len(families):
                if family != self.ip.family:
                    errs.append(fielderr.invalid(
                        fielderr.index("spec.clusterIPs", i), go_values.string_slice(ips),
                        f"{family} is not configured on this cluster",
                    ))  # fmt: skip
                else:
                    families.append(family)
        return errs

    # -------------------------------------------------------------- ClusterIPs

    async def allocate_create(self, svc: JSONObject, *, dry_run: bool) -> Transaction:
        """``allocateCreate`` (ClusterIPs)."""
        self.init_ip_family_fields(svc, None)
        txn = await self._allocate(svc, dry_run=dry_run)
        return await self._with_node_ports(txn, svc, None, dry_run=dry_run)

    async def allocate_update(
        self, new: JSONObject, old: JSONObject, *, dry_run: bool
    ) -> Transaction:
        """``allocateUpdate`` (ClusterIPs): from ExternalName, allocate; to it, release
        the old addresses once the write succeeded."""
        self.init_ip_family_fields(new, old)
        txn = await self._update_cluster_ips(new, old, dry_run=dry_run)
        return await self._with_node_ports(txn, new, old, dry_run=dry_run)

    async def _update_cluster_ips(
        self, new: JSONObject, old: JSONObject, *, dry_run: bool
    ) -> Transaction:
        spec, old_spec = _spec(new), _spec(old)
        if old_spec.get("type") == "ExternalName" and spec.get("type") != "ExternalName":
            return await self._allocate(new, dry_run=dry_run)
        if _headless(old_spec):
            return Transaction()
        if old_spec.get("type") != "ExternalName" and spec.get("type") == "ExternalName":
            txn = Transaction()
            if not dry_run:
                txn.on_commit += [self._releaser(ip) for ip in _ips(old_spec) if ip != NONE]
            return txn
        return Transaction()

    async def _with_node_ports(
        self, txn: Transaction, svc: JSONObject, old: JSONObject | None, *, dry_run: bool
    ) -> Transaction:
        """``txnAllocNodePorts`` / ``txnUpdateNodePorts`` added to ``txn`` (whose
        allocations are given back if the ports fail)."""
        if self.ports is None:
            return txn
        meta = svc.get("metadata") or {}
        op = self.ports.operation(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        txn.on_commit.append(op.finish)
        txn.on_revert.append(op.finish)
        try:
            await node_ports.allocate(op, svc, old)
        except BaseException:
            await txn.revert()
            raise
        if dry_run:
            await op.finish()
        return txn

    async def release_allocated(self, svc: JSONObject) -> None:
        """``releaseAllocatedResources`` (ClusterIPs) after a deletion."""
        spec = _spec(svc)
        if spec.get("type") == "ExternalName":
            return
        await _run_all([self._releaser(ip) for ip in _ips(spec) if ip != NONE])

    def _releaser(self, ip: str) -> Callable[[], Awaitable[None]]:
        async def release() -> None:
            if _is_ip(ip) and self.ip.contains(ip):
                await self.ip.release(ip)

        return release

    async def _allocate(self, svc: JSONObject, *, dry_run: bool) -> Transaction:
        """``allocClusterIPs``: one address per family (here: the one family)."""
        spec = _spec(svc)
        txn = Transaction()
        if spec.get("type") == "ExternalName" or _headless(spec):
            return txn
        ips = _ips(spec)
        wanted = ips[0] if ips else ""
        if wanted and not _is_ip(wanted):
            return txn  # validation reports it (upstream's pre-validation does the same)
        try:
            if wanted:
                await self.ip.allocate_service(svc, wanted, dry_run=dry_run)
                allocated = wanted
            else:
                allocated = await self.ip.allocate_next_service(svc, dry_run=dry_run)
        except AllocationError as e:
            if not wanted:
                raise apierrors.internal_error(f"failed to allocate a serviceIP: {e}") from None
            raise _invalid(svc, [fielderr.invalid(
                "spec.clusterIPs", go_values.string_slice(ips),
                f"failed to allocate IP {wanted}: {e}",
            )]) from None  # fmt: skip
        spec["clusterIPs"] = [allocated, *ips[1:]]
        spec["clusterIP"] = allocated
        if not dry_run:
            txn.on_revert.append(self._releaser(allocated))
        return txn


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True
