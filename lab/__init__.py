"""The lab: real etcd processes, seeding, demos and the benchmark."""
