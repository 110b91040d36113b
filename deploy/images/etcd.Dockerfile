# etcd 3.5.16 from Debian 13's etcd-server/etcd-client packages, laid out as the official
# image (binaries in /usr/local/bin, data in /etcd-data), unpacked on the host by
# scripts/build-images.sh into the build context.
ARG BASE
FROM ${BASE}
COPY usr/bin/etcd usr/bin/etcdctl usr/bin/etcdutl /usr/local/bin/
RUN mkdir -p /etcd-data && chmod 700 /etcd-data && /usr/local/bin/etcd --version
EXPOSE 2379 2380
CMD ["/usr/local/bin/etcd"]
