"""``--enable-admission-plugins`` / ``--disable-admission-plugins``: upstream's default-on
set, its order whatever the flags' order, its words for an unknown plugin."""

from __future__ import annotations

import subprocess

import aiohttp
import pytest

from lab.etcd import EtcdCluster
from proxy.admission.chain import DEFAULT_ON, ORDERED_PLUGINS, enabled_plugins
from tests.integration.conftest import PYTHON, REPO, start_server

pytestmark = pytest.mark.etcd


def test_default_on_in_upstream_order() -> None:
    names = enabled_plugins((), ())
    assert names[:5] == ["NamespaceLifecycle", "LimitRanger", "ServiceAccount",
                         "TaintNodesByCondition", "PodSecurity"]
    assert names[-4:] == ["MutatingAdmissionWebhook", "ValidatingAdmissionPolicy",
                          "ValidatingAdmissionWebhook", "ResourceQuota"]
    assert set(names) == DEFAULT_ON
    flagged = enabled_plugins(("AlwaysDeny", "AlwaysAdmit"), ("PodSecurity",))
    assert flagged[0] == "AlwaysAdmit" and flagged[-1] == "AlwaysDeny"
    assert "PodSecurity" not in flagged
    assert flagged == [n for n in ORDERED_PLUGINS if n in flagged]
    # named in both: enabled, as upstream
    assert "LimitRanger" in enabled_plugins(("LimitRanger",), ("LimitRanger",))


def test_unknown_plugin_is_refused_at_start() -> None:
    out = subprocess.run([str(PYTHON), "-m", "proxy.cli", "serve", "--etcd-servers=x",
                          "--port=0", "--enable-admission-plugins=NoSuchPlugin"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert 'enable-admission-plugins plugin "NoSuchPlugin" is unknown' in out.stderr


async def test_always_deny_and_disabled_lifecycle(etcd: EtcdCluster) -> None:
    with start_server(etcd.endpoints, None, "--enable-admission-plugins=AlwaysDeny",
                      wait_ready=False) as proc:  # fmt: skip
        async with aiohttp.ClientSession() as http:
            async with http.post(f"{proc.url}/api/v1/namespaces",
                                 json={"metadata": {"name": "c"}}) as resp:  # fmt: skip
                body = await resp.json()
            async with http.get(f"{proc.url}/readyz?verbose") as ready:
                text = await ready.text()
    assert resp.status == 403
    assert body["message"] == (
        'namespaces "c" is forbidden: admission control is denying all modifications')
    # the server's own writes are admitted too (the loopback client), so, as upstream's,
    # it never creates its system namespaces and never gets ready
    assert ready.status == 500
    assert "[-]poststarthook/start-system-namespaces-controller failed: reason withheld" in text
    with start_server(etcd.endpoints, None,
                      "--disable-admission-plugins=NamespaceLifecycle") as proc:
        async with (
            aiohttp.ClientSession() as http,
            http.delete(f"{proc.url}/api/v1/namespaces/kube-public") as resp,
        ):
            assert resp.status == 200  # not immortal without the plugin, as upstream
