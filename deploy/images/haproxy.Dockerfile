# HAProxy from Debian's package, laid out as the official haproxy image: configuration
# in /usr/local/etc/haproxy/haproxy.cfg, running in the foreground.
ARG BASE
FROM ${BASE}
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends haproxy \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /usr/local/etc/haproxy \
 && ln -sf /usr/sbin/haproxy /usr/local/sbin/haproxy
EXPOSE 8080
CMD ["haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]
