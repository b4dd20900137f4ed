# syntax=docker/dockerfile:1
# The shipped image. Every docker/<service>.Dockerfile has this one shape; only the service's name, ports and health
# probe differ (tests/contract/test_deployment.py holds them to it). Build from the repository root:
#   docker build -f docker/shipped.Dockerfile -t saip/shipped .
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# The sandbox's engine (the images that run tools' code only): built from the QuickJS sources libs/sandbox/quickjs.lock
# pins, by the script `make install` runs, into the sandbox's package, which the builder stage copies it back into.
FROM ${PYTHON_IMAGE} AS engine
RUN apt-get update && apt-get install --yes --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY scripts/build_engine.py scripts/build_engine.py
COPY libs/sandbox/quickjs.lock libs/sandbox/quickjs.lock
COPY libs/sandbox/src/saip/sandbox/*.c libs/sandbox/src/saip/sandbox/*.h libs/sandbox/src/saip/sandbox/
RUN python scripts/build_engine.py --work /tmp/quickjs

FROM ${PYTHON_IMAGE} AS builder
COPY --from=ghcr.io/astral-sh/uv:0.13.9 /uv /usr/local/bin/uv
ENV UV_COMPILE_BYTECODE=1 UV_LINK_MODE=copy UV_PYTHON_DOWNLOADS=never UV_PROJECT_ENVIRONMENT=/opt/saip
WORKDIR /src
# The locked dependencies alone first: this layer is reused until uv.lock changes.
RUN --mount=type=cache,target=/root/.cache/uv \
    --mount=type=bind,source=uv.lock,target=uv.lock \
    --mount=type=bind,source=pyproject.toml,target=pyproject.toml \
    uv sync --frozen --no-dev --no-install-workspace --package saip-shipped
COPY pyproject.toml uv.lock ./
COPY libs libs
COPY services services
COPY --from=engine /src/libs/sandbox/src/saip/sandbox/ libs/sandbox/src/saip/sandbox/
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-editable --package saip-shipped

FROM ${PYTHON_IMAGE}
RUN groupadd --system --gid 10001 saip \
    && useradd --system --uid 10001 --gid saip --home-dir /var/lib/saip --shell /usr/sbin/nologin saip \
    && install --directory --owner saip --group saip /var/lib/saip
COPY --from=builder /opt/saip /opt/saip
ENV PATH=/opt/saip/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 SAIP_HOME=/var/lib/saip
ENV SAIP_SHIPPED_HOST=0.0.0.0
WORKDIR /var/lib/saip
USER 10001:10001
EXPOSE 8383
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-m", "saip.common.healthcheck", "http", "http://127.0.0.1:8383/healthz"]
CMD ["python", "-m", "saip.shipped"]
