"""The subresources served by the node's kubelet (upstream's
``pkg/registry/core/pod/rest/log.go``, ``subresources.go``, ``strategy.go``'s
``LogLocation``/``ExecLocation``/``AttachLocation``/``PortForwardLocation`` and
``pkg/registry/core/node/rest/proxy.go``): each checks its options, reads the pod and
its node, and answers where the request goes — ``/containerLogs``, ``/exec``,
``/attach``, ``/portForward`` or ``/<path>`` on the kubelet — for the connect handler
(``proxy.endpoints.handlers.connect``) to proxy to. ``pods/proxy`` (``ResourceLocation``
of ``pkg/registry/core/pod/strategy.go``) goes to the pod's IP instead, through the
egress selector's ``cluster`` network."""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import aiohttp

from proxy import apierrors
from proxy.kube.kubelet_client import KubeletClientConfig
from proxy.kube.token import ObjectReader
from proxy.registry.resources import ResourceInfo
from proxy.registry.rest import ConnectTarget, Context

__all__ = ["LOG_OPTIONS", "NodeProxyREST", "PodLogREST", "PodProxyREST", "PodStreamREST",
           "ProxyOptions", "Transport", "connect_storage", "is_global_unicast", "proxy_location",
           "split_scheme_name_port"]

JSON = dict[str, Any]
Options = Mapping[str, Sequence[str]]
# a factory of the connector that reaches the cluster's network (None: dial directly)
Transport = Callable[[], aiohttp.BaseConnector] | None

_CORE = "v1"
LOG_OPTIONS = ResourceInfo(group="", version=_CORE, kind="PodLogOptions", plural="log",
                           namespaced=True, verbs=())  # fmt: skip
_OPTIONS_KIND = {
    "exec": "PodExecOptions",
    "attach": "PodAttachOptions",
    "portforward": "PodPortForwardOptions",
}
# the kubelet's paths (pkg/kubelet/server/server.go)
_KUBELET_PATH = {"exec": "exec", "attach": "attach", "portforward": "portForward"}
_STREAM_FLAGS = ("stdin", "stdout", "stderr", "tty")
_PROXY_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
_LOG_FLAGS = ("follow", "previous", "timestamps", "insecureSkipTLSVerifyBackend")
_LOG_INTS = {"sinceSeconds": 1, "tailLines": 0, "limitBytes": 1}


def _first(options: Options, key: str) -> str:
    values = options.get(key) or ()
    return str(values[0]) if values else ""


def _flag(options: Options, key: str) -> bool:
    """A bool query parameter as the query-parameter codec reads it."""
    value = _first(options, key)
    if value in ("", "false", "False", "0"):
        return False
    if value in ("true", "True", "1"):
        return True
    raise apierrors.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')


async def _pod(read: ObjectReader, ctx: Context, name: str) -> JSON:
    return await read("pods", ctx.namespace, name)


def _names(containers: list[JSON]) -> str:
    return " ".join(str(c.get("name")) for c in containers)


def _container(pod: JSON, name: str, container: str) -> str:
    """The container a request is for (upstream's ``streamLocation`` defaulting: the
    only container, else it must be named and exist)."""
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or []
    if not container:
        if len(containers) == 1:
            return str(containers[0].get("name"))
        if not containers:
            raise apierrors.bad_request(f"a container name must be specified for pod {name}")
        message = (f"a container name must be specified for pod {name}, choose one of: "
                   f"[{_names(containers)}]")  # fmt: skip
        if spec.get("initContainers"):
            message += f" or one of the init containers: [{_names(spec['initContainers'])}]"
        raise apierrors.bad_request(message)
    every = [*containers, *(spec.get("initContainers") or []),
             *(spec.get("ephemeralContainers") or [])]  # fmt: skip
    if not any(c.get("name") == container for c in every):
        raise apierrors.bad_request(f"container {container} is not valid for pod {name}")
    return container


async def _node_url(read: ObjectReader, kubelet: KubeletClientConfig, pod: JSON) -> str:
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name:
        name = (pod.get("metadata") or {}).get("name")
        raise apierrors.bad_request(f"pod {name} does not have a host assigned")
    return kubelet.base_url(await read("nodes", "", str(node_name)))


def _location(base: str, path: str, query: list[tuple[str, str]]) -> str:
    # url.Values.Encode: keys sorted, a key's values in their order (command's words)
    encoded = urllib.parse.urlencode(sorted(query, key=lambda kv: kv[0]))
    return f"{base}/{path}" + (f"?{encoded}" if encoded else "")


@dataclass(frozen=True)
class PodLogREST:
    """``pods/log`` (upstream's ``LogREST``: a GET streamed from the kubelet's
    ``/containerLogs/NS/POD/CONTAINER``)."""

    read: ObjectReader
    kubelet: KubeletClientConfig

    @property
    def kind(self) -> ResourceInfo:
        return LOG_OPTIONS

    @property
    def connect_methods(self) -> tuple[str, ...]:
        return ("GET",)

    async def connect(self, ctx: Context, name: str, options: Options, path: str) -> ConnectTarget:
        query = _log_query(options)
        pod = await _pod(self.read, ctx, name)
        container = _container(pod, name, _first(options, "container"))
        base = await _node_url(self.read, self.kubelet, pod)
        url = _location(base, f"containerLogs/{ctx.namespace}/{name}/{container}", query)
        return ConnectTarget(url, self.kubelet.tls, error_resource="pods/log", name=name,
                             transport=self.kubelet.transport)  # fmt: skip


def _log_query(options: Options) -> list[tuple[str, str]]:
    """The kubelet's query of a PodLogOptions (validated as ``ValidatePodLogOptions``)."""
    query = [(k, "true") for k in _LOG_FLAGS[:3] if _flag(options, k)]
    for key, least in _LOG_INTS.items():
        value = _first(options, key)
        if not value:
            continue
        try:
            number = int(value)
        except ValueError as e:
            message = f'strconv.ParseInt: parsing "{value}": invalid syntax'
            raise apierrors.bad_request(message) from e
        if number < least:
            word = "greater than or equal to 0" if least == 0 else "greater than 0"
            raise _invalid_log_option(key, number, f"must be {word}")
        query.append((key, str(number)))
    since_time = _first(options, "sinceTime")
    if since_time:
        if _first(options, "sinceSeconds"):
            raise _invalid_log_option("sinceSeconds", int(_first(options, "sinceSeconds")),
                                      "at most one of `sinceTime` or `sinceSeconds` may be "
                                      "specified")  # fmt: skip
        query.append(("sinceTime", since_time))
    return query


def _invalid_log_option(key: str, value: object, detail: str) -> apierrors.StatusError:
    error = apierrors.FieldError.invalid(key, value, detail)
    return apierrors.invalid("PodLogOptions", "", [error])


@dataclass(frozen=True)
class PodStreamREST:
    """``pods/exec``, ``pods/attach`` and ``pods/portforward`` (upstream's
    ``ExecREST``, ``AttachREST``, ``PortForwardREST``): only an upgraded connection is
    served, by the kubelet's ``/exec``, ``/attach`` or ``/portForward``."""

    subresource: str
    read: ObjectReader
    kubelet: KubeletClientConfig

    @property
    def kind(self) -> ResourceInfo:
        return ResourceInfo(group="", version=_CORE, kind=_OPTIONS_KIND[self.subresource],
                            plural=self.subresource, namespaced=True, verbs=())  # fmt: skip

    @property
    def connect_methods(self) -> tuple[str, ...]:
        return ("GET", "POST")

    async def connect(self, ctx: Context, name: str, options: Options, path: str) -> ConnectTarget:
        kubelet_path = _KUBELET_PATH[self.subresource]
        if self.subresource == "portforward":
            query = [("port", str(p)) for p in options.get("ports") or ()]
            pod = await _pod(self.read, ctx, name)
            where = f"{kubelet_path}/{ctx.namespace}/{name}"
        else:
            query = self._stream_query(options)
            pod = await _pod(self.read, ctx, name)
            container = _container(pod, name, _first(options, "container"))
            where = f"{kubelet_path}/{ctx.namespace}/{name}/{container}"
        base = await _node_url(self.read, self.kubelet, pod)
        return ConnectTarget(_location(base, where, query), self.kubelet.tls,
                             upgrade_required=True, name=name,
                             transport=self.kubelet.transport)  # fmt: skip

    def _stream_query(self, options: Options) -> list[tuple[str, str]]:
        flags = {k: _flag(options, k) for k in _STREAM_FLAGS}
        if not (flags["stdin"] or flags["stdout"] or flags["stderr"]):
            raise apierrors.bad_request("you must specify at least 1 of stdin, stdout, stderr")
        query = [(k, "1") for k, on in flags.items() if on]
        if self.subresource == "exec":
            commands = [str(c) for c in options.get("command") or ()]
            if not commands:
                raise apierrors.bad_request("you must specify at least 1 command")
            query += [("command", c) for c in commands]
        return query


class ProxyOptions:
    """What the ``proxy`` subresources share: any method, and their options kind."""

    options_kind: ClassVar[str]
    namespaced: ClassVar[bool] = True

    @property
    def kind(self) -> ResourceInfo:
        return ResourceInfo(group="", version=_CORE, kind=self.options_kind, plural="proxy",
                            namespaced=self.namespaced, verbs=())  # fmt: skip

    @property
    def connect_methods(self) -> tuple[str, ...]:
        return _PROXY_METHODS


@dataclass(frozen=True)
class NodeProxyREST(ProxyOptions):
    """``nodes/proxy`` (upstream's node ``ProxyREST``): any method, to the path after
    ``proxy/`` on the node's kubelet."""

    options_kind = "NodeProxyOptions"
    namespaced = False
    read: ObjectReader
    kubelet: KubeletClientConfig

    async def connect(self, ctx: Context, name: str, options: Options, path: str) -> ConnectTarget:
        node = await self.read("nodes", "", name)
        return ConnectTarget(_location(self.kubelet.base_url(node), path.lstrip("/"),
                                       _pass_query(options)),
                             self.kubelet.tls, name=name,
                             transport=self.kubelet.transport)  # fmt: skip


def _pass_query(options: Options) -> list[tuple[str, str]]:
    """The request's query, passed on to the target as it came."""
    return [(k, str(v)) for k, values in options.items() for v in values]


def split_scheme_name_port(id_: str) -> tuple[str, str, str] | None:
    """``utilnet.SplitSchemeNamePort``: ``name``, ``name:port`` or
    ``scheme:name:port`` (scheme "", http or https); None when invalid."""
    parts = id_.split(":")
    if len(parts) > 3:
        return None
    scheme, name, port = parts if len(parts) == 3 else ("", *parts, "")[:3]
    if not name or scheme not in ("", "http", "https"):
        return None
    return scheme, name, port


def is_global_unicast(address: str) -> bool:
    """Go's ``net.IP.IsGlobalUnicast`` (private ranges included; loopback, link-local,
    multicast, unspecified and the broadcast address not)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_unspecified
                or address == "255.255.255.255")  # fmt: skip


def proxy_location(scheme: str, host: str, port: str, path: str, options: Options) -> str:
    """``scheme://host:port/path?query`` (http when no scheme, as the proxy handler)."""
    where = f"[{host}]" if ":" in host else host
    if port:
        where += f":{port}"
    return _location(f"{scheme or 'http'}://{where}", path.lstrip("/"), _pass_query(options))


# the pods' own certificates are not checked (upstream's proxy transport)
_UNVERIFIED = False


@dataclass(frozen=True)
class PodProxyREST(ProxyOptions):
    """``pods/proxy`` (upstream's pod ``ProxyREST`` over ``ResourceLocation``): any
    method, to the path after ``proxy/`` on the pod's IP at the port its name carries
    (``NAME:PORT``, ``SCHEME:NAME:PORT``), else the first port a container declares."""

    options_kind = "PodProxyOptions"
    read: ObjectReader
    transport: Transport

    async def connect(self, ctx: Context, name: str, options: Options, path: str) -> ConnectTarget:
        split = split_scheme_name_port(name)
        if split is None:
            raise apierrors.bad_request(f'invalid pod request "{name}"')
        scheme, pod_name, port = split
        pod = await _pod(self.read, ctx, pod_name)
        if not port:
            declared = [p for c in (pod.get("spec") or {}).get("containers") or []
                        for p in c.get("ports") or []]  # fmt: skip
            port = str(declared[0].get("containerPort")) if declared else ""
        ip = str((pod.get("status") or {}).get("podIP") or "")
        if not is_global_unicast(ip):
            raise apierrors.bad_request("address not allowed")
        return ConnectTarget(proxy_location(scheme, ip, port, path, options), _UNVERIFIED,
                             name=pod_name, transport=self.transport)  # fmt: skip


def connect_storage(
    resource: ResourceInfo, subresource: str, read: ObjectReader, kubelet: KubeletClientConfig,
    cluster: Transport = None,
) -> PodLogREST | PodStreamREST | NodeProxyREST | PodProxyREST | None:
    """The connect storage of ``resource``'s ``subresource``, if it is one (``cluster``:
    how pod IPs are reached)."""
    if resource.group != "":
        return None
    if resource.plural == "pods":
        if subresource == "log":
            return PodLogREST(read, kubelet)
        if subresource in _OPTIONS_KIND:
            return PodStreamREST(subresource, read, kubelet)
        if subresource == "proxy":
            return PodProxyREST(read, cluster)
    if resource.plural == "nodes" and subresource == "proxy":
        return NodeProxyREST(read, kubelet)
    return None
