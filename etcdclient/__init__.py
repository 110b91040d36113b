"""Async etcd v3 client on grpc.aio (placeholder; the client lands next)."""
