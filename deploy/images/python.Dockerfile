# Python 3.11 from Debian bookworm: the stand-in for python:3.11-slim where no image
# registry is reachable (scripts/build-images.sh). The venv module is all the watchcache
# Dockerfile needs; certificates for pip.
ARG BASE
FROM ${BASE}
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/*
