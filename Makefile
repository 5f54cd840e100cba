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

# Exit code 1 means "findings" / "would change" here, which is what the demo shows.
demo: setup
	@echo "== mlir-lsp --check on the bundled example (examples/hoisted_gather.mlir)"
	@$(BIN)/mlir-lsp --check --output-format full examples/hoisted_gather.mlir || test $$? -eq 1
	@echo "== the assume fix, as a diff (nothing is written)"
	@$(BIN)/mlir-lsp --check --fix --fix-mode assume --diff examples/hoisted_gather.mlir || test $$? -eq 1
	@echo "== dispatch count for gfx942 with iree-compile, and with the asserts rewritten"
	@$(BIN)/mlir-lsp --dispatch-count --what-if-mode assume examples/hoisted_gather.mlir

test: setup
	$(BIN)/python -m pytest -q

test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow"

bench: setup
	$(BIN)/python bench/bench_check.py
	$(BIN)/python bench/bench_dispatch.py

clean:
	rm -rf $(VENV) build *.egg-info
