"""``watchcache bench-chain``: what the whole request pipeline costs on the two hottest
reads: authentication + RBAC + API Priority and Fairness + audit (+ whatever admission
the build enables: admission does not run on reads) against a baseline of the same
authentication with ``--authorization-mode=AlwaysAllow``, APF off
(``--enable-priority-and-fairness=false``: the max-in-flight filter) and no audit.

    watchcache bench-chain [--pods 2000] [--requests 1000] [--rounds 6] [--out FILE]
                           [--audit-level Metadata] [--etcd-servers URLS] [--quick]
                           [--event-loops | --audit-cost]

With ``--event-loops`` it compares instead the full chain on asyncio's event loop with
the same chain on uvloop's (``--event-loop=uvloop``, the optional ``uvloop`` extra).
With ``--audit-cost``, the full chain with its audit policy and log against the same
chain without them: what auditing every request at ``--audit-level`` costs.

The audit policy logs every request at ``--audit-level`` (Metadata by default: what a
production policy does for most reads) to a file. Measured as ``bench-auth`` measures
(server CPU per request from the process counters, client median latency), with its
seeding and rounds.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from lab.bench_auth import measure_modes, table

__all__ = ["main", "run"]

BASELINE, CHAIN = "baseline", "full chain"
NO_AUDIT = "chain without audit"
ASYNCIO, UVLOOP = "asyncio", "uvloop"


def _flags(mode: str, work: Path, level: str) -> tuple[str, ...]:
    if mode == BASELINE:
        return ("--authorization-mode=AlwaysAllow", "--enable-priority-and-fairness=false")
    if mode == NO_AUDIT:
        return ("--authorization-mode=RBAC", "--enable-priority-and-fairness=true")
    policy = work / "audit-policy.yaml"
    policy.write_text(f"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: {level}\n")
    return ("--authorization-mode=RBAC", "--enable-priority-and-fairness=true",
            f"--audit-policy-file={policy}", f"--audit-log-path={work / 'audit.log'}")  # fmt: skip


def run(
    pods: int, requests: int, rounds: int, etcd_servers: list[str], level: str,
    *, event_loops: bool = False, audit_cost: bool = False,
) -> dict[str, Any]:  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="bench-chain-"))
    if event_loops:
        chain = _flags(CHAIN, work, level)
        modes = {loop: (*chain, f"--event-loop={loop}") for loop in (ASYNCIO, UVLOOP)}
    else:
        compared = (NO_AUDIT, CHAIN) if audit_cost else (BASELINE, CHAIN)
        modes = {mode: _flags(mode, work, level) for mode in compared}
    return measure_modes(work, modes, pods, requests, rounds, etcd_servers)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="watchcache bench-chain", description=__doc__.split("\n\n")[0])
    p.add_argument("--pods", type=int, default=2000)
    p.add_argument("--requests", type=int, default=1000, help="requests per round and server")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--audit-level", default="Metadata",
                   choices=("Metadata", "Request", "RequestResponse"))  # fmt: skip
    p.add_argument("--etcd-servers", default="", help="use this etcd instead of starting one")
    p.add_argument("--out", type=Path, default=None, help="also write the results as JSON")
    p.add_argument("--quick", action="store_true", help="tiny, for tests")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--event-loops", action="store_true",
                       help="compare the full chain on asyncio's loop and on uvloop's")  # fmt: skip
    which.add_argument("--audit-cost", action="store_true",
                       help="compare the full chain with and without its audit policy")  # fmt: skip
    a = p.parse_args(argv)
    if a.quick:
        a.pods, a.requests, a.rounds = 40, 20, 1
    endpoints = [u for u in a.etcd_servers.split(",") if u]
    results = run(a.pods, a.requests, a.rounds, endpoints, a.audit_level,
                  event_loops=a.event_loops, audit_cost=a.audit_cost)  # fmt: skip
    if a.event_loops:
        print(table(results, ASYNCIO, UVLOOP))
    else:
        print(table(results, NO_AUDIT if a.audit_cost else BASELINE, CHAIN))
    if a.out is not None:
        a.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0
