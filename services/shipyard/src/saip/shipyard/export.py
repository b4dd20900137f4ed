"""A shipped server's deployment files without an engine: the compose project or the Kubernetes manifests a run on
that target writes, with the bundle they mount, to apply on another host.

They are written by the functions a run uses (`deploy`), for the latest version (its bundle checked by its hashes
first), into a scratch folder, with a bearer token of their own in `token.env` (mode 0600), and streamed: a header
with the command that applies them from their folder, then each file in chunks. Nothing is run or recorded.
"""

from __future__ import annotations

import secrets
import shlex
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from saip.shipyard import deploy
from saip.shipyard.errors import InvalidProposal
from saip.shipyard.packing import Places, WorkingCopies
from saip.shipyard.targets import COMPOSE, KUBERNETES
from saip.v1 import shipyard_pb2

EXPORTABLE = (COMPOSE, KUBERNETES)
CHUNK = 512 * 1024  # well under gRPC's 4 MiB message limit


async def export(
    copies: WorkingCopies, places: Places, server: shipyard_pb2.ShippedServer, target: str, port: int
) -> AsyncIterator[shipyard_pb2.ExportPiece]:
    """The pieces of the export of `server` for `target` (compose: published on 127.0.0.1:`port`, 0 for the
    container's own)."""
    if target not in EXPORTABLE:
        raise InvalidProposal(
            f"target '{target}' has no files to export; export for {' or '.join(EXPORTABLE)} (a local run needs none: "
            "run it with saip_shipyard_run)"
        )
    bundle = await copies.bundle(server)
    here = Path(".")
    with tempfile.TemporaryDirectory(prefix="saip-export-") as scratch:
        folder = Path(scratch)
        token = secrets.token_urlsafe(32)
        if target == COMPOSE:
            published = port or deploy.CONTAINER_PORT
            await anyio.to_thread.run_sync(deploy.write_compose, folder, bundle, places.image, published, token)
            argv = deploy.compose_command(here, server.name)
        else:
            await anyio.to_thread.run_sync(deploy.write_kubernetes, folder, bundle, places.image, token)
            argv = deploy.kubectl(None, "apply", "-k", str(here))
        yield shipyard_pb2.ExportPiece(
            header=shipyard_pb2.ExportHeader(
                name=server.name,
                target=target,
                version=server.version,
                bundle_sha256=server.bundle_sha256,
                command=shlex.join(argv),
            )
        )
        for path, relative, mode in await anyio.to_thread.run_sync(_files, folder):
            async with await anyio.open_file(path, "rb") as file:
                data = await file.read(CHUNK)
                while True:  # an empty file is one empty chunk: it is still a file of the export
                    yield shipyard_pb2.ExportPiece(chunk=shipyard_pb2.ExportChunk(path=relative, mode=mode, data=data))
                    data = await file.read(CHUNK)
                    if not data:
                        break


def _files(folder: Path) -> list[tuple[Path, str, int]]:
    """Every file under `folder`: its path, its path relative to the folder, its permission bits."""
    found = sorted(path for path in folder.rglob("*") if path.is_file())
    return [(path, path.relative_to(folder).as_posix(), path.stat().st_mode & 0o777) for path in found]
