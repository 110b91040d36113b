"""The real kubectl against a server whose etcd is stopped: it gets one answer and gives
up, as it does against kube-apiserver (504 Timeout without Retry-After, which client-go
does not retry), instead of retrying the same request ten times."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import orjson
import pytest

from lab.etcd import EtcdCluster
from tests.e2e.conftest import KUBECTL, write_kubeconfig
from tests.integration.conftest import start_server

pytestmark = pytest.mark.etcd


def _pod_lists(log: str) -> list[dict[str, object]]:
    """The access-log entries of the pods LISTs kubectl sent."""
    entries = []
    for line in log.splitlines():
        _, _, text = line.partition("watchcache.access: ")
        if text:
            entry = orjson.loads(text)
            if entry["verb"] == "LIST" and "/pods" in str(entry["path"]):
                entries.append(entry)
    return entries


async def test_kubectl_get_gives_up_after_one_timeout(
    etcd_own: EtcdCluster, tmp_path: Path
) -> None:
    flags = ("--watch-cache=false", "--etcd-request-timeout=1s", "--etcd-dial-timeout=1s")
    srv = start_server(etcd_own.endpoints, None, *flags)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", srv.url)
    await asyncio.to_thread(etcd_own.stop_member, 0)
    try:
        proc = await asyncio.to_thread(
            subprocess.run,
            [str(KUBECTL), f"--kubeconfig={kubeconfig}", "get", "pods"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "HOME": str(tmp_path)},  # kubectl's discovery cache
        )
    finally:
        srv.stop()
        await asyncio.to_thread(etcd_own.start_member, 0)
    assert proc.returncode == 1
    assert "Error from server (Timeout)" in proc.stderr, proc.stderr
    lists = _pod_lists(srv.log())
    assert [entry["code"] for entry in lists] == [504], lists
