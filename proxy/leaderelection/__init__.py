"""Leader election over a ``coordination.k8s.io/v1`` Lease (client-go's
``tools/leaderelection``): ``lease_lock`` reads and writes the Lease through the loopback
client, ``leader_election`` acquires, renews and releases it."""
