# watchcache — the commands a newcomer needs: `make lab` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PACKAGES := etcdclient storage cacher proxy lab
PROTO_DIR := etcdclient/proto
PB_DIR := etcdclient/_pb
PYTEST_ARGS ?=

.PHONY: venv test unit integration e2e slow-test page-test fuzz lint proto proto-check k8s-proto \
        etcd-versions lab bench clean images compose-test compose-bench

venv: $(STAMP)

# setup.py builds the C protobuf decoder (storage/protobuf/_cdecode.c): rebuilt when it changes
$(STAMP): pyproject.toml setup.py storage/protobuf/_cdecode.c
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) (Python >= 3.11)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[lab,test,dev]'
	$(BIN)/python -m storage.protobuf.schema --optional >/dev/null
	touch $(STAMP)

lint: venv
	$(BIN)/ruff check $(PACKAGES) tests
	$(BIN)/mypy

test: venv lint
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

unit: venv
	$(BIN)/python -m pytest -q tests/unit $(PYTEST_ARGS)

integration: venv
	$(BIN)/python -m pytest -q tests/integration $(PYTEST_ARGS)

e2e: venv
	$(BIN)/python -m pytest -q tests/e2e $(PYTEST_ARGS)

# The lab's live page in Debian's headless chromium (apt-get install chromium), Playwright.
page-test: venv
	@command -v chromium >/dev/null || { echo "needs Debian's chromium: apt-get install chromium"; exit 1; }
	$(BIN)/python -m pytest -q -m browser tests/e2e/test_lab_page.py $(PYTEST_ARGS)

# The long scenario suites `make test` leaves out (marker `slow`: the benchmark's runs,
# the client-go program, the simulated control plane's drains, the APF flood).
slow-test: venv
	$(BIN)/python -m pytest -q -m slow $(PYTEST_ARGS)

# The fuzz suite at length: 20,000 hostile requests with a fresh seed (printed on a
# failure); FUZZ_SEED=N replays a run, FUZZ_REQUESTS=N sizes it. `make test` runs 300.
fuzz: venv
	FUZZ_REQUESTS=$${FUZZ_REQUESTS:-20000} FUZZ_SEED=$${FUZZ_SEED:-$$(date +%s)} \
		$(BIN)/python -m pytest -q tests/integration/test_fuzz.py $(PYTEST_ARGS)

# Regenerates the committed gRPC modules from our own .proto subset; byte-for-byte
# reproducible with the pinned grpcio-tools (tests/unit/etcdclient/test_proto.py checks).
proto: venv
	$(BIN)/python -m etcdclient.protogen

# The Kubernetes protobuf schema (Debian 13's golang-k8s-api-dev and
# golang-k8s-apimachinery-dev, compiled into .cache/k8s-proto/); `make venv` builds it too.
k8s-proto: venv
	$(BIN)/python -m storage.protobuf.schema

# Extra real etcd versions for local runs (CI fetches them too): 3.4.23 and 3.5.16.
etcd-versions:
	scripts/fetch-etcd-versions.sh --print

# LAB_ARGS: flags for `watchcache lab`, e.g. make lab LAB_ARGS='--port 8081'
LAB_ARGS ?=
lab: venv
	$(BIN)/watchcache lab $(LAB_ARGS)

bench: venv
	$(BIN)/watchcache bench

# docker-compose without an image registry: local images from Debian packages, and .env
# pointing the compose file at them (needs root, dockerd, debootstrap). EXTRA_CA: PEM
# bundle added to pip's for the image build, so pip in the image trusts what this
# machine trusts (a TLS-intercepting proxy's CA): $$PIP_CERT, $$REQUESTS_CA_BUNDLE or
# $$SSL_CERT_FILE when set, else the system bundle.
EXTRA_CA ?= $(firstword $(PIP_CERT) $(REQUESTS_CA_BUNDLE) $(SSL_CERT_FILE) \
                        $(wildcard /etc/ssl/certs/ca-certificates.crt))
# The protobuf schema `make venv` built goes into the image's build context (the image
# must speak protobuf: deploy/k8s-proto/README.md).
images: venv
	@if [ -n "$(EXTRA_CA)" ] && [ -f "$(EXTRA_CA)" ]; then \
	  cp "$(EXTRA_CA)" deploy/ca-certificates/extra.crt; fi
	@schema=$$($(BIN)/python -m storage.protobuf.schema --optional) && [ -n "$$schema" ] \
	  && rm -rf deploy/k8s-proto/format-* && cp -r "$$schema" deploy/k8s-proto/ \
	  || echo "images: no protobuf schema to stage; the image build fetches it" >&2
	scripts/build-images.sh

COMPOSE_ENV = WATCHCACHE_VERSION=$$(git describe --always --dirty 2>/dev/null) \
              WATCHCACHE_COMMIT=$$(git rev-parse --short HEAD 2>/dev/null)

# The stack for real: build, up (own project, free ports), check, down -v (minutes).
compose-test: venv images
	$(COMPOSE_ENV) $(BIN)/python -m pytest -q -m compose tests/compose $(PYTEST_ARGS)

# Seed + benchmark through the balancer; the report in ./bench-results is yours.
compose-bench:
	mkdir -p bench-results
	$(COMPOSE_ENV) BENCH_USER=$$(id -u):$$(id -g) docker-compose --profile bench run --rm bench

clean:
	rm -rf $(VENV) .cache .lab .mypy_cache .ruff_cache .pytest_cache
