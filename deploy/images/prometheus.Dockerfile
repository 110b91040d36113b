# Prometheus from Debian's package, laid out as the official prom/prometheus image:
# entrypoint /bin/prometheus (/bin is /usr/bin in bookworm), config in /etc/prometheus, data in /prometheus owned by
# nobody. Without a writable storage path Debian's binary crash-loops on queries.active.
ARG BASE
FROM ${BASE}
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /prometheus && chown nobody:nogroup /prometheus
USER nobody
WORKDIR /prometheus
EXPOSE 9090
ENTRYPOINT ["/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
