# cvo — the two set-up commands of the README, and the rest.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench fuzz clean browser

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

DEMO_STATE := .cvo-demo-state.db
DEMO_SPEED ?= 600
DEMO := --state $(DEMO_STATE) --speed $(DEMO_SPEED) --operators payloads/demo-operators.yaml

## make demo: on the embedded simulated cluster, install 4.16.0, upgrade to 4.16.3, watch the 4.17.0
## upgrade be blocked by etcd's OperatorCondition, and while it waits, override the block from another
## command: the waiting upgrade sees it and goes ahead by itself
demo: $(STAMP)
	@rm -f $(DEMO_STATE) $(DEMO_STATE)-wal $(DEMO_STATE)-shm $(DEMO_STATE).lock
	$(BIN)/cvo lint payloads/demo-4.16.0
	$(BIN)/cvo plan payloads/demo-4.17.0 | head -12
	$(BIN)/cvo install payloads/demo-4.16.0 $(DEMO)
	$(BIN)/cvo upgrade --to payloads/demo-4.16.3 $(DEMO)
	-$(BIN)/cvo upgrade --to payloads/demo-4.17.0 --dry-run $(DEMO)
	$(BIN)/cvo upgrade --to payloads/demo-4.17.0 $(DEMO) & upgrade=$$!; \
	  until $(BIN)/cvo status --state $(DEMO_STATE) -o json 2>/dev/null | grep -q PreconditionChecks; do sleep 0.2; done; \
	  echo "--- the upgrade waits, blocked by etcd; in another command, the admin overrides the block:"; \
	  $(BIN)/cvo override etcd Upgradeable=True --reason MigrationVerified --message "storage migration checked by the admin" --state $(DEMO_STATE); \
	  wait $$upgrade
	$(BIN)/cvo status --state $(DEMO_STATE)

## make browser: Debian's chromium (headless) for the report's browser tests, installed when missing
browser:
	sh hack/install-chromium.sh

## make test: lint the code and run the whole test suite
test: $(STAMP) browser
	$(BIN)/ruff check cvo tests bench hack
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check cvo tests bench hack

## make fuzz: the fuzz targets of tests/test_fuzz.py and a mutation fuzzer over the corpus for
## FUZZ_SECONDS; a minimal reproducer of every crash goes to FUZZ_OUT; exit 1 if anything was found
FUZZ_SECONDS ?= 60
FUZZ_OUT ?= fuzz-findings
fuzz: $(STAMP)
	$(BIN)/python tests/fuzz_main.py --seconds $(FUZZ_SECONDS) --out $(FUZZ_OUT)

## make bench: run the benchmarks and rewrite docs/benchmarks.md
bench: $(STAMP) browser
	$(BIN)/python bench/run.py --output docs/benchmarks.md

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info fuzz-findings
