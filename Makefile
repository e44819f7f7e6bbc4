# Two commands set everything up on a fresh machine with only Python 3:
#   make demo   - creates .venv when missing, runs the chapter's demo offline
#   make test   - creates .venv when missing, runs ruff then pytest
#   make fuzz   - the fast-path differential test on 10,000 damaged files (takes minutes)
VENV ?= .venv
# what `pip install` adds for the tests; CI adds `spark` (pyspark) for the example Spark job's test
EXTRAS ?= test
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint bench fuzz clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[$(EXTRAS)]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/harnesskit demo --dir .demo

lint: $(STAMP)
	$(BIN)/ruff check .

test: lint
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/bench.py

# The differential test of tests/unit/test_differential.py on 10,000 damaged files (FUZZ_CASES=N for more):
# prints the counts of cases, crashes, hangs and disagreements, and fails unless all are 0.
FUZZ_CASES ?= 10000
fuzz: $(STAMP)
	$(BIN)/python tests/fuzz_differential.py --cases $(FUZZ_CASES)

clean:
	rm -rf $(VENV) .demo .pytest_cache .ruff_cache
