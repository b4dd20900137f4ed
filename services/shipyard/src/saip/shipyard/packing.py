"""A shipped server's bundle as it is kept and as it is used: packed into one tar archive a version for the
saip-bundles object store (`<name>/v<version>.tar`), and unpacked into its working folder
(`<home>/shipyard/<name>/v<version>`), where the runs and exports find it. An unpacked bundle is checked, schema and
hashes, on every use: a folder changed by hand is refused, one whose bundle file is gone is unpacked again whole.
"""

from __future__ import annotations

import io
import secrets
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

import anyio

from saip.shipped import bundle as bundle_files
from saip.shipped.bundle import BUNDLE_FILE, Bundle, BundleInvalid
from saip.shipyard.errors import RuleRefused
from saip.shipyard.ports import Archives
from saip.v1 import shipyard_pb2


@dataclass(frozen=True)
class Places:
    """Where the shipyard keeps its working copies, and what the generated deployments run."""

    home: Path
    image: str
    kube_context: str | None


def pack(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(folder / BUNDLE_FILE, arcname=BUNDLE_FILE)
        snapshots = folder / bundle_files.SNAPSHOTS
        for path in sorted(snapshots.iterdir()) if snapshots.is_dir() else []:
            archive.add(path, arcname=f"{bundle_files.SNAPSHOTS}/{path.name}")
    return buffer.getvalue()


def unpack(data: bytes, folder: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(folder, filter="data")  # "data": no absolute paths, links or devices leave the folder


def archive_name(name: str, version: int) -> str:
    """The object of one version's bundle in saip-bundles."""
    return f"{name}/v{version}.tar"


class WorkingCopies:
    """The unpacked bundles of the shipped servers, one folder a version under `<home>/shipyard/<name>/`."""

    def __init__(self, archives: Archives, home: Path) -> None:
        self._archives = archives
        self._root = home / "shipyard"

    def folder(self, name: str, version: int) -> Path:
        """The working folder of one version: its bundle, and the deployments generated for its runs."""
        return self._root / name / f"v{version}"

    async def bundle(self, server: shipyard_pb2.ShippedServer) -> Bundle:
        """The version's bundle unpacked in its working folder (once), checked, hashes and all, on every use."""
        folder = self.folder(server.name, server.version)
        if not (folder / BUNDLE_FILE).is_file():
            data = await self._archives.get(server.object)
            scratch = folder.with_name(f".{folder.name}-{secrets.token_hex(4)}")
            await anyio.to_thread.run_sync(unpack, data, scratch)
            if folder.exists():  # a copy without its bundle file (removed by hand): unpacked again whole
                await anyio.to_thread.run_sync(shutil.rmtree, folder)
            scratch.replace(folder)
        try:
            bundle = await anyio.to_thread.run_sync(bundle_files.read, folder)
        except BundleInvalid as exc:
            raise RuleRefused(
                f"the bundle of '{server.name}' v{server.version} at {folder} is refused: {exc}"
            ) from None
        if bundle.sha256 != server.bundle_sha256:
            raise RuleRefused(
                f"the bundle at {folder} is not the one shipped as '{server.name}' v{server.version}; remove the "
                "folder and run again"
            )
        return bundle

    async def remove(self, name: str) -> None:
        """Every working copy of the server `name`, and the generated deployments beside them."""
        folder = self._root / name
        if folder.exists():
            await anyio.to_thread.run_sync(shutil.rmtree, folder)
