"""The lab's live page (lab/page) in a real browser: Playwright driving Debian's
headless Chromium. The page loads, shows each watch cache and the requests as they
happen, its numbers move when a learner reads and writes, and the console stays clean.

Needs ``apt-get install chromium`` (``make page-test``); selected with ``-m browser``.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator

import orjson
import pytest

from lab import seed
from lab.etcd import EtcdCluster, free_port
from lab.process import stop_process
from tests.integration.conftest import ServerProcess, pod_body, start_server

pytestmark = [pytest.mark.etcd, pytest.mark.browser]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PODS_ROW = '#caches tr[data-resource="pods"]'


@pytest.fixture(scope="module")
def lab_page(etcd: EtcdCluster) -> Iterator[tuple[ServerProcess, str]]:
    with start_server(etcd.endpoints, None) as server:
        plan = seed.Plan(pods=12, nodes=2, namespaces=1, configmaps=1)
        assert asyncio.run(seed.seed_with_progress(server.url, plan, quiet=True)).ok
        port = free_port()
        page = subprocess.Popen([sys.executable, "-m", "lab.page", "--server", server.url,
                                 "--port", str(port)], stdout=subprocess.PIPE)  # fmt: skip
        try:
            assert page.stdout is not None
            assert b"lab page on" in page.stdout.readline()
            yield server, f"http://127.0.0.1:{port}/"
        finally:
            stop_process(page, 10)
            if page.stdout is not None:
                page.stdout.close()


def _get(url: str) -> None:
    with urllib.request.urlopen(url, timeout=10) as r:
        r.read()


def _post(url: str, body: dict[str, object]) -> None:
    req = urllib.request.Request(url, data=orjson.dumps(body), method="POST",
                                 headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=10) as r:
        r.read()


def test_the_page_shows_the_caches_and_requests_live(lab_page: tuple[ServerProcess, str]) -> None:
    from playwright.sync_api import sync_playwright

    server, url = lab_page
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url)
            page.wait_for_selector(PODS_ROW, timeout=15_000)
            assert page.inner_text(f"{PODS_ROW} td:nth-child(2)") == "12"
            # a learner's reads show up as they happen, with where they were served from
            _get(f"{server.url}/api/v1/pods?resourceVersion=0")
            _get(f"{server.url}/api/v1/pods?limit=5")
            page.wait_for_function(
                """() => [...document.querySelectorAll('#requests tr')].some(
                     r => r.textContent.includes('resourceVersion=0')
                          && r.textContent.includes('cache'))""", timeout=10_000)
            page.wait_for_function(
                """() => [...document.querySelectorAll('#requests tr')].some(
                     r => r.textContent.includes('limit=5') && r.textContent.includes('etcd'))""",
                timeout=10_000)
            # a write moves the pods cache's numbers
            ns = seed.namespace_name(0)
            _post(f"{server.url}/api/v1/namespaces/{ns}/pods", pod_body("page-pod"))
            page.wait_for_function(
                f"""() => document.querySelector('{PODS_ROW} td:nth-child(2)')
                         .textContent === '13'""", timeout=10_000)  # fmt: skip
            assert "etcd revision" in page.inner_text("#status")
        finally:
            browser.close()
    assert not errors
