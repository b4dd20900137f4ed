"""Gateway replicas on a real nats-server, for the integration tests: in-process, or each as its own process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from saip.common.natsd import free_port
from saip.gateway.config import GatewaySettings
from saip.gateway.process import over_http
from saip.gateway.server import Gateway
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
ADMIN = "a" * 40
SEALING = "s" * 40
ADMIN_HEADERS = {"Authorization": f"Bearer {ADMIN}"}


# The tests' clients answer a question by program, at once: as the person, not as a client answering by itself
# (management.min-answer-ms, whose own tests set it).
PERSON_AT_ONCE = {"management_min_answer_ms": 0}


async def serving(
    opened: AsyncExitStack, home: Path, nats_url: str, **overrides: Any
) -> tuple[Gateway, httpx.AsyncClient, str]:
    """A gateway replica served over HTTP on a free port, its MCP token set, and a REST client with the admin token
    (both closed with `opened`); the gateway's URL."""
    port = free_port()
    gateway = Gateway(replica_settings(home, nats_url, "one", gateway_port=port, **overrides))
    await opened.enter_async_context(over_http(gateway))
    await gateway.token_service.rotate(created_by="test")
    url = f"http://127.0.0.1:{port}"
    api = await opened.enter_async_context(httpx.AsyncClient(base_url=url, headers=ADMIN_HEADERS, timeout=30))
    return gateway, api, url


def replica_settings(home: Path, nats_url: str, name: str, **overrides: Any) -> GatewaySettings:
    return GatewaySettings.load(
        home=home,
        nats_url=nats_url,
        admin_token=ADMIN,
        approval_sealing_key=SEALING,
        gateway_replica=name,
        audit_spool_dir=home / "spool" / name,
        **({"audit_addr": "127.0.0.1:1"} | PERSON_AT_ONCE | overrides),
    )


@dataclass
class GatewayProcess:
    """One gateway replica running as its own process (`python -m <module>`), its log in `log`."""

    name: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self, within: float = 10.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=within)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_replica(
    home: Path, nats_url: str, name: str, *, module: str = "tests.integration.replica", **env: str
) -> GatewayProcess:
    """Start a replica on a free port; the caller waits for it (`ready`). Every replica shares the admin token and
    the sealing key, as the replicas of one deployment do."""
    port = free_port()
    environment = {key: value for key, value in os.environ.items() if not key.startswith("SAIP_")}
    environment.update(
        {
            "SAIP_HOME": str(home),
            "SAIP_NATS_URL": nats_url,
            "SAIP_ADMIN_TOKEN": ADMIN,
            "SAIP_APPROVAL_SEALING_KEY": SEALING,
            "SAIP_GATEWAY_REPLICA": name,
            "SAIP_GATEWAY_PORT": str(port),
            "SAIP_AUDIT_ADDR": "127.0.0.1:1",
            "SAIP_AUDIT_SPOOL_DIR": str(home / "spool" / name),
            "SAIP_LOG_LEVEL": "WARNING",
            "SAIP_MANAGEMENT_MIN_ANSWER_MS": "0",  # PERSON_AT_ONCE
            **env,
        }
    )
    log = home / f"{name}.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", module], cwd=ROOT, env=environment, stdout=output, stderr=subprocess.STDOUT
        )
    return GatewayProcess(name, port, process, log)


async def ready(replica: GatewayProcess, within: float = 30.0) -> None:
    """Wait until the replica answers its REST API (its /healthz stays 503 here: no audit service runs)."""

    async def answers() -> bool:
        if replica.process.poll() is not None:
            raise AssertionError(f"{replica.name} exited:\n{replica.log.read_text()[-3000:]}")
        try:
            async with httpx.AsyncClient(timeout=2) as client:
                reply = await client.get(f"{replica.url}/api/v1/management/status", headers=ADMIN_HEADERS)
        except httpx.TransportError:
            return False
        return reply.status_code == 200

    await eventually(answers, within=within, every=0.05)


@asynccontextmanager
async def two_replicas(home: Path, nats_url: str, **env: str) -> AsyncIterator[tuple[GatewayProcess, GatewayProcess]]:
    """Replicas `one` and `two`, each its own process with `env` besides the shared settings, both answering."""
    one = start_replica(home, nats_url, "one", **env)
    two = start_replica(home, nats_url, "two", **env)
    try:
        await ready(one)
        await ready(two)
        yield one, two
    finally:
        one.stop()
        two.stop()
