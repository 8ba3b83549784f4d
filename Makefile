# svc: the commands people run. `make help` lists them.
# Every target runs on the project's pinned Node 24 (node_modules/.bin/node, from the `node`
# devDependency), never on the machine's system Node.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
export PATH := $(CURDIR)/node_modules/.bin:$(PATH):/usr/local/go/bin

NODE_DEPS := node_modules/.deps-stamp
TEST_FLAGS ?= --test-reporter=spec
UNIT_TESTS = $(shell find lib schemas operator webhooks gateway dashboard tools -name '*.test.ts' 2>/dev/null | sort)
E2E_TESTS = $(shell find e2e -name '*.test.ts' 2>/dev/null | sort)

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  \033[36m%-15s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: deps
deps: $(NODE_DEPS) tools ## Install npm packages (with Node 24) and build the test binaries; idempotent

$(NODE_DEPS): package.json package-lock.json
	npm ci --no-audit --no-fund
	@node --version | grep -q '^v24\.' || { echo "node_modules/.bin/node is not Node 24" >&2; exit 1; }
	@touch $@

.PHONY: tools
tools: ## Build etcd, kube-apiserver, kubectl, helm, Bento, kfake and the gRPC plugin server from their Go modules (cached outside the repo); with SVC_KUBE_VERSION also that version's kube-apiserver
	env -u SVC_KUBE_VERSION tools/build.sh
	$(if $(SVC_KUBE_VERSION),tools/build.sh)

.PHONY: lint
lint: $(NODE_DEPS) ## ESLint (typescript-eslint strictTypeChecked), Prettier, no import circle (tools/lint/no-cycle.ts)
	eslint --max-warnings 0 .
	prettier --check --log-level warn .
	node tools/lint/no-cycle.ts

.PHONY: format
format: $(NODE_DEPS) ## Rewrite files with Prettier
	prettier --write --log-level warn .

.PHONY: typecheck
typecheck: $(NODE_DEPS) ## Type-check everything, tests included (tsc --noEmit)
	tsc --noEmit -p tsconfig.json
	tsc --noEmit -p dashboard/ui/tsconfig.json

.PHONY: gen
gen: $(NODE_DEPS) ## Generate CRDs and TypeScript types from schemas/, and copy the Gateway API CRDs from their Go module
	node schemas/gen/main.ts
	tools/gateway-api/crds.sh

.PHONY: gen-check
gen-check: $(NODE_DEPS) ## Fail when generated files are stale
	node schemas/gen/main.ts --check
	tools/gateway-api/crds.sh --check

.PHONY: unit
unit: $(NODE_DEPS) ## Unit and integration tests (real listeners, real Redis where needed)
	node --test $(TEST_FLAGS) $(UNIT_TESTS)

.PHONY: e2e
e2e: deps ## End-to-end tests against a real etcd and kube-apiserver
	node --test $(TEST_FLAGS) --test-concurrency=1 $(E2E_TESTS)

# The e2e suites ported to e2e/harness/world.ts: with SVC_E2E_CLUSTER=1 they run against the cluster.
E2E_CLUSTER_SUITES = e2e/operator/operator.test.ts e2e/operator/oas.test.ts

.PHONY: e2e-cluster
e2e-cluster: $(NODE_DEPS) ## The cluster suites against the cluster KUBECONFIG points at, svc installed by the charts (docs/e2e-cluster.md)
	SVC_E2E_CLUSTER=1 node --test $(TEST_FLAGS) --test-concurrency=1 $(shell find e2e/cluster -name '*.cluster.ts' 2>/dev/null | sort) $(E2E_CLUSTER_SUITES)

.PHONY: kubectl-svc
kubectl-svc: $(NODE_DEPS) ## Pack the kubectl plugin: .tmp/kubectl-svc-<version>.tgz, for npm install -g (docs/kubectl-plugin.md)
	node operator/cli/pack.ts --out .tmp

.PHONY: test
test: lint typecheck gen-check unit e2e ## Everything: lint, type-check, gen-check, unit, integration and e2e

.PHONY: bench
bench: bench-gateway bench-graphql bench-operator bench-operator-pro bench-ingress bench-soak bench-streams ## Benchmarks; figures and ratios go to docs/benchmarks.md

.PHONY: bench-gateway
bench-gateway: $(NODE_DEPS) ## Gateway against nginx, and the protected case with analytics on against off (apt-installs nginx-light and wrk if missing; builds tools/loadgen with Go); node e2e/bench/gateway/run.ts --quick checks the script in 2-second runs; node e2e/bench/gateway/analytics.ts --quick measures the analytics pair alone
	node e2e/bench/gateway/run.ts

.PHONY: bench-graphql
bench-graphql: $(NODE_DEPS) ## GraphQL proxyOnly (validated) against the plain proxy of the same upstream, the execution engine, and a supergraph against one upstream of the merged schema (apt-installs wrk if missing); SVC_BENCH_GRAPHQL_SECONDS
	node e2e/bench/graphql-bench.ts

.PHONY: bench-streams
bench-streams: deps ## Streams (HTTP in -> SSE, Kafka in -> SSE) through the gateway against Bento directly
	node e2e/bench/streams-bench.ts

.PHONY: bench-operator
bench-operator: deps ## 10 to 10,000 ApiDefinitions and 1000 SecurityPolicies until served, 1000 ApiKeys until each authenticates, against direct gateway writes (SVC_BENCH_SIZES, SVC_BENCH_KEYS; SVC_BENCH_ONLY=keys: the ApiKey row alone; then the changing-API probe, two gateways on one Redis counting every answer of an API through 1,000 changes, SVC_BENCH_PROBE changes, SVC_BENCH_ONLY=probe: the probe alone; one change at a time among 1,000 and among 10,000 APIs until served, SVC_BENCH_CHANGES, SVC_BENCH_ONLY=changes: that part alone; then 1000 HTTPRoutes on one Gateway against 1000 ApiDefinitions in the same run, SVC_BENCH_HTTPROUTES, SVC_BENCH_ONLY=httproutes: that part alone; SVC_BENCH_WRITE=0: a trial run)
	$(if $(filter httproutes,$(SVC_BENCH_ONLY)),,node e2e/bench/operator-bench.ts)
	$(if $(filter-out httproutes,$(SVC_BENCH_ONLY)),,node e2e/bench/httproute-bench.ts)

.PHONY: bench-operator-pro
bench-operator-pro: deps ## 1000 ApiDefinitions until served, operator in mode ce then in mode pro (through the dashboard) in the same run (SVC_BENCH_PRO_APIS)
	node e2e/bench/operator-pro-bench.ts

.PHONY: bench-ingress
bench-ingress: deps ## 1000 Ingresses until served, beside 1000 ApiDefinitions in the same run (SVC_BENCH_INGRESSES)
	node e2e/bench/ingress-bench.ts

.PHONY: bench-node
bench-node: node ## 1000 ApiDefinitions until served with svc installed on the node by its charts (operator in its pod; SVC_BENCH_NODE_APIS)
	flock $(NODE_LOCK) node e2e/bench/operator-node.ts

.PHONY: bench-soak
bench-soak: deps ## The operator under 30 minutes of churn (SVC_SOAK_MINUTES): memory over time
	node e2e/bench/operator-soak.ts

.PHONY: cluster
cluster: deps ## Start a local control plane with the CRDs and print how to use kubectl with it
	node e2e/harness/cluster-main.ts

.PHONY: node
node: deps ## Start a single-node cluster (kubelet, containerd, CoreDNS; needs root) or reuse the running one; prints its KUBECONFIG; SVC_KUBE_VERSION=v1.28.15 runs that version's Kubernetes binaries (docs/e2e-cluster.md)
	nice -n 10 env -u SVC_KUBE_VERSION tools/build.sh node
	$(if $(SVC_KUBE_VERSION),nice -n 10 tools/build.sh node)
	node e2e/harness/node-main.ts start

# The node suites: restart (the node SIGKILLed, then started again: what CI meets after a session;
# not on SVC_E2E_KUBECONFIG's cluster), smoke (the node itself) and images first, then the others by
# name. Each file runs on its own, those that install svc-operator under the node's operator lock
# (/tmp/svc-node-operator.lock, docs/e2e-cluster.md), so others sharing the node take turns between
# files; a file that hangs is ended after E2E_NODE_FILE_TIMEOUT. Every file runs even after a failure; the target fails if one did.
NODE_FIRST = $(if $(SVC_E2E_KUBECONFIG),,e2e/node/restart.node.ts) e2e/node/smoke.node.ts e2e/node/images.node.ts
NODE_SUITES = $(NODE_FIRST) $(filter-out e2e/node/restart.node.ts e2e/node/smoke.node.ts e2e/node/images.node.ts,$(sort $(wildcard e2e/node/*.node.ts)))
NODE_LOCK ?= /tmp/svc-node-operator.lock
# Suites that install nothing cluster-scoped: they run without waiting for the lock.
NODE_SUITES_UNLOCKED = e2e/node/smoke.node.ts e2e/node/images.node.ts
E2E_NODE_FILE_TIMEOUT ?= 40m

.PHONY: e2e-node
e2e-node: $(if $(SVC_E2E_KUBECONFIG),deps,node) ## The node suites (e2e/node/*.node.ts) on the node of `make node` (or SVC_E2E_KUBECONFIG's cluster): images, charts, cluster suites
	@failed=(); total=$$(date +%s); \
	for suite in $(NODE_SUITES); do \
	  start=$$(date +%s); \
	  lock=(flock $(NODE_LOCK)); [[ " $(NODE_SUITES_UNLOCKED) " == *" $$suite "* ]] && lock=(); \
	  timeout --kill-after=1m $(E2E_NODE_FILE_TIMEOUT) "$${lock[@]}" node --test $(TEST_FLAGS) "$$suite" || failed+=("$$suite"); \
	  echo "e2e-node: $$suite took $$(( $$(date +%s) - start ))s"; \
	done; \
	echo "e2e-node: $(words $(NODE_SUITES)) files in $$(( $$(date +%s) - total ))s"; \
	if (( $${#failed[@]} > 0 )); then echo "e2e-node: FAILED: $${failed[*]}" >&2; exit 1; fi

# The upstream Gateway API conformance suite (tools/gateway-api-conformance, profile GATEWAY-HTTP)
# against svc installed on the node; writes its ConformanceReport to docs/conformance/ and prints
# each test's result (docs/conformance/README.md). Holds the node's operator lock; bounded by
# CONFORMANCE_TIMEOUT (then 10 minutes to clean up). Not part of `make test` or CI.
CONFORMANCE_TIMEOUT ?= 60m

.PHONY: conformance
conformance: node ## The upstream Gateway API conformance suite (HTTPRoute profile) against svc on the node; report in docs/conformance/
	flock $(NODE_LOCK) timeout -k 10m $(CONFORMANCE_TIMEOUT) node e2e/conformance/run.ts

.PHONY: node-stop
node-stop: $(NODE_DEPS) ## Stop the node of `make node`: every process it started, its mounts, bridge and iptables rules
	node e2e/harness/node-main.ts stop

.PHONY: dashboard
dashboard: $(NODE_DEPS) ## Run the dashboard (mode pro) on port 3000, SQLite under ./dashboard-data; needs SVC_DB_ADMIN_SECRET
	node dashboard/main.ts --data-dir ./dashboard-data

.PHONY: demo
demo: deps ## Start a local control plane, apply examples/ and show the resources (MODE=pro: with a dashboard)
	node e2e/harness/demo-main.ts --mode=$(or $(MODE),ce)
