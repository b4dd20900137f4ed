"""The records of the saip-shipyard bucket as messages: the latest version of each shipped server
(`ShippedServer` under `server.<name>`) and its last run (`RunRecord` under `run.<name>`).

A name becomes a key here only: one that no server can have (the characters a name may have) is refused with that
rule (InvalidProposal) before any key is made of it, so no input ever reaches the store as a key it would refuse.
"""

from __future__ import annotations

from saip.shipyard.bundles import name_problem
from saip.shipyard.errors import InvalidProposal, NotFound
from saip.shipyard.ports import Records
from saip.v1 import shipyard_pb2

SERVER_KEY, RUN_KEY = "server.", "run."


def _named(name: str) -> str:
    """`name` as its key's suffix, or the refusal naming the rule."""
    name = name.strip()
    if problem := name_problem(name):
        raise InvalidProposal(problem)
    return name


class ServerRecords:
    """Shipped servers and their runs by name, each write of a server against the revision it read."""

    def __init__(self, records: Records) -> None:
        self._records = records

    async def find(self, name: str) -> tuple[shipyard_pb2.ShippedServer, int] | None:
        """The server `name` and its record's revision, or None when none is shipped under it."""
        found = await self._records.get(SERVER_KEY + _named(name))
        return (shipyard_pb2.ShippedServer.FromString(found[0]), found[1]) if found else None

    async def server(self, name: str) -> shipyard_pb2.ShippedServer:
        """The server `name`; NotFound names the ones there are."""
        found = await self.find(name)
        if found is None:
            raise NotFound(name.strip(), [server.name for server in await self.servers()])
        return found[0]

    async def servers(self) -> list[shipyard_pb2.ShippedServer]:
        servers = []
        for key in await self._records.keys(SERVER_KEY):
            found = await self._records.get(key)
            if found is not None:
                servers.append(shipyard_pb2.ShippedServer.FromString(found[0]))
        return servers

    async def put_server(self, server: shipyard_pb2.ShippedServer, revision: int) -> None:
        """Write `server` over the revision read (0: a first ship); Conflict when it moved on."""
        await self._records.put(SERVER_KEY + _named(server.name), server.SerializeToString(), revision)

    async def run(self, name: str) -> shipyard_pb2.RunRecord | None:
        found = await self._records.get(RUN_KEY + _named(name))
        return shipyard_pb2.RunRecord.FromString(found[0]) if found else None

    async def put_run(self, record: shipyard_pb2.RunRecord) -> None:
        await self._records.put(RUN_KEY + _named(record.name), record.SerializeToString())

    async def delete(self, name: str) -> None:
        """The server's record and its run's."""
        await self._records.delete(SERVER_KEY + _named(name))
        await self._records.delete(RUN_KEY + _named(name))
