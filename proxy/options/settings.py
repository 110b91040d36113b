"""Server settings: kube-apiserver-style flags and the same settings as YAML.

Precedence: built-in defaults < ``--config`` YAML file < flags given on the command
line. YAML keys are the flag names without the leading dashes (``etcd-servers``);
underscores are accepted too. ``etcd-servers`` may be a comma-separated string or a
list, ``feature-gates`` a string or a mapping. The watch cache's extra field indexes
are YAML only: ``watch-cache-indexes: {configmaps: [metadata.namespace]}`` (or
``watchCache: {indexes: ...}``).
"""

from __future__ import annotations

import argparse
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

__all__ = ["ConfigError", "Settings", "build_parser", "load_settings", "resolve_ports"]


class ConfigError(ValueError):
    """A bad flag value or configuration file."""


def _parse_bool(value: str | bool) -> bool:
    if isinstance(value, bool):
        return value
    low = value.strip().lower()
    if low in ("1", "t", "true", "yes", "on"):
        return True
    if low in ("0", "f", "false", "no", "off"):
        return False
    raise ConfigError(f"invalid boolean value {value!r}")


def _parse_duration(value: str | float | int) -> float:
    """Seconds from ``10``, ``10s``, ``1.5s``, ``500ms``, ``2m`` (Go duration subset)."""
    if isinstance(value, int | float):
        return float(value)
    text = value.strip()
    for suffix, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if text.endswith(suffix) and text[: -len(suffix)].replace(".", "", 1).isdigit():
            return float(text[: -len(suffix)]) * scale
    try:
        return float(text)
    except ValueError:
        raise ConfigError(f"invalid duration {value!r}") from None


def _parse_feature_gates(value: str | Mapping[str, Any]) -> Mapping[str, bool]:
    """``A=true,B=false`` (flag) or a YAML mapping -> {gate: enabled}."""
    if isinstance(value, Mapping):
        return {str(k): _parse_bool(v) for k, v in value.items()}
    gates: dict[str, bool] = {}
    for item in value.split(","):
        if not item.strip():
            continue
        name, sep, enabled = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"invalid feature gate {item!r} (want Name=true|false)")
        gates[name.strip()] = _parse_bool(enabled)
    return gates


def _parse_indexes(value: Any) -> Mapping[str, tuple[str, ...]]:
    """``{configmaps: [metadata.namespace]}``: extra watch-cache field indexes (YAML)."""
    if not isinstance(value, Mapping):
        raise ConfigError("watch-cache-indexes must map resources to lists of fields")
    out: dict[str, tuple[str, ...]] = {}
    for resource, fields_ in value.items():
        items = [fields_] if isinstance(fields_, str) else list(fields_ or [])
        out[str(resource)] = tuple(str(f) for f in items)
    return out


def _parse_port(value: str | int | None) -> int | None:
    if value is None or value == "":
        return None
    port = int(value)
    if not 0 <= port <= 65535:
        raise ConfigError(f"port {port} out of range 0-65535")
    return port


def _parse_port_range(value: str) -> str:
    """``a-b`` with 0 < a <= b <= 65535 (``net.ParsePortRange``), kept as given."""
    low, _, high = str(value).strip().partition("-")
    try:
        first, last = int(low), int(high or low)
    except ValueError:
        raise ConfigError(f"invalid port range {value!r}") from None
    if not 0 < first <= last <= 65535:
        raise ConfigError(f"invalid port range {value!r}")
    return str(value).strip()


def _parse_servers(value: str | Sequence[str]) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(s.strip() for s in items if s and s.strip())


def _parse_admission_plugins(value: str | Sequence[str], which: str) -> tuple[str, ...]:
    from proxy.admission.chain import ORDERED_PLUGINS  # (the admission package's table)

    names = _parse_servers(value)
    for name in names:
        if name not in ORDERED_PLUGINS:
            raise ValueError(f'{which}-admission-plugins plugin "{name}" is unknown')
    return names


# --endpoint-reconciler-type's values (upstream's)
ENDPOINT_RECONCILER_TYPES = ("lease", "master-count", "none")


@dataclass(frozen=True)
class Settings:
    """Every setting of ``watchcache serve``. Durations are seconds."""

    etcd_servers: tuple[str, ...] = ()
    etcd_prefix: str = "/registry"
    etcd_cafile: str = ""
    etcd_certfile: str = ""
    etcd_keyfile: str = ""
    etcd_dial_timeout: float = 5.0
    # bound on every etcd request: the time a request waits on an unreachable etcd
    etcd_request_timeout: float = 10.0
    bind_address: str = "127.0.0.1"
    # the address the default/kubernetes Service's endpoints list ("" = the bind
    # address, or the default route's interface when bound to all)
    advertise_address: str = ""
    # the ClusterIP range of Services; its first address is the kubernetes Service's
    # (kubeadm's default, which kind and most clusters use)
    service_cluster_ip_range: str = "10.96.0.0/12"
    # how the kubernetes Service's endpoints are kept: "lease" (upstream's default: the
    # servers whose master leases in etcd are alive), "master-count" (this server adds
    # its address, never removes another's) or "none" (untouched: a second server on the
    # same etcd, such as the bench's and the lab demos', would otherwise fight over the
    # port). The default here is master-count, a deliberate difference: the lease's write
    # every 10 s moves etcd's revision past idle watch caches (docs/bootstrap.md)
    endpoint_reconciler_type: str = "master-count"
    # where the plain port listens (kube's old --insecure-bind-address); "" = bind_address,
    # so `--bind-address=A --port=N` serves plain HTTP on A:N as it always did
    insecure_bind_address: str = ""
    # the plain-HTTP port (kube's old insecure port): no authentication, every request
    # as a system:masters user. None: not served. When neither port is given, the
    # secure port defaults to 6443 (``resolve_ports``).
    port: int | None = None
    # HTTPS with authentication and authorization; None: not served (see above)
    secure_port: int | None = None
    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    # where a self-signed serving certificate (and the service-account key, when none is
    # given) is generated when --tls-cert-file is not given
    cert_dir: str = "/var/run/kubernetes"
    client_ca_file: str = ""
    tls_min_version: str = "VersionTLS12"
    tls_cipher_suites: tuple[str, ...] = ()
    anonymous_auth: bool = True
    token_auth_file: str = ""
    authorization_mode: tuple[str, ...] = ("RBAC",)
    service_account_key_file: tuple[str, ...] = ()
    service_account_signing_key_file: str = ""
    service_account_issuer: tuple[str, ...] = ()
    api_audiences: tuple[str, ...] = ()
    service_account_max_token_expiration: float = 0.0
    service_account_lookup: bool = True
    service_account_jwks_uri: str = ""
    # --watch-cache (kube-apiserver's default true): reads and watches from the watch
    # cache; false: every read from etcd. Which storage serves what is decided in
    # proxy.registry.storage_factory.new_storage.
    watch_cache: bool = True
    # ring size per resource: -1 dynamic (100..102,400 by event age), N > 0 fixed
    default_watch_cache_size: int = -1
    # false disables the cache's built-in field indexes (pods spec.nodeName) and the
    # configured ones, to measure the cache without them
    watch_cache_index: bool = True
    # extra per-resource field indexes (YAML only): {configmaps: [metadata.namespace]}
    watch_cache_indexes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # e.g. ConsistentListFromCache=true
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    # ListFromCacheSnapshot (on by default, as kube-apiserver 1.34+): how long a snapshot
    # of the store is kept once superseded, and how many per resource (ours; upstream
    # keeps them as long as its event history)
    watch_cache_snapshot_retention: float = 75.0
    watch_cache_snapshot_max: int = 10_000
    # kube-apiserver's --event-ttl: Events are written under an etcd lease of this length
    # (storage.etcd3.lease_manager), so etcd deletes them; 0 keeps them forever
    event_ttl: float = 3600.0
    # kube-apiserver compacts etcd every 5 minutes; 0 disables
    etcd_compaction_interval: float = 300.0
    # how often a watch gets a BOOKMARK (kube: 1 minute; for tests)
    watch_bookmark_interval: float = 60.0
    # kube-apiserver's --min-request-timeout: watches last this x random [1, 2)
    min_request_timeout: float = 1800.0
    # kube-apiserver's --request-timeout: the bound on a non-long-running request
    request_timeout: float = 60.0
    # kube-apiserver's --max-requests-inflight / --max-mutating-requests-inflight:
    # non-long-running requests served at once before 429 (0: no limit)
    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    # kube-apiserver's --enable-priority-and-fairness: API Priority and Fairness
    # (proxy.flowcontrol) instead of the max-in-flight filter; both limits above then
    # sum to its total seats
    enable_priority_and_fairness: bool = True
    # kube-apiserver's audit flags (proxy.audit): no policy file, no audit
    audit_policy_file: str = ""
    audit_log_path: str = ""
    audit_log_maxage: int = 0
    audit_log_maxbackup: int = 0
    audit_log_maxsize: int = 0
    audit_log_format: str = "json"
    shutdown_timeout: float = 5.0
    max_request_body_bytes: int = 3 * 1024 * 1024
    # create default, kube-system, kube-public, kube-node-lease at start-up (as
    # kube-apiserver's system-namespaces controller); false leaves etcd untouched
    system_namespaces: bool = True
    # true when kubelets, a garbage collector and a namespace controller run against this
    # server (the lab's simulated cluster): DELETE then behaves as kube-apiserver's does
    # (graceful for bound pods, Foreground/Orphan finalizers, namespaces Terminating).
    # false: nothing would finish those, so deletes are immediate (see
    # proxy/registry/deletion.py). Finalizers already on an object are honoured either way.
    lifecycle_controllers: bool = False
    log_level: str = "info"
    # serving processes on the same ports (SO_REUSEPORT), each a whole server with its
    # own watch cache (proxy.app.workers); 0: the usable cores, at most 8
    workers: int = 1
    # the Lease the workers elect the one that runs the run-once controllers with
    # (kube-controller-manager's --leader-elect-* flags and defaults)
    leader_elect_lease_duration: float = 15.0
    leader_elect_renew_deadline: float = 10.0
    leader_elect_retry_period: float = 2.0
    # the NodePort range of Services (kube-apiserver's --service-node-port-range)
    service_node_port_range: str = "30000-32767"
    # asyncio's own loop or uvloop's; "" (no flag): uvloop's when it is installed, else
    # asyncio's (proxy.server.event_loop.default_name)
    event_loop: str = ""
    # kube-apiserver's admission flags (proxy.admission.chain: default-on set, order)
    enable_admission_plugins: tuple[str, ...] = ()
    disable_admission_plugins: tuple[str, ...] = ()
    # kube-apiserver's --storage-media-type (its default, protobuf); reads accept all three
    storage_media_type: str = "application/vnd.kubernetes.protobuf"
    # --- API aggregation and the front proxy (proxy/aggregator, docs/aggregation.md) ---
    # requests whose client certificate a requestheader CA signed (and, when names are
    # given, whose CN is one of them) are authenticated by their X-Remote-* headers
    requestheader_client_ca_file: str = ""
    requestheader_allowed_names: tuple[str, ...] = ()
    requestheader_username_headers: tuple[str, ...] = ()
    requestheader_uid_headers: tuple[str, ...] = ()
    requestheader_group_headers: tuple[str, ...] = ()
    requestheader_extra_headers_prefix: tuple[str, ...] = ()
    # the client certificate the aggregator presents to extension API servers
    proxy_client_cert_file: str = ""
    proxy_client_key_file: str = ""
    # route to a Service's endpoints instead of its cluster IP
    enable_aggregator_routing: bool = False
    # --- the kubelets (proxy/kube/kubelet_client.py): pods/log, exec, attach,
    # portforward and nodes/proxy are proxied to the node's kubelet over HTTPS
    # the client certificate presented to kubelets (kube-apiserver-kubelet-client)
    kubelet_client_certificate: str = ""
    kubelet_client_key: str = ""
    # the CA kubelets' serving certificates are checked against; "": not checked, as
    # upstream (kubelets serve self-signed certificates by default)
    kubelet_certificate_authority: str = ""
    # which of a Node's status.addresses to dial, first match wins
    kubelet_preferred_address_types: tuple[str, ...] = (
        "Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP",
    )  # fmt: skip
    # how long dialling a kubelet may take
    kubelet_timeout: float = 5.0
    # an EgressSelectorConfiguration: how the kubelets and pod IPs (pods/proxy,
    # services/proxy) are reached; "": directly (proxy/egressselector.py)
    egress_selector_config_file: str = ""


_STORAGE_MEDIA_TYPES = (
    "application/vnd.kubernetes.protobuf",
    "application/json",
    "application/yaml",
)


def _parse_storage_media_type(value: str) -> str:
    if value not in _STORAGE_MEDIA_TYPES:
        raise ConfigError(f"{value!r}: one of {', '.join(_STORAGE_MEDIA_TYPES)}")
    return value


def _parse_endpoint_reconciler_type(value: str) -> str:
    if value not in ENDPOINT_RECONCILER_TYPES:
        raise ConfigError(f"{value!r}: one of {', '.join(ENDPOINT_RECONCILER_TYPES)}")
    return value


def _parse_workers(value: str | int) -> int:
    workers = int(value)
    if workers < 0:
        raise ConfigError(f"{value!r}: a number of processes, or 0 for one per core")
    return workers


def _parse_event_loop(value: str) -> str:
    if value not in ("asyncio", "uvloop"):
        raise ConfigError(f"{value!r}: asyncio or uvloop")
    return value


_CONVERTERS: dict[str, Any] = {
    "storage_media_type": _parse_storage_media_type,
    "etcd_servers": _parse_servers,
    "etcd_dial_timeout": _parse_duration,
    "etcd_request_timeout": _parse_duration,
    "min_request_timeout": _parse_duration,
    "request_timeout": _parse_duration,
    "shutdown_timeout": _parse_duration,
    "watch_cache": _parse_bool,
    "watch_cache_index": _parse_bool,
    "system_namespaces": _parse_bool,
    "lifecycle_controllers": _parse_bool,
    "service_node_port_range": _parse_port_range,
    "default_watch_cache_size": int,
    "feature_gates": _parse_feature_gates,
    "watch_cache_indexes": _parse_indexes,
    "etcd_compaction_interval": _parse_duration,
    "event_ttl": _parse_duration,
    "watch_bookmark_interval": _parse_duration,
    "watch_cache_snapshot_retention": _parse_duration,
    "watch_cache_snapshot_max": int,
    "event_loop": _parse_event_loop,
    "workers": _parse_workers,
    "leader_elect_lease_duration": _parse_duration,
    "leader_elect_renew_deadline": _parse_duration,
    "leader_elect_retry_period": _parse_duration,
    "endpoint_reconciler_type": _parse_endpoint_reconciler_type,
    "port": _parse_port,
    "advertise_address": lambda v: str(ipaddress.ip_address(v)) if v else "",
    "service_cluster_ip_range": lambda v: str(ipaddress.ip_network(v, strict=True)),
    "secure_port": _parse_port,
    "tls_cipher_suites": _parse_servers,
    "anonymous_auth": _parse_bool,
    "authorization_mode": _parse_servers,
    "service_account_key_file": _parse_servers,
    "service_account_issuer": _parse_servers,
    "api_audiences": _parse_servers,
    "service_account_max_token_expiration": _parse_duration,
    "service_account_lookup": _parse_bool,
    "max_request_body_bytes": int,
    "enable_admission_plugins": lambda v: _parse_admission_plugins(v, "enable"),
    "disable_admission_plugins": lambda v: _parse_admission_plugins(v, "disable"),
    "max_requests_inflight": int,
    "max_mutating_requests_inflight": int,
    "requestheader_allowed_names": _parse_servers,
    "requestheader_username_headers": _parse_servers,
    "requestheader_uid_headers": _parse_servers,
    "requestheader_group_headers": _parse_servers,
    "requestheader_extra_headers_prefix": _parse_servers,
    "enable_aggregator_routing": _parse_bool,
    "kubelet_preferred_address_types": _parse_servers,
    "kubelet_timeout": _parse_duration,
    "enable_priority_and_fairness": _parse_bool,
    "audit_log_maxage": int,
    "audit_log_maxbackup": int,
    "audit_log_maxsize": int,
}

_FLAG_HELP: dict[str, str] = {
    "etcd_servers": "comma-separated etcd client URLs (required)",
    "etcd_prefix": "key prefix of every object in etcd",
    "etcd_cafile": "SSL Certificate Authority file for etcd",
    "etcd_certfile": "SSL certification file for etcd",
    "etcd_keyfile": "SSL key file for etcd",
    "etcd_dial_timeout": "timeout of a connection attempt to etcd (e.g. 5s)",
    "etcd_request_timeout": "timeout of one etcd request; requests on an unreachable etcd "
    "fail with 504 after it (e.g. 10s)",
    "bind_address": "IP address to listen on",
    "advertise_address": "IP address the kubernetes Service's endpoints advertise "
    "(default: --bind-address, or the default route's when that is 0.0.0.0)",
    "service_cluster_ip_range": "CIDR of Service cluster IPs; the kubernetes Service gets "
    "its first address",
    "endpoint_reconciler_type": "how the kubernetes Service's endpoints are kept: lease "
    "(the servers whose master leases are alive), master-count (add this server's "
    "address) or none (leave them alone: a second server on the same etcd)",
    "insecure_bind_address": "IP address of the plain port (default: --bind-address); e.g. "
    "HTTPS on 0.0.0.0 and the plain port on 127.0.0.1 for local health checks",
    "port": "plain-HTTP port, without authentication: every request is a system:masters "
    "user (0 = any free port; not served unless given)",
    "secure_port": "HTTPS port with authentication and authorization (default 6443 when "
    "--port is not given; 0 = any free port)",
    "tls_cert_file": "serving certificate (PEM, with intermediates)",
    "tls_private_key_file": "serving certificate's private key (PEM)",
    "cert_dir": "where a self-signed serving certificate is generated when "
    "--tls-cert-file is not given",
    "client_ca_file": "CA bundle that signs client certificates (CN = user, O = groups)",
    "tls_min_version": "VersionTLS12 or VersionTLS13",
    "tls_cipher_suites": "comma-separated IANA cipher suite names (TLS 1.2)",
    "anonymous_auth": "requests without credentials are system:anonymous",
    "token_auth_file": 'static bearer tokens: CSV token,user,uid,"group1,group2"',
    "authorization_mode": "comma-separated chain of AlwaysAllow, AlwaysDeny, RBAC",
    "service_account_key_file": "PEM public (or private) keys that verify service-account "
    "tokens (comma-separated)",
    "service_account_signing_key_file": "PEM private key that signs service-account tokens",
    "service_account_issuer": "issuer of service-account tokens (the first one signs; all "
    "are accepted)",
    "api_audiences": "audiences tokens must carry (default: the issuers)",
    "service_account_max_token_expiration": "longest TokenRequest expiration (e.g. 24h)",
    "service_account_lookup": "check that a token's service account (and bound object) exists",
    "service_account_jwks_uri": "jwks_uri published in the OIDC discovery document",
    "watch_cache": "serve reads and watches from a watch cache (false: every read from etcd)",
    "default_watch_cache_size": "events kept per resource: -1 dynamic, N > 0 a fixed ring",
    "watch_cache_index": "false disables the watch cache's field indexes (pods spec.nodeName)",
    "feature_gates": "comma-separated Gate=true|false, e.g. ConsistentListFromCache=true",
    "etcd_compaction_interval": "interval of etcd compactions (e.g. 5m; 0 disables)",
    "event_ttl": "how long Events are kept in etcd after their last write (e.g. 1h; 0 keeps them)",
    "watch_cache_snapshot_retention": "how long a watch cache snapshot (ListFromCacheSnapshot: "
    "LISTs at an exact revision and continue pages from the cache) is kept once "
    "superseded (e.g. 75s)",
    "watch_cache_snapshot_max": "most snapshots kept per resource (the oldest go first)",
    "watch_bookmark_interval": "interval of BOOKMARK events per watch (e.g. 1m)",
    "min_request_timeout": "minimum watch duration; each watch lasts this times a random "
    "factor in [1, 2) unless timeoutSeconds is given",
    "request_timeout": "bound on the duration of a non-watch request",
    "max_requests_inflight": "read-only requests served at once before 429 (0: no limit)",
    "max_mutating_requests_inflight": "mutating requests served at once before 429 (0: no limit)",
    "enable_priority_and_fairness": "API Priority and Fairness (FlowSchemas, priority levels, "
    "fair queuing) instead of the max-in-flight filter; the two max-*-inflight flags sum "
    "to its total seats",
    "audit_policy_file": "audit.k8s.io/v1 Policy file; without it nothing is audited",
    "audit_log_path": "where audit events are written as JSON lines ('-' for stdout)",
    "audit_log_maxage": "days to keep rotated audit log files (0: no limit)",
    "audit_log_maxbackup": "rotated audit log files to keep (0: no limit)",
    "audit_log_maxsize": "megabytes of the audit log before it is rotated (0: never)",
    "audit_log_format": "format of the audit log: json (legacy is not supported)",
    "shutdown_timeout": "time in-flight requests get to finish on SIGINT/SIGTERM",
    "max_request_body_bytes": "largest request body accepted (413 above)",
    "system_namespaces": "create the default, kube-system, kube-public and kube-node-lease "
    "namespaces and the local APIServices at start-up (false: write nothing until asked)",
    "lifecycle_controllers": "kubelets, a garbage collector and a namespace controller run "
    "against this server (as in `watchcache lab`): bound pods are deleted gracefully, "
    "propagationPolicy Foreground/Orphan adds its finalizer, and the server's own namespace "
    "controller does not run; false (default): deletes are immediate, and the server empties "
    "deleted (Terminating) namespaces itself",
    "service_node_port_range": "the ports NodePort Services get theirs from (a-b)",
    "log_level": "debug, info, warning or error",
    "workers": "serving processes on the same ports (SO_REUSEPORT), each with its own "
    "watch cache over the same etcd; the run-once controllers run in the one holding "
    "the Lease kube-system/watchcache-controllers (0: one per core, at most 8; see "
    "docs/workers.md)",
    "leader_elect_lease_duration": "how long a worker that stops renewing holds the "
    "controllers' Lease (e.g. 15s)",
    "leader_elect_renew_deadline": "how long the leading worker retries a renewal before "
    "it gives the leadership up (e.g. 10s)",
    "leader_elect_retry_period": "how often the workers try to acquire or renew the "
    "Lease (e.g. 2s)",
    "event_loop": "asyncio or uvloop (needs the optional uvloop extra: "
    "pip install 'watchcache[uvloop]'); default: uvloop when it is installed, else "
    "asyncio (see docs/performance.md)",
    "enable_admission_plugins": "admission plugins to enable besides the default-on ones "
    "(comma-separated; they run in kube-apiserver's order, see docs/admission.md)",
    "disable_admission_plugins": "default-on admission plugins to disable (comma-separated)",
    "storage_media_type": "media type of the values written to etcd: "
    "application/vnd.kubernetes.protobuf (default), application/json or application/yaml "
    "(reads accept all three)",
    "requestheader_client_ca_file": "CA bundle that signs the front proxy's client "
    "certificates; such requests are authenticated by their --requestheader-* headers",
    "requestheader_allowed_names": "common names a front-proxy certificate may have "
    "(comma-separated; empty: any the CA signed)",
    "requestheader_username_headers": "headers holding the user name, first non-empty "
    "wins (usually X-Remote-User)",
    "requestheader_uid_headers": "headers holding the user's UID (usually X-Remote-Uid)",
    "requestheader_group_headers": "headers holding the groups (usually X-Remote-Group)",
    "requestheader_extra_headers_prefix": "header prefixes of the user's extra values "
    "(usually X-Remote-Extra-)",
    "proxy_client_cert_file": "client certificate the aggregator presents to extension "
    "API servers (with the X-Remote-* identity headers)",
    "proxy_client_key_file": "its private key",
    "enable_aggregator_routing": "proxy to a Service's endpoint addresses instead of its "
    "cluster IP (no kube-proxy on this host)",
    "kubelet_client_certificate": "client certificate presented to kubelets (pods/log, "
    "exec, attach, portforward, nodes/proxy)",
    "kubelet_client_key": "its private key",
    "kubelet_certificate_authority": "CA of the kubelets' serving certificates (default: "
    "not verified)",
    "kubelet_preferred_address_types": "Node address types to reach a kubelet at, in order",
    "kubelet_timeout": "timeout of dialling a kubelet (e.g. 5s)",
    "egress_selector_config_file": "EgressSelectorConfiguration file: its cluster egress "
    "(Direct or HTTPConnect) reaches the kubelets and the pod IPs of pods/proxy and "
    "services/proxy",
}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="watchcache serve",
        description="Serve the Kubernetes API over etcd.",
    )
    parser.add_argument("--config", help="YAML file with the same settings as the flags")
    for f in fields(Settings):
        if f.name in _YAML_ONLY:
            continue
        # default None: only flags given on the command line override the config file;
        # booleans work bare (--watch-cache) or with a value (--watch-cache=false)
        extra: dict[str, Any] = {"nargs": "?", "const": "true"} if f.type in (bool, "bool") else {}
        parser.add_argument(
            _flag(f.name), dest=f.name, default=None, help=_FLAG_HELP.get(f.name), **extra
        )
    return parser


def _convert(name: str, value: Any) -> Any:
    conv = _CONVERTERS.get(name)
    try:
        return conv(value) if conv is not None else str(value)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{_flag(name)}: {e}") from None


_YAML_ONLY = frozenset({"watch_cache_indexes"})


def _flatten_watch_cache(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """``watchCache: {indexes: {...}}`` in YAML is ``watch-cache-indexes``."""
    nested = data.get("watchCache")
    if not isinstance(nested, Mapping):
        return data
    flat = {k: v for k, v in data.items() if k != "watchCache"}
    if "indexes" in nested:
        flat["watch-cache-indexes"] = nested["indexes"]
    return flat


def settings_from_mapping(data: Mapping[str, Any], base: Settings | None = None) -> Settings:
    """Apply a YAML mapping (flag names as keys) to ``base``; unknown keys are errors."""
    known = {f.name for f in fields(Settings)}
    changes: dict[str, Any] = {}
    for raw_key, value in _flatten_watch_cache(data).items():
        key = str(raw_key).lstrip("-").replace("-", "_")
        if key not in known:
            raise ConfigError(f"unknown setting {raw_key!r}")
        changes[key] = _convert(key, value)
    return replace(base or Settings(), **changes)


def load_config_file(path: str | Path) -> Mapping[str, Any]:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"cannot read config {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"invalid YAML in {path}: {e}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the configuration must be a mapping of settings")
    return data


def load_settings(argv: Sequence[str]) -> Settings:
    """Settings from defaults, ``--config`` and flags. ConfigError on bad input;
    argparse exits (code 2) on unknown flags, as CLIs do."""
    args = build_parser().parse_args(list(argv))
    settings = Settings()
    if args.config:
        settings = settings_from_mapping(load_config_file(args.config), settings)
    given = {k: v for k, v in vars(args).items() if k != "config" and v is not None}
    settings = settings_from_mapping(given, settings)
    if not settings.etcd_servers:
        raise ConfigError("--etcd-servers is required")
    return resolve_ports(settings)


def resolve_ports(settings: Settings) -> Settings:
    """kube-apiserver serves HTTPS on 6443 by default; here too, unless only the plain
    port was asked for (today's ``--port=N`` invocations keep serving plain HTTP alone)."""
    if settings.port is None and settings.secure_port is None:
        return replace(settings, secure_port=6443)
    return settings
