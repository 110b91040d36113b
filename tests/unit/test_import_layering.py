"""The import layering of the product packages, checked as upstream's import-boss checks
its ``.import-restrictions`` files: the graph of every import between the modules of
etcdclient, storage, cacher, proxy and lab, read from the source (imports under
``TYPE_CHECKING`` and inside functions included), must have no cycle between files and
no import against the declared direction (``LAYERS``, see docs/architecture.md).

What is still against the direction is listed in ``KNOWN_VIOLATIONS``: the test fails
when an edge appears that is not listed *and* when a listed edge is gone, so fixing one
means removing it here (the list only shrinks).

Imports by name at run time (``proxy/cli.py`` dispatches ``watchcache lab``, ``seed``,
``bench``... to lab's modules with ``importlib``) are not imports of the graph: the one
console script serves both floors by design.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("etcdclient", "storage", "cacher", "proxy", "lab")

# The declared direction, lowest first. A module belongs to the component of the
# longest prefix listed here; it may import its own component and any component of a
# lower layer. Components of one layer are peers: none imports another.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("etcdclient",),  # the etcd v3 client: nothing of ours
    ("storage",),  # Kubernetes storage semantics over etcd
    ("cacher",),  # the watch cache, behind the storage interface
    ("proxy.apierrors",),  # Status errors (a leaf of the server library)
    # k8s.io/apimachinery's kind-independent validation (field errors, names,
    # ObjectMeta) and quantities
    ("proxy.apimachinery",),
    # the server library's leaves, peers: request-scoped primitives (RequestInfo, user,
    # audit annotations, warnings, the parsed options) that every stage reads; the CEL
    # engine (k8s.io/apiserver's cel, over apimachinery's quantities); the loopback
    # client (client-go's rest client, over HTTP alone); the OpenAPI documents and the
    # built-in kinds' schemas
    ("proxy.request", "proxy.cel", "proxy.loopback", "proxy.openapi"),
    # over them: client-go's machinery (shared informers and work queues, leader
    # election), and, over the schemas, the Table printers, the field manager
    # (structured-merge-diff and managedFields) and the strategic merge patch
    (
        "proxy.informer",
        "proxy.leaderelection",
        "proxy.printers",
        "proxy.fieldmanager",
        "proxy.patch",
    ),
    # the generic registry: the Store, the Strategy protocol, the REST storages'
    # contracts, each resource's storage (never a web request: see below)
    ("proxy.registry",),
    ("proxy",),  # the rest of the generic server library (k8s.io/apiserver)
    # kube's built-in kinds, CRDs, aggregation: peers above the library
    ("proxy.kube", "proxy.apiextensions", "proxy.aggregator"),
    ("proxy.app", "proxy.cli"),  # the composition root and the command line
    ("lab",),  # the lab, bench and simulated cluster, on top
)

# (importer, imported) edges against LAYERS that remain, each with who removes it.
KNOWN_VIOLATIONS: frozenset[tuple[str, str]] = frozenset()

# Third-party packages a component may not import (import-boss restricts those too).
# Below the HTTP layer nothing knows aiohttp; a registry works on plain objects and a
# Context, never a web request (issue 22).
EXTERNAL_RESTRICTIONS: dict[str, tuple[str, ...]] = {
    "etcdclient": ("aiohttp",),
    "storage": ("aiohttp",),
    "cacher": ("aiohttp",),
    "proxy.apimachinery": ("aiohttp",),
    "proxy.registry": ("aiohttp",),
}

# (module, package) imports against EXTERNAL_RESTRICTIONS that remain (none: scale and
# pods/binding are REST storages over plain objects)
KNOWN_EXTERNAL_VIOLATIONS: frozenset[tuple[str, str]] = frozenset()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


def _resolve(name: str) -> str | None:
    """The module ``name`` is, or lives in (``a.b.C`` -> ``a.b``); None outside ours."""
    modules = _modules()
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported(source: str, package: str) -> Iterator[tuple[str, int]]:
    """(absolute dotted name, line) of every import statement of ``source`` (a module of
    ``package``), wherever it stands: top level, under ``TYPE_CHECKING``, in a function.
    ``from a import b`` gives ``a.b``: the module a.b, or the name b of module a."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                yield f"{base}.{alias.name}", node.lineno


@cache
def _imports_by_module() -> dict[str, list[tuple[str, int]]]:
    found: dict[str, list[tuple[str, int]]] = {}
    for module, path in _modules().items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found[module] = list(_imported(path.read_text(), package))
    return found


@cache
def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: first line importing it}, self-imports left out."""
    graph: dict[str, dict[str, int]] = {}
    for module, names in _imports_by_module().items():
        edges: dict[str, int] = {}
        for name, line in names:
            target = _resolve(name)
            if target is not None and target != module:
                edges.setdefault(target, line)
        graph[module] = edges
    return graph


def _forbidden(module: str) -> set[str]:
    return {
        package
        for prefix, packages in EXTERNAL_RESTRICTIONS.items()
        if module == prefix or module.startswith(prefix + ".")
        for package in packages
    }


def external_violations() -> dict[tuple[str, str], int]:
    """(module, distribution) -> line, for every import ``EXTERNAL_RESTRICTIONS`` forbids."""
    found: dict[tuple[str, str], int] = {}
    for module, names in _imports_by_module().items():
        forbidden = _forbidden(module)
        for name, line in names:
            top = name.partition(".")[0]
            if top in forbidden:
                found.setdefault((module, top), line)
    return found


def _component(module: str) -> tuple[int, str]:
    """(layer index, component) of ``module``: the longest matching prefix."""
    best: tuple[int, str] = (-1, "")
    for rank, components in enumerate(LAYERS):
        for component in components:
            if (module == component or module.startswith(component + ".")) and len(
                component
            ) > len(best[1]):
                best = (rank, component)
    assert best[1], f"{module} is in no layer: add its package to LAYERS"
    return best


def allowed(importer: str, imported: str) -> bool:
    (rank, component), (to_rank, to_component) = _component(importer), _component(imported)
    return component == to_component or to_rank < rank


def violations() -> dict[tuple[str, str], int]:
    """(importer, imported) -> line, for every import against LAYERS."""
    return {
        (module, target): line
        for module, edges in import_graph().items()
        for target, line in edges.items()
        if not allowed(module, target)
    }


def cycles(graph: Mapping[str, Mapping[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one file (Tarjan's algorithm,
    iterative: the graph is deep enough to reach Python's recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _edges_of(component: list[str]) -> list[str]:
    members = set(component)
    graph = import_graph()
    return [
        f"  {module}:{line} -> {target}"
        for module in component
        for target, line in sorted(graph[module].items())
        if target in members
    ]


def test_every_module_has_a_layer() -> None:
    unplaced = [m for m in import_graph() if not any(
        m == c or m.startswith(c + ".") for layer in LAYERS for c in layer
    )]  # fmt: skip
    assert unplaced == []


def test_no_import_cycle_between_files() -> None:
    found = cycles(import_graph())
    report = "\n".join(
        f"{len(c)} files: {', '.join(c)}\n" + "\n".join(_edges_of(c)) for c in found
    )
    assert found == [], f"import cycles:\n{report}"


def test_imports_point_down_the_layers() -> None:
    found = violations()
    new = sorted(set(found) - KNOWN_VIOLATIONS)
    gone = sorted(KNOWN_VIOLATIONS - set(found))
    lines = [f"  {a}:{found[a, b]} -> {b}" for a, b in new]
    assert not new, "imports against LAYERS (docs/architecture.md):\n" + "\n".join(lines)
    assert not gone, f"fixed, remove from KNOWN_VIOLATIONS: {gone}"


_SAMPLE = """
from __future__ import annotations
from typing import TYPE_CHECKING
import etcdclient.errors
from storage import interfaces
from . import dry_run
from .list_options import ListOptions
if TYPE_CHECKING:
    from proxy.registry.store import Store
def late() -> None:
    from cacher.cacher import Cacher
import json
"""


def test_no_forbidden_third_party_import() -> None:
    found = external_violations()
    new = sorted(set(found) - KNOWN_EXTERNAL_VIOLATIONS)
    gone = sorted(KNOWN_EXTERNAL_VIOLATIONS - set(found))
    lines = [f"  {m}:{found[m, p]} imports {p}" for m, p in new]
    assert not new, "imports EXTERNAL_RESTRICTIONS forbids:\n" + "\n".join(lines)
    assert not gone, f"fixed, remove from KNOWN_EXTERNAL_VIOLATIONS: {gone}"


def test_the_checker_sees_what_it_must() -> None:
    """Every kind of import is an edge (TYPE_CHECKING and function-level ones included,
    relative ones resolved, outside modules left out), and the rule refuses an upward
    and a peer import: the tests above can fail."""
    names = [name for name, _ in _imported(_SAMPLE, "proxy.request")]
    assert "json" in names
    assert {_resolve(name) for name in names} - {None} == {
        "etcdclient.errors",
        "storage.interfaces",
        "proxy.request.dry_run",
        "proxy.request.list_options",
        "proxy.registry.store",
        "cacher.cacher",
    }
    assert not allowed("storage.interfaces", "cacher.cacher")
    assert not allowed("proxy.request.user", "proxy.endpoints.negotiation")
    assert not allowed("proxy.cel.library", "proxy.request.user")  # peers
    assert not allowed("proxy.loopback.client", "proxy.server.settings")
    assert allowed("proxy.admission.policy.validating", "proxy.cel.environment")
    assert not allowed("proxy.informer.shared_informer", "proxy.server.settings")
    assert allowed("proxy.leaderelection.leader_election", "proxy.loopback.client")
    assert not allowed("proxy.openapi.documents", "proxy.registry.resources")
    assert allowed("proxy.printers.columns", "proxy.openapi.schemas")
    assert not allowed("proxy.fieldmanager.typed", "proxy.registry.resources")
    assert not allowed("proxy.registry.storage_factory", "proxy.server.settings")
    assert allowed("proxy.endpoints.handlers.rest", "proxy.registry.store")
    assert not allowed("proxy.registry.store", "proxy.kube.validation.pod")
    assert not allowed("proxy.kube.validation.pod", "proxy.apiextensions.serving")
    assert not allowed("proxy.app.server", "lab.seed")
    assert allowed("proxy.app.server", "proxy.kube.printers")
    assert allowed("proxy.registry.store", "proxy.request.user")
    assert allowed("proxy.kube.validation.pod", "proxy.kube.validation.container")
    assert _forbidden("proxy.registry.store") == {"aiohttp"}
    assert _forbidden("proxy.endpoints.handlers.rest") == set()
    cyclic = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1, "d": 1}, "d": {}, "e": {"d": 1}}
    assert cycles(cyclic) == [["a", "b", "c"]]
