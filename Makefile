# The one entry point: run, test, lint, crds, bench.
CARGO ?= cargo

.PHONY: run plan test test-long test-deep lint audit audit-tool crds bench bench-sandbox bench-sandbox-real link-order record-corpus build kube helm \
	node image cluster-up cluster-down

## run: the whole operator in the sandbox, applying the fresh-install example until it is completed
run:
	$(CARGO) run --quiet --locked -- sandbox -f examples/fresh-install/blueprint.yaml

## plan: what one reconcile of the upgrade example would decide
plan:
	$(CARGO) run --quiet --locked -- plan -f examples/upgrade/blueprint.yaml \
		--cluster examples/upgrade/cluster.yaml --descriptors examples/descriptors; \
	status=$$?; [ $$status -eq 0 ] || [ $$status -eq 2 ]

## test: every test of the workspace, the real-API-server and node suites included (it builds the
## control plane, helm, the node and the operator's image first: make kube helm node image); the node's
## scenarios run in a test process of their own beside the rest (tools/test.sh says why)
test: kube helm node image
	@CARGO="$(CARGO)" tools/test.sh

## kube: kube-apiserver, etcd and kubectl of the pinned Kubernetes release, built from the Go module
## proxy into target/kube/bin (once; later runs reuse them)
kube:
	@tools/kube/build.sh target/kube/bin

## helm: the helm CLI of the pinned release, built from the Go module proxy into target/kube/bin (once),
## for the chart's tests (lint, template, install into the real API server)
helm:
	@tools/helm/build.sh target/kube/bin

## node: kubelet, kube-proxy, kube-scheduler and kube-controller-manager of the same release, and a
## pause image, into target/kube (once); installs Debian's containerd, runc, CNI plugins, iptables and
## conntrack when they are missing and it runs as root (otherwise it says what to install)
node:
	@tools/node/build.sh target/kube/bin

## image: the operator's OCI image from the release binary, offline, without a container engine
## (docker.io/cloudogu/blueprint-operator:<version>, the chart's default) in target/image
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
image: build
	@tools/image/build.sh target/release/blueprint-operator docker.io/cloudogu/blueprint-operator:$(VERSION) \
		target/image/blueprint-operator.tar

## cluster-up: a one-node cluster on this machine (root) in the background: the operator installed by
## its chart, the simulated dogu and component operators; the last line is the kubeconfig to use
cluster-up: kube helm node image
	@target/release/blueprint-operator cluster up --dir target/cluster --background

## cluster-down: stops that cluster and removes everything it started
cluster-down:
	@if [ -x target/release/blueprint-operator ]; then target/release/blueprint-operator cluster down --dir target/cluster; \
	else echo "cluster-down: no cluster (target/release/blueprint-operator is not built)"; fi

## test-long: the property tests with 100 times their cases (minutes, not seconds)
test-long:
	PROPTEST_SCALE=100 $(CARGO) test --locked --release -p blueprint-machine --test main properties

## test-deep: the property tests with 10 times their cases, new random seeds every run (CI runs it
## after `make test`); a failure is saved in proptest-regressions/ and replayed by every later run.
## Built as `make test` builds the workspace (its features unified), so it reuses that build: with
## `-p blueprint-machine` alone cargo would compile the machine and a dozen dependencies again.
test-deep:
	PROPTEST_SCALE=10 $(CARGO) test --locked --workspace --test main -- properties::

## lint: formatting, clippy (warnings are errors), the machine's purity, and the advisory audit
lint: audit
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	@if $(CARGO) tree -p blueprint-machine -e normal --locked | grep -E 'kube-client|kube-runtime|tokio|hyper|reqwest'; then \
		echo "machine/ must not depend on I/O crates"; exit 1; fi

## audit: Cargo.lock against the RustSec advisory database, offline (accepted advisories, with their
## reasons, in .cargo/audit.toml). Needs cargo-audit (`make audit-tool` installs it) and a copy of the
## database at ADVISORY_DB (default: ../shared/advisory-db where it exists, else ~/.cargo/advisory-db);
## says so in one line when either is missing (and fails then with AUDIT_REQUIRED=1, as CI runs it).
ADVISORY_DB ?= $(firstword $(wildcard $(abspath ../shared/advisory-db)) $(HOME)/.cargo/advisory-db)
CARGO_AUDIT_VERSION := 0.22.2
## audit-tool: cargo-audit of the pinned version from crates.io (CI runs it before `make lint`)
audit-tool:
	@if cargo audit --version 2>/dev/null | grep -q "$(CARGO_AUDIT_VERSION)"; then :; else \
		$(CARGO) install cargo-audit --locked --version $(CARGO_AUDIT_VERSION); fi
audit:
	@if ! command -v cargo-audit >/dev/null 2>&1; then \
		echo "audit: NOT RUN: cargo-audit is not installed (make audit-tool)"; [ -z "$(AUDIT_REQUIRED)" ]; \
	elif [ ! -d "$(ADVISORY_DB)/crates" ]; then \
		echo "audit: NOT RUN: no RustSec advisory database at $(ADVISORY_DB) (git clone https://github.com/rustsec/advisory-db $(ADVISORY_DB))"; [ -z "$(AUDIT_REQUIRED)" ]; \
	else \
		$(CARGO) audit --no-fetch --db "$(ADVISORY_DB)" --deny warnings; \
	fi

## crds: regenerate the committed CRD manifests
crds:
	$(CARGO) run --quiet -- crd blueprint > crds/blueprint.yaml
	$(CARGO) run --quiet -- crd blueprint-mask > crds/blueprintmask.yaml
	$(CARGO) run --quiet -- crd dogu > crds/dogu.yaml
	$(CARGO) run --quiet -- crd component > crds/component.yaml
	cp crds/blueprint.yaml crds/blueprintmask.yaml charts/blueprint-operator/crds/

## bench: the benchmarks
bench:
	$(CARGO) bench --locked --bench reconcile --bench observe --bench plan --bench replay

## bench-sandbox: the release operator as a child process against the sandbox: requests by verb, writes,
## events, time to Completed=True against a floor, CPU seconds, peak memory and its growth per dogu for
## 7-, 200- and 1,000-dogu blueprints (5 keys per dogu, 200 global keys; prints a table)
bench-sandbox:
	$(CARGO) bench --locked --bench sandbox

## bench-sandbox-real: the same against a real kube-apiserver with etcd (make kube)
bench-sandbox-real: kube
	SANDBOX_BENCH_SERVER=kube-apiserver $(CARGO) bench --locked --bench sandbox

## link-order: record which functions the release operator runs (callgrind, during the 7-dogu run of
## bench-sandbox-real; needs valgrind) into tools/link-order/hot-functions.txt, the order in which the
## release build links them: redo it after changes that add or rename hot functions (docs/performance.md)
link-order: kube
	@CARGO="$(CARGO)" tools/link-order/record.sh

## record-corpus: re-record the replay corpus (tests/replay/) from the sandbox scenarios, on purpose:
## after a deliberate change of behaviour, or of the journal format
record-corpus:
	rm -f tests/replay/*.jsonl
	RECORD_CORPUS=1 $(CARGO) test --locked --test main -- sandbox::e2e::on_the_emulator sandbox::e2e::faults
	$(CARGO) run --quiet --locked -- replay tests/replay/*.jsonl

## build: the release binary (what the image ships); says whether the recorded link order still names
## its functions (a warning here, an error in CI: tools/link-order/check.sh)
build:
	$(CARGO) build --release --locked
	@tools/link-order/check.sh target/release/blueprint-operator || echo "warning: the release binary is built, but not in the recorded link order (above)" >&2
