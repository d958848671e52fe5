# cvo — the two set-up commands of the README, and the rest.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast lint typecheck bench fuzz clean browser registry-tools monitoring-tools \
	control-plane kwok-up kwok-down

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

DEMO_STATE := .cvo-demo-state.db
DEMO_SPEED ?= 600

## make demo: on the embedded simulated cluster, build the demo releases as release images signed with a
## throwaway GnuPG key, install 4.16.0, upgrade to 4.16.3 by digest (verified), see an unsigned 4.17.0
## refused, watch the signed 4.17.0 be blocked by etcd's OperatorCondition and, while it waits, override the
## block from another command: the waiting upgrade goes ahead by itself; finally an unsigned rebuild is
## refused and forced (hack/demo.sh narrates each step). gpg is installed when missing.
demo: $(STAMP)
	@command -v gpg >/dev/null 2>&1 || sh hack/install-registry.sh
	@CVO=$(BIN)/cvo DEMO_STATE=$(DEMO_STATE) DEMO_SPEED=$(DEMO_SPEED) hack/demo.sh

## make browser: Debian's chromium (headless) for the report's browser tests, installed when missing
browser:
	sh hack/install-chromium.sh

## make registry-tools: Debian's docker-registry, skopeo, apache2-utils, gnupg and openssl for the release-image
## tests (tests/images, tests/verify), installed when missing
registry-tools:
	sh hack/install-registry.sh

## make monitoring-tools: Debian's prometheus and promtool for the update-graph, risk and alerting-rule tests,
## installed when missing
monitoring-tools:
	sh hack/install-prometheus.sh

## make control-plane: build the test control plane's binaries from Go modules (etcd, kube-apiserver,
## kube-controller-manager, kube-scheduler, kwok; hack/control-plane/build.sh), cached outside the repo
control-plane:
	@bash hack/control-plane/build.sh

## make kwok-up: start a local cluster that acts (the binaries above, fake Nodes kept Ready by kwok) and print
## its kubeconfig path (hack/kwok-cluster.sh); make kwok-down stops it. docs/kind.md walks cvo through it.
kwok-up:
	@hack/kwok-cluster.sh up

kwok-down:
	@hack/kwok-cluster.sh down

## make test: lint the code (ruff, mypy) and run the whole test suite
test: $(STAMP) browser registry-tools monitoring-tools lint
	$(BIN)/pytest -q

## make test-fast: lint, then every test but the real API server's (tests/e2e and the others marked e2e) and
## the browser's (tests/report/test_report_browser.py), over 4 worker processes (see pytest-xdist in pyproject.toml)
test-fast: $(STAMP) registry-tools monitoring-tools lint
	$(BIN)/pytest -q -n 4 -m "not e2e" --ignore=tests/e2e --ignore=tests/report/test_report_browser.py

## make lint: ruff, and mypy strict on cvo/ (configured in pyproject.toml)
lint: $(STAMP)
	$(BIN)/ruff check cvo tests bench hack
	$(BIN)/mypy

## make typecheck: mypy alone
typecheck: $(STAMP)
	$(BIN)/mypy

## make fuzz: the fuzz targets of tests/fuzz/test_fuzz.py and a mutation fuzzer over the corpus for
## FUZZ_SECONDS; a minimal reproducer of every crash goes to FUZZ_OUT; exit 1 if anything was found
FUZZ_SECONDS ?= 60
FUZZ_OUT ?= fuzz-findings
fuzz: $(STAMP)
	$(BIN)/python tests/support/fuzz_main.py --seconds $(FUZZ_SECONDS) --out $(FUZZ_OUT)

## make bench: run the benchmarks and rewrite docs/benchmarks.md
bench: $(STAMP) browser registry-tools monitoring-tools
	$(BIN)/python bench/run.py --output docs/benchmarks.md

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info fuzz-findings
