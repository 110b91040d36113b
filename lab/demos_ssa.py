"""The lab's server-side apply demo (``watchcache lab demo ssa``), shaped like the
course text's example: a Deployment named ``ssa-demo`` written by two managers.

- ``platform-team`` applies it (create-on-apply) and owns what it sent;
- ``autoscaler`` applies only ``spec.replicas``: 409, the field is another manager's;
- ``app-team`` applies the same image: no conflict, the field is shared;
- ``autoscaler`` applies again with ``force=true`` (``kubectl apply --server-side
  --force-conflicts``): it takes ``spec.replicas`` from platform-team;
- platform-team applies again without ``replicas``: the field stays (autoscaler owns it).

After each step the demo prints, from ``metadata.managedFields``, which manager owns
which fields. The Deployment is deleted at the end.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import orjson

from lab.observe import Observation
from proxy.fieldmanager.fieldpath import Set, path_string

if TYPE_CHECKING:
    from lab.demo_context import DemoContext

__all__ = ["ssa"]

NAME = "ssa-demo"
PATH = f"/apis/apps/v1/namespaces/default/deployments/{NAME}"
APPLY = "application/apply-patch+yaml"


def _config(replicas: int | None = None, image: str = "nginx:1.25") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": NAME}},
        "template": {
            "metadata": {"labels": {"app": NAME}},
            "spec": {"containers": [{"name": "web", "image": image}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": NAME, "labels": {"app": NAME}}, "spec": spec}  # fmt: skip


def _only_replicas(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": NAME},
            "spec": {"replicas": replicas}}  # fmt: skip


async def _apply(
    ctx: DemoContext, manager: str, config: dict[str, Any], force: bool = False
) -> Observation:
    """PATCH with ``application/apply-patch+yaml`` as ``manager`` (JSON is YAML)."""
    query = f"?fieldManager={manager}" + ("&force=true" if force else "")
    t0 = time.perf_counter()
    headers = {"Content-Type": APPLY}
    async with ctx.session.patch(ctx.base + PATH + query, data=orjson.dumps(config),
                                 headers=headers) as r:  # fmt: skip
        raw = await r.read()
        status = r.status
    o = Observation("PATCH", PATH + query, status, time.perf_counter() - t0, len(raw),
                    None, None, None, orjson.loads(raw) if raw else None)  # fmt: skip
    return ctx.t.obs(o)


def owners(obj: dict[str, Any]) -> dict[str, list[str]]:
    """``manager (operation[, subresource])`` → the leaf fields it owns."""
    out: dict[str, list[str]] = {}
    for e in (obj.get("metadata") or {}).get("managedFields") or []:
        who = f"{e['manager']} ({e['operation']}"
        who += f", {e['subresource']})" if e.get("subresource") else ")"
        out[who] = [path_string(p) for p in Set.from_fields_v1(e.get("fieldsV1") or {}).leaves()]
    return out


def _show(ctx: DemoContext, obj: dict[str, Any]) -> dict[str, list[str]]:
    found = owners(obj)
    for who, paths in found.items():
        ctx.t.say(f"    {who}: {', '.join(paths)}")
    return found


def _owns(found: dict[str, list[str]], manager: str, path: str) -> bool:
    return any(who.startswith(f"{manager} (") and path in paths for who, paths in found.items())


async def ssa(ctx: DemoContext) -> None:
    t = ctx.t
    t.title("server-side apply: two managers, a conflict, --force-conflicts, managedFields")
    await ctx.session.delete(ctx.base + PATH)  # a leftover from an interrupted run
    replicas, image = ".spec.replicas", '.spec.template.spec.containers[name="web"].image'

    created = await _apply(ctx, "platform-team", _config(replicas=2))
    t.check("platform-team's apply creates the Deployment (create-on-apply: 201)",
            created.status == 201, str(created.status))  # fmt: skip
    found = _show(ctx, created.body or {})
    t.check("platform-team owns .spec.replicas and the image", _owns(found, "platform-team",
            replicas) and _owns(found, "platform-team", image))  # fmt: skip

    conflict = await _apply(ctx, "autoscaler", _only_replicas(5))
    expected = 'Apply failed with 1 conflict: conflict with "platform-team": .spec.replicas'
    t.check("autoscaler changing .spec.replicas conflicts: 409", conflict.status == 409 and
            conflict.message == expected, conflict.message)  # fmt: skip
    causes = ((conflict.body or {}).get("details") or {}).get("causes") or []
    for cause in causes:
        t.say(f"    cause: {cause.get('field')} {cause.get('message')}")

    shared = await _apply(ctx, "app-team", _config(image="nginx:1.25"))
    found = _show(ctx, shared.body or {})
    t.check("app-team sending the same image is no conflict: the image is shared",
            shared.status == 200 and _owns(found, "app-team", image)
            and _owns(found, "platform-team", image))  # fmt: skip

    forced = await _apply(ctx, "autoscaler", _only_replicas(5), force=True)
    found = _show(ctx, forced.body or {})
    spec = (forced.body or {}).get("spec") or {}
    t.check("with force=true (--force-conflicts) autoscaler takes .spec.replicas",
            forced.status == 200 and spec.get("replicas") == 5 and _owns(found, "autoscaler",
            replicas) and not _owns(found, "platform-team", replicas))  # fmt: skip

    again = await _apply(ctx, "platform-team", _config())
    kept = ((again.body or {}).get("spec") or {}).get("replicas")
    t.check("platform-team no longer sending replicas leaves them: autoscaler owns them",
            again.status == 200 and kept == 5, f"replicas={kept}")  # fmt: skip
    await ctx.session.delete(ctx.base + PATH)
    t.explain("every write records its manager in metadata.managedFields; an apply may only "
              "change fields it owns or that nobody else owns, sending the same value "
              "shares a field, force takes it over, and an applier's omitted fields are "
              "removed only when no one else owns them.")  # fmt: skip
