# mlir-lsp: `make demo` and `make test` are the two commands a new user runs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-fast bench clean

setup: $(STAMP)

# Re-installs only when pyproject.toml changed (the package itself is editable).
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

demo: setup
	@echo "== mlir-lsp --check on the bundled example (examples/hoisted_gather.mlir)"
	-$(BIN)/mlir-lsp --check --output-format full examples/hoisted_gather.mlir
	@echo "== the same with the assume fix, as a diff"
	-$(BIN)/mlir-lsp --check --fix --fix-mode assume --diff examples/hoisted_gather.mlir

test: setup
	$(BIN)/python -m pytest -q

test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow"

bench: setup
	$(BIN)/python bench/bench_check.py

clean:
	rm -rf $(VENV) build *.egg-info
