"""Request bodies (upstream's ``limitedReadBody`` and the serializers' decoders): read
up to the size limit (413 above, before the rest is read), decoded from JSON, YAML or
protobuf with the limits Go's decoders have (nesting depth, YAML alias expansion), and
checked against the endpoint's kind (400 with kube-apiserver's wording).

Nothing here runs long on the event loop: a body that may take more than a few
milliseconds to decode (any YAML beyond a line or two: the pure-Python parser costs
~60 µs a node; JSON and protobuf past ``LARGE_BODY``) is decoded by
:func:`off_loop` in a small bounded pool of threads, so that a hostile 3 MiB body
(a flow sequence of a million zeros) stalls no other request. The threads share the
GIL with the loop, which gets it back every switch interval (5 ms).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import math
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import orjson
import yaml
from aiohttp import web

from proxy import apierrors
from proxy.endpoints import protobuf
from proxy.endpoints.negotiation import (
    BODY_TYPES,
    PROTOBUF_TYPE,
    YAML_TYPE,
    body_types,
    unsupported_body_type,
)
from proxy.endpoints.scheme import check_kind
from proxy.registry.resources import ResourceInfo
from proxy.request.audit_context import REQUEST_BODY
from storage.interfaces import JSONObject

__all__ = [
    "DECODERS",
    "HEAVY_YAML_NODES",
    "HUGE_BODY",
    "LARGE_BODY",
    "LARGE_YAML_BODY",
    "MAX_DEPTH",
    "MAX_REQUEST_BODY_BYTES",
    "MAX_YAML_BODY_NODES",
    "MAX_YAML_NODES",
    "check_kind",
    "decode_kind",
    "decode_object",
    "decode_structured",
    "decoded_kind",
    "decoded_object",
    "is_heavy",
    "is_large",
    "off_loop",
    "read_body",
    "too_deep",
]

MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024  # kube-apiserver's limit for a request body
# bodies decoded in the pool: JSON and protobuf past 64 KiB (orjson reads ~50 MB/s of
# small values, and the depth walk and field validation that follow cost more), YAML
# past a few lines (~7 µs a node with libyaml's parser, ~60 µs with the pure-Python one)
LARGE_BODY = 64 * 1024
LARGE_YAML_BODY = 512
DECODERS = 2  # threads per pool: each holds the GIL only between the loop's turns
# bodies over this many bytes have a pool of their own, of one thread: a hostile one (a
# 3 MiB YAML flow sequence) holds a decoder for seconds, and an ordinary body queued
# behind two of them waited past its request's deadline (a 100 kB YAML pod: 504 in
# the fuzz suite); one thread, so that they hold the GIL against the loop only one at
# a time (four decoding at once delayed a 10 ms ticker by up to 1 s)
HUGE_BODY = 256 * 1024
# a YAML body under HUGE_BODY may still hold ~100,000 nodes (~1 s of a decoder): one
# whose separators say it may have more than this many nodes (~70 ms) is decoded in the
# huge bodies' pool, so that ordinary YAML bodies never queue behind such ones
HEAVY_YAML_NODES = 10_000
_YAML_SEPARATORS = b",\n:-[{"

P = ParamSpec("P")
T = TypeVar("T")
_pools: dict[bool, concurrent.futures.ThreadPoolExecutor] = {}  # created on first use


def _decoders(huge: bool) -> concurrent.futures.ThreadPoolExecutor:
    found = _pools.get(huge)
    if found is None:
        name = "huge-body-decoder" if huge else "body-decoder"
        threads = 1 if huge else DECODERS  # hostile ones wait for each other
        found = _pools[huge] = concurrent.futures.ThreadPoolExecutor(
            threads, thread_name_prefix=name
        )
    return found


def is_heavy(body: bytes, media_type: str) -> bool:
    """Whether ``body`` is decoded in the huge bodies' pool: over ``HUGE_BODY`` bytes, or
    a YAML body that may have more than ``HEAVY_YAML_NODES`` nodes (each node but the
    first follows one of the separators counted here: an upper bound, one C pass)."""
    if len(body) > HUGE_BODY:
        return True
    if not media_type.endswith("yaml") or len(body) <= HEAVY_YAML_NODES:
        return False
    return len(body) - len(body.translate(None, _YAML_SEPARATORS)) > HEAVY_YAML_NODES


def is_large(body: bytes, media_type: str) -> bool:
    """Whether decoding ``body`` may cost the loop more than a few milliseconds."""
    limit = LARGE_YAML_BODY if media_type.endswith("yaml") else LARGE_BODY
    return len(body) > limit


async def off_loop(
    body: bytes, media_type: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """``fn(*args, **kwargs)``: here for a small ``body``, else in a decoder pool
    (``DECODERS`` threads; the others wait in its queue, and a request cancelled while
    waiting never starts; heavy bodies, :func:`is_heavy`, in a pool of their own). ``fn``
    must only read shared state: it runs beside the loop.
    Its exceptions (Status errors) come out here as they were raised."""
    if not is_large(body, media_type):
        return fn(*args, **kwargs)
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    pool = _decoders(is_heavy(body, media_type))
    return await asyncio.get_running_loop().run_in_executor(pool, call)


async def decoded_object(
    body: bytes, media_type: str, resource: ResourceInfo, warnings: list[str] | None = None
) -> JSONObject:
    """:func:`decode_object`, off the loop for a large body."""
    return await off_loop(body, media_type, decode_object, body, media_type, resource, warnings)


async def decoded_kind(body: bytes, media_type: str, api_version: str, kind: str) -> JSONObject:
    """:func:`decode_kind`, off the loop for a large body."""
    return await off_loop(body, media_type, decode_kind, body, media_type, api_version, kind)


async def read_body(request: web.Request, limit: int = MAX_REQUEST_BODY_BYTES) -> bytes:
    """The whole request body, or 413 RequestEntityTooLarge past ``limit`` bytes."""
    if request.content_length is not None and request.content_length > limit:
        raise apierrors.request_entity_too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > limit:
            raise apierrors.request_entity_too_large(limit)
        chunks.append(chunk)
    body = b"".join(chunks)
    request[REQUEST_BODY] = body  # the audit's requestObject
    return body


def _summarize(data: bytes, max_length: int = 30) -> str:
    """apimachinery's summarizeData: a short, safe preview of a body."""
    if not data:
        return "<empty>"
    if data[:1] == b"{":
        text = data.decode("utf-8", "replace")
        return text[:max_length] + " ..." if len(data) > max_length else text
    return data[:max_length].hex() + (" ..." if len(data) > max_length else "")


# a YAML document's nodes once its aliases are expanded (a 3 MiB body of plain YAML has
# far fewer); more is an alias bomb, which Go's yaml decoder refuses too
MAX_YAML_NODES = 1_000_000


class _SelfContaining(ValueError):
    """A YAML node that contains itself (an anchor used inside its own value)."""


def _expanded_size(value: Any) -> int:
    """How many nodes ``value`` has with shared (aliased) subtrees counted each time
    they appear; each distinct container is walked once, without recursion. ValueError
    for a container that contains itself (an anchor used inside its own value), which
    Go's yaml decoder refuses too."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(value, False)]
    on_path: set[int] = set()
    while stack:
        node, children_done = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        children = list(node.values() if isinstance(node, dict) else node)
        if children_done:
            on_path.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes.get(id(c), 1) for c in children)
            continue
        if id(node) in sizes:
            continue
        if id(node) in on_path:
            raise _SelfContaining
        on_path.add(id(node))
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)
    return sizes.get(id(value), 1)


# deepest nesting of a request body: orjson encodes at most 255 levels, and the Python
# validators recurse per level; real objects (CRDs included) stay far below
MAX_DEPTH = 200


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests dicts/lists more than ``limit`` deep (iterative walk;
    shared subtrees are visited once)."""
    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, (dict, list)) or id(node) in seen:
            continue
        if depth > limit:
            return True
        seen.add(id(node))
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children)
    return False


def decode_structured(body: bytes, media_type: str) -> Any:
    """Decode JSON or YAML to Python values; raises ValueError with the decoder message
    (also for a document nested deeper than ``MAX_DEPTH``)."""
    value = _decode_structured(body, media_type)
    if too_deep(value):
        raise ValueError(f"exceeded max depth of {MAX_DEPTH}")
    return value


def _decode_structured(body: bytes, media_type: str) -> Any:
    if media_type == YAML_TYPE:
        return _decode_yaml(body)
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise ValueError(f"json parse error: {e}") from None


# the most nodes a YAML body may have as written (before aliases are expanded). libyaml's
# C parser does the scanning and composing; what remains per node is PyYAML's resolver
# and constructor (~10 µs a node, ~60 µs with the pure-Python parser), so a 3 MiB flow
# sequence of zeros (1.5 M nodes) would hold a decoder thread for ~15 s; 100,000 (a
# large CRD has ~40,000) is ~1 s. Go's decoder has no such limit: docs/security.md.
MAX_YAML_BODY_NODES = 100_000

# libyaml's scanner and parser when PyYAML was built with it (the same resolver and
# constructor as the pure-Python SafeLoader: the same values; the errors worded as
# go-yaml, a port of libyaml, words them), else the pure-Python one
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _TooManyNodes(ValueError):
    """More than ``MAX_YAML_BODY_NODES`` nodes."""


class _CountingLoader(_SafeLoader):  # type: ignore[misc,valid-type]
    """The safe loader, stopping once the document has composed too many nodes: every
    node but an alias is resolved once, as it is composed (by C or Python), and the
    parser runs only as far as composing asks, so the cost stops with it."""

    def __init__(self, stream: bytes) -> None:
        super().__init__(stream)
        self.nodes = 0
        # (scalar, implicit) -> tag: the resolver tries its regular expressions on
        # every plain scalar, the costliest step left; documents repeat their scalars
        self.tags: dict[tuple[Any, Any], str] = {}

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        self.nodes += 1
        if self.nodes > MAX_YAML_BODY_NODES:
            raise _TooManyNodes
        if kind is not yaml.ScalarNode:
            return super().resolve(kind, value, implicit)
        tag = self.tags.get((value, implicit))
        if tag is None:
            tag = self.tags[(value, implicit)] = super().resolve(kind, value, implicit)
        return tag

    # What sigs.k8s.io/yaml's YAMLToJSON makes of values JSON has no place for (a
    # Python value no JSON encoder takes was a 500 further on):
    def construct_mapping(self, node: Any, deep: bool = False) -> dict[str, Any]:
        """Keys as JSON's strings: ``true``/``false``, ``1``, ``1.5``
        (``convertToJSONableObject``); a null or collection key is 400, as there."""
        self.flatten_mapping(node)  # merge keys, as SafeConstructor's
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            # converted before it is a key: true and 1 are one Python key, two Go keys
            key = _json_key(self.construct_object(key_node, deep=deep))
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_yaml_timestamp(self, node: Any) -> str:
        """go-yaml decodes a timestamp into an untyped value as the string it was."""
        return str(self.construct_scalar(node))

    def construct_yaml_binary(self, node: Any) -> str:
        """``!!binary`` is the decoded bytes as a string (invalid UTF-8 as U+FFFD, as
        Go's JSON encoder writes it)."""
        return str(super().construct_yaml_binary(node).decode("utf-8", "replace"))

    def construct_yaml_float(self, node: Any) -> float:
        value = float(super().construct_yaml_float(node))
        if math.isinf(value) or math.isnan(value):  # JSON has neither
            word = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
            raise ValueError(f"json: unsupported value: {word}")
        return value


# '=' and '<<' as values are strings to go-yaml ('<<' as a key still merges)
_CountingLoader.add_constructor("tag:yaml.org,2002:value", _SafeLoader.construct_yaml_str)
_CountingLoader.add_constructor("tag:yaml.org,2002:merge", _SafeLoader.construct_yaml_str)
_CountingLoader.add_constructor(
    "tag:yaml.org,2002:timestamp", _CountingLoader.construct_yaml_timestamp
)
_CountingLoader.add_constructor("tag:yaml.org,2002:binary", _CountingLoader.construct_yaml_binary)
_CountingLoader.add_constructor("tag:yaml.org,2002:float", _CountingLoader.construct_yaml_float)


def _json_key(key: Any) -> str:
    """A YAML key as ``convertToJSONableObject`` writes it."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return str(int(key)) if key.is_integer() else repr(key)
    kind = "<nil>" if key is None else type(key).__name__
    raise ValueError(f"unsupported map key of type: {kind}, key: {key!r}")


def _go_yaml_error(e: yaml.YAMLError) -> str:
    """The message go-yaml gives for a syntax error (its parser's ``fail``): the
    problem, after ``line N:`` where the problem's line (0-based; 1-based for the
    scanner's errors) is not 0, else the context's."""
    problem = getattr(e, "problem", None) or getattr(e, "reason", None) or str(e)
    mark = getattr(e, "problem_mark", None)
    line = 0
    if mark is not None and mark.line:
        line = mark.line + (1 if isinstance(e, yaml.scanner.ScannerError) else 0)
    elif getattr(e, "context_mark", None) is not None:
        line = e.context_mark.line  # type: ignore[attr-defined]
    return f"yaml: line {line}: {problem}" if line else f"yaml: {problem}"


def _decode_yaml(body: bytes) -> Any:
    """YAML to Python values; ValueError worded as Go's yaml decoder words it
    (``yaml: line 1: did not find expected ',' or ']'``, ``yaml: anchor 'a' value
    contains itself``)."""
    loader = _CountingLoader(body)
    try:
        # the first document, as go-yaml's Unmarshal reads (what follows is not read)
        value = loader.get_data() if loader.check_data() else None
    except _TooManyNodes:
        raise ValueError(
            f"yaml: document contains too many nodes (more than {MAX_YAML_BODY_NODES})"
        ) from None
    except yaml.composer.ComposerError as e:
        if str(e.problem).startswith("found undefined alias"):
            name = _undefined_alias(body)
            raise ValueError(f"yaml: unknown anchor '{name}' referenced") from None
        raise ValueError(_go_yaml_error(e)) from None
    except (yaml.MarkedYAMLError, yaml.reader.ReaderError) as e:
        raise ValueError(_go_yaml_error(e)) from None
    except yaml.YAMLError as e:
        raise ValueError(f"yaml: {e}") from None
    except RecursionError:
        raise ValueError("yaml: exceeded max depth") from None
    finally:
        loader.dispose()
    if b"*" not in body:  # no alias: nothing shared, nothing contains itself
        return value
    try:
        size = _expanded_size(value)
    except _SelfContaining:
        anchor = _self_containing_anchor(body)
        raise ValueError(f"yaml: anchor '{anchor}' value contains itself") from None
    if size > MAX_YAML_NODES:
        raise ValueError("yaml: document contains excessive aliasing")
    return value


def _undefined_alias(body: bytes) -> str:
    """The first alias of an anchor not defined before it."""
    defined: set[str] = set()
    for event in yaml.parse(body, Loader=_SafeLoader):
        if isinstance(event, yaml.NodeEvent) and not isinstance(event, yaml.AliasEvent):
            if event.anchor is not None:
                defined.add(event.anchor)
        elif isinstance(event, yaml.AliasEvent) and event.anchor not in defined:
            return str(event.anchor)
    return ""


def _self_containing_anchor(body: bytes) -> str:
    """The first anchor aliased inside its own value (the document parses: its events
    are walked again, keeping the anchors of the collections still open)."""
    open_anchors: list[str | None] = []
    for event in yaml.parse(body, Loader=_SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            open_anchors.append(event.anchor)
        elif isinstance(event, yaml.CollectionEndEvent):
            open_anchors.pop()
        elif isinstance(event, yaml.AliasEvent) and event.anchor in open_anchors:
            return str(event.anchor)
    return ""


def decode_object(
    body: bytes, media_type: str, resource: ResourceInfo, warnings: list[str] | None = None
) -> JSONObject:
    """Decode a create/update body for ``resource``.

    415 for a media type other than JSON/YAML/protobuf (protobuf only for kinds the
    protobuf schema knows); 400 for a malformed body, a non-object, or a kind/apiVersion
    that does not fit the endpoint. A missing kind or apiVersion is filled in from the
    endpoint (the decoder's default GVK). Protobuf fields the schema does not know are
    reported in ``warnings``.
    """
    if media_type == PROTOBUF_TYPE:
        obj = protobuf.decode_body(body, resource, BODY_TYPES, warnings, _summarize)
        check_kind(obj, resource)
        return obj
    if media_type not in BODY_TYPES:
        raise unsupported_body_type(media_type, body_types(resource))
    try:
        obj = decode_structured(body, media_type)
    except ValueError as e:
        # JSON fails where the decoder looks for version/kind; YAML before, converting
        stage = "" if media_type == YAML_TYPE else "couldn't get version/kind; "
        raise apierrors.bad_request(
            f"the object provided is unrecognized (must be of type {resource.kind}): "
            f"{stage}{e} ({_summarize(body)})"
        ) from None
    if obj is None:  # a null (or, in YAML, empty) document decodes into the empty object
        obj = {}
    if not isinstance(obj, dict):
        raise apierrors.bad_request(
            f"the object provided is unrecognized (must be of type {resource.kind}): "
            f"couldn't get version/kind; json parse error: expected an object "
            f"({_summarize(body)})"
        )
    check_kind(obj, resource)
    _check_metadata(obj, resource.kind, resource.version)
    return obj


_GO_JSON_TYPES = {str: "string", int: "number", float: "number", bool: "bool", list: "array"}


def _check_metadata(obj: JSONObject, kind: str, version: str) -> None:
    """400 as Go's decoder when ``metadata`` is not an object (null is no metadata)."""
    meta = obj.get("metadata")
    if meta is None or isinstance(meta, dict):
        return
    go_type = _GO_JSON_TYPES.get(type(meta), "value")
    raise apierrors.bad_request(
        f'{kind} in version "{version}" cannot be handled as a {kind}: json: cannot '
        f"unmarshal {go_type} into Go struct field {kind}.metadata of type v1.ObjectMeta"
    )


def decode_kind(body: bytes, media_type: str, api_version: str, kind: str) -> JSONObject:
    """Decode the body of an endpoint that takes one ``kind`` but is no resource of the
    registry (``serviceaccounts/<name>/token``'s TokenRequest): JSON, YAML or protobuf;
    400/415 as ``decode_object``. A missing kind or apiVersion is defaulted."""
    if media_type == PROTOBUF_TYPE:
        group = api_version.rpartition("/")[0]
        target = (group, api_version, kind)
        accepted = (*BODY_TYPES, PROTOBUF_TYPE)
        obj = protobuf.decode_kind_body(body, target, accepted, None, _summarize)
    elif media_type not in BODY_TYPES:
        raise unsupported_body_type(media_type, (*BODY_TYPES, PROTOBUF_TYPE))
    else:
        try:
            obj = decode_structured(body, media_type) if body else {}
        except ValueError as e:
            raise apierrors.bad_request(str(e)) from None
        if not isinstance(obj, dict):
            raise apierrors.bad_request(f"the body of a {kind} must be an object")
        _check_metadata(obj, kind, api_version.rpartition("/")[2])
    obj.setdefault("apiVersion", api_version)
    obj.setdefault("kind", kind)
    return obj
