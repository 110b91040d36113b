"""Fakes shared by the etcd client's unit tests."""

from __future__ import annotations

import grpc


def rpc_error(code: grpc.StatusCode, details: str = "fake") -> grpc.aio.AioRpcError:
    """The error a grpc.aio call raises with this status code and details (no metadata)."""
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details)
