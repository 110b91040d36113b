"""The loopback client: the server's own writes, sent to itself through the whole request
pipeline as ``system:apiserver`` (upstream's ``LoopbackClientConfig``)."""
