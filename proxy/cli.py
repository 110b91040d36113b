"""The ``watchcache`` command line.

Each subcommand lives in the module that owns it; this file only parses the command
name and hands over the remaining arguments. Subcommands from ``lab`` (etcd, lab, seed,
bench) are imported lazily here: the CLI is the one place the proxy floor reaches up to
the lab, so that one console script serves both.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

# name -> (module, help). Each module exposes ``main(argv: list[str]) -> int``.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("proxy.app.workers", "run the API server in front of etcd"),
    "etcd": ("lab.etcd_cli", "run a local real etcd (one member or a cluster)"),
    "lab": ("lab.lab_cli", "start etcd + server, seed objects, show the guide"),
    "seed": ("lab.seed", "seed pods, nodes, namespaces and configmaps"),
    "sim": ("lab.sim.cluster", "simulate nodes, a scheduler and controllers against a server"),
    "pki": ("lab.pki", "a CA, certificates and a kubeconfig for a stack of replicas"),
    "bench": ("lab.bench", "cached vs uncached LIST benchmark"),
    "bench-auth": ("lab.bench_auth", "cost of authentication + RBAC on cached reads"),
    "bench-chain": ("lab.bench_chain", "cost of RBAC + APF + audit on cached reads"),
    "bench-decode": ("lab.bench_decode", "decoding a stored value: protobuf vs JSON"),
}


def usage() -> str:
    lines = ["usage: watchcache COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:<10} {help_}" for name, (_, help_) in SUBCOMMANDS.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in SUBCOMMANDS:
        print(f"watchcache: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(SUBCOMMANDS[name][0])
    rc: int = module.main(rest)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
