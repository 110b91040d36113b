"""docker-compose.yml, deploy/Dockerfile and the monitoring provisioning, checked without
a Docker engine (the stack itself runs in tests/compose, ``make compose-test``): the
compose file is validated by ``docker-compose config -q`` and by reading it; the
Dockerfile's commands are checked against the real CLI; and the same topology — a
3-member etcd cluster and watchcache started with the Dockerfile's own CMD flags — runs
without Docker and answers a LIST and the image's HEALTHCHECK.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from lab.apiserver import APIServer
from lab.etcd import EtcdCluster, free_port

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
ETCD_IMAGE = re.compile(
    r"^\$\{ETCD_IMAGE:-(quay\.io/coreos/etcd|gcr\.io/etcd-development/etcd):v3\.5\.\d+\}$"
)
REPLICAS = ("watchcache-a", "watchcache-b")
DASHBOARD_METRICS = (
    "apiserver_request_total", "apiserver_request_duration_seconds",
    "apiserver_storage_list_fetched_objects_total", "apiserver_storage_list_returned_objects_total",
    "apiserver_cache_list_fetched_objects_total", "apiserver_cache_list_returned_objects_total",
)  # fmt: skip


def _post(url: str, body: bytes) -> int:
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json"})  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return doc


def dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            ins, _, rest = line.partition(" ")
            out.append((ins.upper(), rest.strip()))
    return out


def instruction(name: str) -> list[str]:
    return [rest for ins, rest in dockerfile() if ins == name]


def etcd_services() -> dict[str, dict[str, Any]]:
    return {k: v for k, v in compose()["services"].items() if k.startswith("etcd-")}


def test_compose_config_is_valid_and_topology_consistent() -> None:
    if shutil.which("docker-compose"):
        r = subprocess.run(["docker-compose", "-f", str(COMPOSE), "config", "-q"],
                           capture_output=True, text=True, cwd=ROOT)  # fmt: skip
        assert r.returncode == 0, r.stderr
    services = compose()["services"]
    etcds = etcd_services()
    assert sorted(etcds) == ["etcd-0", "etcd-1", "etcd-2"]
    for name, svc in etcds.items():
        assert ETCD_IMAGE.match(svc["image"]), svc["image"]
        env = svc["environment"]
        members = dict(m.split("=", 1) for m in env["ETCD_INITIAL_CLUSTER"].split(","))
        assert members == {n: f"http://{n}:2380" for n in etcds}
        assert f"--name={name}" in svc["command"]
        assert f"--advertise-client-urls=http://{name}:2379" in svc["command"]
    for replica in REPLICAS:
        wc = services[replica]
        assert wc["build"]["dockerfile"] == "deploy/Dockerfile"
        assert wc["build"]["args"]["PYTHON_IMAGE"] == "${PYTHON_IMAGE:-python:3.11-slim}"
        servers = next(a for a in wc["command"] if a.startswith("--etcd-servers="))
        assert servers.split("=", 1)[1].split(",") == [f"http://{n}:2379" for n in etcds]
        assert set(wc["depends_on"]) == {*etcds, "pki"}
        assert wc["depends_on"]["pki"] == {"condition": "service_completed_successfully"}
        assert "ports" not in wc  # reached through the balancer only
    lb = services["apiserver"]
    assert set(lb["depends_on"]) == set(REPLICAS)
    # every published port is on loopback and overridable
    for svc in services.values():
        for port in svc.get("ports", []):
            assert re.match(r"^127\.0\.0\.1:\$\{[A-Z_]+_PORT:-\d+\}:\d+$", port), port
    assert services["grafana"]["profiles"] == ["grafana"]
    bench = services["bench"]
    assert bench["profiles"] == ["bench"] and bench["command"][0] == "bench"
    for svc in services.values():
        for vol in svc.get("volumes", []):
            src = vol.split(":")[0]
            if src.startswith("./") and src != "./bench-results":
                assert (ROOT / src).exists(), src


def test_bench_profile_flags_parse_with_the_real_cli() -> None:
    from lab.bench import build_parser

    # ${VAR:-default} as docker-compose interpolates it with VAR unset
    argv = [re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", a)
            for a in compose()["services"]["bench"]["command"][1:]]  # fmt: skip
    a = build_parser().parse_args(argv)
    assert (a.pods, a.nodes) == (10000, 100)
    assert a.server == "http://127.0.0.1:8080" and a.etcd_servers.count(",") == 2
    # ... which is replica A's loopback plain port: the bench runs in A's network
    assert compose()["services"]["bench"]["network_mode"] == "service:watchcache-a"


def test_prometheus_scrapes_watchcache_and_every_etcd() -> None:
    prom = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    jobs = {j["job_name"]: j for j in prom["scrape_configs"]}
    targets = {j: [t for sc in jobs[j]["static_configs"] for t in sc["targets"]] for j in jobs}
    assert targets["watchcache"] == [f"{r}:6443" for r in REPLICAS]
    tls = jobs["watchcache"]["tls_config"]
    assert jobs["watchcache"]["scheme"] == "https" and tls["cert_file"] == "/pki/prometheus.crt"
    metrics_port = etcd_services()["etcd-0"]["environment"]["ETCD_LISTEN_METRICS_URLS"]
    port = metrics_port.rsplit(":", 1)[1]
    assert sorted(targets["etcd"]) == [f"{n}:{port}" for n in sorted(etcd_services())]


def test_grafana_provisioning_and_dashboard() -> None:
    ds = yaml.safe_load((ROOT / "deploy/grafana/provisioning/datasources/prometheus.yml")
                        .read_text())["datasources"][0]  # fmt: skip
    assert ds["url"] == "http://prometheus:9090"
    prov = yaml.safe_load((ROOT / "deploy/grafana/provisioning/dashboards/watchcache.yml")
                          .read_text())["providers"][0]  # fmt: skip
    mounts = compose()["services"]["grafana"]["volumes"]
    assert any(m.endswith(":" + prov["options"]["path"] + ":ro") for m in mounts)
    dash = json.loads((ROOT / "deploy/grafana/dashboards/watchcache.json").read_text())
    exprs = " ".join(t["expr"] for p in dash["panels"] for t in p.get("targets", []))
    for metric in DASHBOARD_METRICS:
        assert metric in exprs, metric
    uids = {t["datasource"]["uid"] for p in dash["panels"] for t in p.get("targets", [])}
    assert uids == {ds["uid"]}


def test_dockerfile_is_slim_nonroot_with_readyz_healthcheck() -> None:
    assert instruction("FROM") == ["${PYTHON_IMAGE}"]
    assert "PYTHON_IMAGE=python:3.11-slim" in instruction("ARG")
    users = instruction("USER")
    assert users and users[-1] not in ("root", "0")
    assert "/readyz" in instruction("HEALTHCHECK")[0]
    for src in instruction("COPY"):
        for part in src.split()[:-1]:
            assert (ROOT / part).exists(), part
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    installs = [r for r in instruction("RUN") if "pip install" in r]
    for extra in re.findall(r"\.\[([a-z,]+)\]", " ".join(installs)):
        assert set(extra.split(",")) <= set(extras["optional-dependencies"]), extra
    assert json.loads(instruction("ENTRYPOINT")[0]) == ["watchcache"]
    assert "watchcache" in extras["scripts"]
    # The real CLI accepts the image's default command and the replicas' command: HTTPS
    # for everyone, the plain port (the image's health check) on the container's loopback.
    from proxy.options.settings import load_settings

    cmd = json.loads(instruction("CMD")[0])
    assert cmd[0] == "serve"
    settings = load_settings(cmd[1:])
    assert list(settings.etcd_servers) == [f"http://etcd-{i}:2379" for i in range(3)]
    assert (settings.bind_address, settings.port) == ("0.0.0.0", 8080)
    for replica in REPLICAS:
        argv = [_interpolated(a) for a in compose()["services"][replica]["command"]]
        assert argv[0] == "serve"
        s = load_settings(argv[1:])
        assert (s.bind_address, s.secure_port) == ("0.0.0.0", 6443)
        assert (s.insecure_bind_address, s.port) == ("127.0.0.1", 8080)
        assert s.client_ca_file == "/pki/ca.crt" and s.token_auth_file == "/pki/tokens.csv"


def test_the_installed_package_holds_every_file_the_image_needs(tmp_path: Path) -> None:
    """The image installs the wheel, not the tree: every data file the code reads at run
    time must be in it (the CRD and APIService protos were not, and the image's server
    answered every protobuf body 415: kubectl 1.37's `auth whoami` sends one)."""
    # built from a copy holding what the Dockerfile copies: in the tree, setuptools would
    # also take what an editable install's egg-info lists, and leave build/ behind
    src = tmp_path / "src"
    src.mkdir()
    junk = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.so")  # the .so: built here
    for copied in instruction("COPY"):
        for part in copied.split()[:-1]:
            if (ROOT / part).is_dir() and not part.startswith("deploy/"):
                shutil.copytree(ROOT / part, src / part, ignore=junk)
            elif (ROOT / part).is_file():
                shutil.copy(ROOT / part, src / part)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(tmp_path), str(src)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("watchcache-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    needed = [
        str(p.relative_to(ROOT))
        for pattern in ("*.proto", "*.html", "*.yaml")
        for p in ROOT.glob(f"**/{pattern}")
        if p.relative_to(ROOT).parts[0] in ("proxy", "etcdclient", "storage", "cacher", "lab")
    ]
    assert any(n.startswith("storage/protobuf/proto/") for n in needed)
    assert sorted(set(needed) - names) == []
    # the C protobuf decoder, compiled by setup.py (which the Dockerfile copies)
    assert [n for n in names if n.startswith("storage/protobuf/_cdecode.")], sorted(names)


def _interpolated(arg: str) -> str:
    """``arg`` with ``${VAR:-default}`` replaced as docker-compose interpolates it (the
    variable when set and not empty, else the default)."""
    return re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: os.environ.get(m[1]) or m[2], arg)


@pytest.mark.etcd
@pytest.mark.cluster
def test_same_topology_without_docker(etcd_cluster3: EtcdCluster, tmp_path: Path) -> None:
    """The Dockerfile's CMD, with etcd-N replaced by a real 3-member cluster, serves."""
    args: list[str] = json.loads(instruction("CMD")[0])
    port = free_port()
    hosts = {f"http://etcd-{i}:2379": url for i, url in enumerate(etcd_cluster3.endpoints)}
    argv = []
    for a in args[1:]:
        for host, url in hosts.items():
            a = a.replace(host, url)
        a = a.replace("--bind-address=0.0.0.0", "--bind-address=127.0.0.1")
        argv.append(a.replace("--port=8080", f"--port={port}"))
    assert argv[0].count("127.0.0.1") == 3
    server = APIServer(etcd_cluster3.endpoints, port=port, log_path=tmp_path / "server.log",
                       argv=tuple(argv))  # fmt: skip
    with server:
        ns = json.dumps({"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": "default"}}).encode()  # fmt: skip
        assert _post(f"{server.url}/api/v1/namespaces", ns) in (201, 409)
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "compose", "namespace": "default"},
                           "data": {"k": "v"}}).encode()  # fmt: skip
        assert _post(f"{server.url}/api/v1/namespaces/default/configmaps", body) == 201
        # (kube-system holds the server's own extension-apiserver-authentication)
        with urllib.request.urlopen(
            f"{server.url}/api/v1/namespaces/default/configmaps", timeout=10
        ) as r:
            items = json.loads(r.read())["items"]
        assert [i["metadata"]["name"] for i in items] == ["compose"]
        # The image's HEALTHCHECK command, pointed at this server.
        check = json.loads(re.sub(r"^.*?CMD\s+", "", instruction("HEALTHCHECK")[0]))
        check = [c.replace("127.0.0.1:8080", f"127.0.0.1:{port}") for c in check]
        check[0] = sys.executable
        assert subprocess.run(check, timeout=30).returncode == 0, shlex.join(check)
