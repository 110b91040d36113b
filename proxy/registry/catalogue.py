"""The catalogue of Kubernetes' built-in resources (k8s.io/api's kinds): kind, plural,
scope, verbs and subresources of each, at every version the API defines.

It comes from the maintained ``lightkube-models`` package. Its ``lightkube.resources``
modules import ``lightkube.core`` (the client, not installed), so they are read as
source: each resource class carries a literal ``_api_info = res.ApiInfo(...)``
expression that is evaluated with ``ast.literal_eval`` on its arguments, no import.

The catalogue says what a kind *is*; which resources a server serves, and what their
REST storages declare beyond it (short names, categories, create-on-update, the
subresources served), is the serving package's (kube's in ``proxy.kube.resources``).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from proxy.registry.resources import ResourceInfo

__all__ = ["catalogued", "load_catalogue"]

# lightkube's verb names -> the API verbs discovery reports.
_VERBS = {
    "post": "create",
    "put": "update",
    "patch": "patch",
    "get": "get",
    "list": "list",
    "watch": "watch",
    "delete": "delete",
    "deletecollection": "deletecollection",
}


@dataclass(frozen=True, slots=True)
class _Entry:
    """One ``_api_info`` read from the catalogue's source."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    verbs: tuple[str, ...]
    parent_kind: str | None
    action: str | None


def _resources_dir() -> Path:
    spec = importlib.util.find_spec("lightkube.resources")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("lightkube-models is not installed (lightkube.resources missing)")
    return Path(next(iter(spec.submodule_search_locations)))


def _literal_kwargs(call: ast.Call) -> dict[str, object]:
    """Keyword arguments of ``res.ApiInfo(...)``; ``res.ResourceDef(g, v, k)`` becomes a tuple."""
    out: dict[str, object] = {}
    for kw in call.keywords:
        value = kw.value
        if isinstance(value, ast.Call):
            out[kw.arg or ""] = tuple(ast.literal_eval(a) for a in value.args)
        else:
            out[kw.arg or ""] = ast.literal_eval(value)
    return out


def _entries_of(source: str) -> Iterator[_Entry]:
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = {ast.unparse(b) for b in node.bases}
        namespaced = any(b.startswith("res.Namespaced") for b in bases)
        for stmt in node.body:
            if not (
                isinstance(stmt, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "_api_info" for t in stmt.targets)
                and isinstance(stmt.value, ast.Call)
            ):
                continue
            kw = _literal_kwargs(stmt.value)
            resource_def = kw["resource"]
            assert isinstance(resource_def, tuple) and len(resource_def) == 3
            group, version, kind = (str(x) for x in resource_def)
            parent = kw.get("parent")
            yield _Entry(
                group=str(group),
                version=str(version),
                kind=str(kind),
                plural=str(kw["plural"]),
                namespaced=namespaced,
                verbs=tuple(str(v) for v in kw.get("verbs", ())),  # type: ignore[attr-defined]
                parent_kind=str(parent[2]) if isinstance(parent, tuple) else None,
                action=str(kw["action"]) if kw.get("action") else None,
            )


@functools.cache
def load_catalogue() -> tuple[ResourceInfo, ...]:
    """Every top-level resource of the catalogue, with its subresource names."""
    entries: list[_Entry] = []
    for path in sorted(_resources_dir().glob("*.py")):
        entries.extend(_entries_of(path.read_text(encoding="utf-8")))
    subs: dict[tuple[str, str, str], list[str]] = {}
    for e in entries:
        if e.action is not None:
            # a subresource's "resource" may be another kind (Scale); the parent's group
            # and version are those of the plural it hangs under.
            subs.setdefault((e.version, e.plural, e.parent_kind or ""), []).append(e.action)
    out: list[ResourceInfo] = []
    for e in entries:
        if e.action is not None:
            continue
        verbs = sorted({_VERBS[v] for v in e.verbs if v in _VERBS})
        out.append(
            ResourceInfo(
                group=e.group,
                version=e.version,
                kind=e.kind,
                plural=e.plural,
                namespaced=e.namespaced,
                verbs=tuple(verbs),
                subresources=tuple(sorted(subs.get((e.version, e.plural, e.kind), ()))),
            )
        )
    return tuple(out)


def catalogued(
    group: str, version: str, plural: str, catalogue: Iterable[ResourceInfo] | None = None
) -> ResourceInfo:
    """The catalogue's entry of ``plural`` at ``group``/``version``; a name missing
    from it is an error (a served resource the catalogue does not know is a typo)."""
    for info in catalogue if catalogue is not None else load_catalogue():
        if (info.group, info.version, info.plural) == (group, version, plural):
            return info
    raise LookupError(
        f"resource {(group, version, plural)} is not in the lightkube-models catalogue"
    )
