"""The Pod Security Standards' checks (k8s.io/pod-security-admission/policy), as pure
functions of a pod spec (and its metadata).

Each check returns None (the pod passes) or ``(title, detail)``, worded as upstream's
``CheckResult``: ``hostPort (container "c" uses hostPort 80)``. ``evaluate(level, pod)``
runs the checks of a level in upstream's order (baseline's sorted by check ID, then
restricted's, each restricted check replacing the baseline check it overrides).

Checks are those of the ``latest`` version; Windows pods, hostProcess, AppArmor and
procMount are not checked (docs/admission.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["LEVELS", "evaluate"]

JSON = dict[str, Any]
Result = tuple[str, str] | None
Check = Callable[[JSON, JSON], Result]

LEVELS = ("privileged", "baseline", "restricted")

_DEFAULT_CAPABILITIES = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
})  # fmt: skip
_SAFE_SYSCTLS = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
})  # fmt: skip
_SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t",
                            "container_engine_t"})
_RESTRICTED_VOLUMES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                                 "persistentVolumeClaim", "projected", "secret"})
_VOLUME_SOURCES = (
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi",
    "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile",
    "vsphereVolume", "quobyte", "azureDisk", "portworxVolume", "photonPersistentDisk",
    "scaleIO", "storageos", "image",
)  # fmt: skip


def _containers(spec: JSON) -> Iterator[JSON]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(key) or ()


def _sc(container: JSON) -> JSON:
    return container.get("securityContext") or {}


def _quoted(names: list[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def _containers_phrase(names: list[str]) -> str:
    return f"{'container' if len(names) == 1 else 'containers'} {_quoted(names)}"


def _with_each(names: list[str], singular: str, plural: str) -> str:
    return f"{_containers_phrase(names)} {singular if len(names) == 1 else plural}"


# ---------------------------------------------------------------- baseline checks

def capabilities_baseline(meta: JSON, spec: JSON) -> Result:
    names: list[str] = []
    caps: set[str] = set()
    for c in _containers(spec):
        bad = [x for x in ((_sc(c).get("capabilities") or {}).get("add") or ())
               if x not in _DEFAULT_CAPABILITIES]
        if bad:
            names.append(c.get("name", ""))
            caps.update(bad)
    if not names:
        return None
    return ("non-default capabilities", f"{_containers_phrase(names)} must not include "
            f"{_quoted(sorted(caps))} in securityContext.capabilities.add")


def host_namespaces(meta: JSON, spec: JSON) -> Result:
    used = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)]
    return ("host namespaces", ", ".join(used)) if used else None


def host_path_volumes(meta: JSON, spec: JSON) -> Result:
    names = [v.get("name", "") for v in spec.get("volumes") or () if "hostPath" in v]
    if not names:
        return None
    return ("hostPath volumes", f"{'volume' if len(names) == 1 else 'volumes'} {_quoted(names)}")


def host_ports(meta: JSON, spec: JSON) -> Result:
    names: list[str] = []
    ports: list[str] = []
    for c in _containers(spec):
        used = [str(p["hostPort"]) for p in c.get("ports") or () if p.get("hostPort")]
        if used:
            names.append(c.get("name", ""))
            ports += used
    if not names:
        return None
    word = "hostPort" if len(ports) == 1 else "hostPorts"
    return ("hostPort", f"{_with_each(names, 'uses', 'use')} {word} {', '.join(ports)}")


def privileged(meta: JSON, spec: JSON) -> Result:
    names = [c.get("name", "") for c in _containers(spec) if _sc(c).get("privileged")]
    if not names:
        return None
    return ("privileged", f"{_containers_phrase(names)} must not set "
            "securityContext.privileged=true")


def _selinux_problems(options: JSON) -> list[str]:
    problems = []
    if options.get("type", "") not in _SELINUX_TYPES:
        problems.append(f'type "{options["type"]}"')
    for key in ("user", "role"):
        if options.get(key):
            problems.append(f'{key} "{options[key]}"')
    return problems


def selinux_options(meta: JSON, spec: JSON) -> Result:
    parts = []
    pod = _selinux_problems((spec.get("securityContext") or {}).get("seLinuxOptions") or {})
    if pod:
        parts.append(f"pod set forbidden securityContext.seLinuxOptions: {', '.join(pod)}")
    names: list[str] = []
    problems: list[str] = []
    for c in _containers(spec):
        found = _selinux_problems(_sc(c).get("seLinuxOptions") or {})
        if found:
            names.append(c.get("name", ""))
            problems += [p for p in found if p not in problems]
    if names:
        parts.append(f"{_containers_phrase(names)} set forbidden "
                     f"securityContext.seLinuxOptions: {', '.join(problems)}")
    return ("seLinuxOptions", "; ".join(parts)) if parts else None


def _seccomp_type(sc: JSON) -> str | None:
    profile = sc.get("seccompProfile")
    return str(profile.get("type")) if isinstance(profile, dict) else None


def seccomp_baseline(meta: JSON, spec: JSON) -> Result:
    parts = []
    if _seccomp_type(spec.get("securityContext") or {}) == "Unconfined":
        parts.append('pod must not set securityContext.seccompProfile.type to "Unconfined"')
    names = [c.get("name", "") for c in _containers(spec) if _seccomp_type(_sc(c)) == "Unconfined"]
    if names:
        parts.append(f"{_containers_phrase(names)} must not set "
                     'securityContext.seccompProfile.type to "Unconfined"')
    return ("seccompProfile", "; ".join(parts)) if parts else None


def sysctls(meta: JSON, spec: JSON) -> Result:
    bad = [str(s.get("name")) for s in (spec.get("securityContext") or {}).get("sysctls") or ()
           if s.get("name") not in _SAFE_SYSCTLS]
    return ("forbidden sysctls", ", ".join(bad)) if bad else None


# -------------------------------------------------------------- restricted checks

def allow_privilege_escalation(meta: JSON, spec: JSON) -> Result:
    names = [c.get("name", "") for c in _containers(spec)
             if _sc(c).get("allowPrivilegeEscalation") is not False]
    if not names:
        return None
    return ("allowPrivilegeEscalation != false", f"{_containers_phrase(names)} must set "
            "securityContext.allowPrivilegeEscalation=false")


def capabilities_restricted(meta: JSON, spec: JSON) -> Result:
    no_drop: list[str] = []
    adders: list[str] = []
    added: set[str] = set()
    for c in _containers(spec):
        caps = _sc(c).get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or ()):
            no_drop.append(c.get("name", ""))
        bad = [x for x in caps.get("add") or () if x != "NET_BIND_SERVICE"]
        if bad:
            adders.append(c.get("name", ""))
            added.update(bad)
    parts = []
    if no_drop:
        parts.append(f'{_containers_phrase(no_drop)} must set '
                     'securityContext.capabilities.drop=["ALL"]')
    if adders:
        parts.append(f"{_containers_phrase(adders)} must not include {_quoted(sorted(added))} "
                     "in securityContext.capabilities.add")
    return ("unrestricted capabilities", "; ".join(parts)) if parts else None


def restricted_volumes(meta: JSON, spec: JSON) -> Result:
    names: list[str] = []
    kinds: list[str] = []
    for v in spec.get("volumes") or ():
        kind = next((k for k in _VOLUME_SOURCES if k in v), None)
        if kind is None:
            kind = next((k for k in v if k != "name" and k not in _RESTRICTED_VOLUMES), None)
        if kind is not None:
            names.append(v.get("name", ""))
            if kind not in kinds:
                kinds.append(kind)
    if not names:
        return None
    if len(names) == 1:
        detail = f'volume "{names[0]}" uses restricted volume type "{kinds[0]}"'
    else:
        word = "type" if len(kinds) == 1 else "types"
        detail = f"volumes {_quoted(names)} use restricted volume {word} {_quoted(kinds)}"
    return ("restricted volume types", detail)


def run_as_non_root(meta: JSON, spec: JSON) -> Result:
    pod = (spec.get("securityContext") or {}).get("runAsNonRoot")
    parts = []
    if pod is False:
        parts.append("pod must not set securityContext.runAsNonRoot=false")
    explicit_false = [c.get("name", "") for c in _containers(spec)
                      if _sc(c).get("runAsNonRoot") is False]
    if explicit_false:
        parts.append(f"{_containers_phrase(explicit_false)} must not set "
                     "securityContext.runAsNonRoot=false")
    if pod is not True:
        unset = [c.get("name", "") for c in _containers(spec) if _sc(c).get("runAsNonRoot") is None]
        if unset:
            parts.append(f"pod or {_containers_phrase(unset)} must set "
                         "securityContext.runAsNonRoot=true")
    return ("runAsNonRoot != true", "; ".join(parts)) if parts else None


def run_as_user(meta: JSON, spec: JSON) -> Result:
    parts = []
    if (spec.get("securityContext") or {}).get("runAsUser") == 0:
        parts.append("pod must not set runAsUser=0")
    names = [c.get("name", "") for c in _containers(spec) if _sc(c).get("runAsUser") == 0]
    if names:
        parts.append(f"{_containers_phrase(names)} must not set runAsUser=0")
    return ("runAsUser=0", "; ".join(parts)) if parts else None


def seccomp_restricted(meta: JSON, spec: JSON) -> Result:
    pod = _seccomp_type(spec.get("securityContext") or {})
    parts = []
    if pod == "Unconfined":
        parts.append('pod must not set securityContext.seccompProfile.type to "Unconfined"')
    bad = [c.get("name", "") for c in _containers(spec) if _seccomp_type(_sc(c)) == "Unconfined"]
    if bad:
        parts.append(f"{_containers_phrase(bad)} must not set "
                     'securityContext.seccompProfile.type to "Unconfined"')
    if pod is None:
        unset = [c.get("name", "") for c in _containers(spec) if _seccomp_type(_sc(c)) is None]
        if unset:
            parts.append(f"pod or {_containers_phrase(unset)} must set securityContext."
                         'seccompProfile.type to "RuntimeDefault" or "Localhost"')
    return ("seccompProfile", "; ".join(parts)) if parts else None


# (check ID, check); restricted overrides the baseline check of the same slot
_BASELINE: tuple[tuple[str, Check], ...] = (
    ("capabilities_baseline", capabilities_baseline),
    ("hostNamespaces", host_namespaces),
    ("hostPathVolumes", host_path_volumes),
    ("hostPorts", host_ports),
    ("privileged", privileged),
    ("seLinuxOptions", selinux_options),
    ("seccompProfile_baseline", seccomp_baseline),
    ("sysctls", sysctls),
)
_RESTRICTED: tuple[tuple[str, Check], ...] = (
    ("allowPrivilegeEscalation", allow_privilege_escalation),
    ("capabilities_restricted", capabilities_restricted),
    ("restrictedVolumes", restricted_volumes),
    ("runAsNonRoot", run_as_non_root),
    ("runAsUser", run_as_user),
    ("seccompProfile_restricted", seccomp_restricted),
)
_OVERRIDDEN = frozenset({"capabilities_baseline", "hostPathVolumes", "seccompProfile_baseline"})


def evaluate(level: str, meta: JSON, spec: JSON) -> list[tuple[str, str]]:
    """The failed checks of ``level`` for a pod (metadata, spec), in upstream's order."""
    if level == "baseline":
        checks = _BASELINE
    elif level == "restricted":
        checks = tuple(c for c in _BASELINE if c[0] not in _OVERRIDDEN) + _RESTRICTED
    else:
        return []
    return [r for _, check in checks if (r := check(meta, spec)) is not None]
