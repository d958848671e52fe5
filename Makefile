# cvo — the two set-up commands of the README, and the rest.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

DEMO_STATE := .cvo-demo-state.json
DEMO_SPEED ?= 600

## make demo: install 4.16.0, upgrade to 4.16.3 and 4.17.0 on the embedded simulated cluster
demo: $(STAMP)
	@rm -f $(DEMO_STATE)
	$(BIN)/cvo lint payloads/demo-4.16.0
	$(BIN)/cvo plan payloads/demo-4.17.0 | head -12
	$(BIN)/cvo install payloads/demo-4.16.0 --state $(DEMO_STATE) --speed $(DEMO_SPEED)
	$(BIN)/cvo upgrade --to payloads/demo-4.16.3 --state $(DEMO_STATE) --speed $(DEMO_SPEED)
	$(BIN)/cvo upgrade --to payloads/demo-4.17.0 --state $(DEMO_STATE) --speed $(DEMO_SPEED)
	$(BIN)/cvo status --state $(DEMO_STATE)

## make test: lint the code and run the whole test suite
test: $(STAMP)
	$(BIN)/ruff check cvo tests bench
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check cvo tests bench

## make bench: run the benchmarks and rewrite docs/benchmarks.md
bench: $(STAMP)
	$(BIN)/python bench/run.py --output docs/benchmarks.md

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
