"""A route that only calls a method reads the method's input model from the request: the fields its path names from
the path, the others from the query of a GET or DELETE or from the body of a POST or PUT, with the fields' bounds,
defaults and descriptions in /api/docs; what breaks them is answered 422 before the method runs."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import Field

from saip.gateway import rest
from saip.gateway.surface.management import Input, ManagementResult


class NameInput(Input):
    name: str = Field(min_length=1, max_length=8, description="The thing's name.")


class ListInput(Input):
    limit: int = Field(default=20, ge=1, le=50, description="How many.")
    kind: str | None = Field(default=None, max_length=10, description="Only this kind.")


class RenameInput(NameInput):
    to: str = Field(min_length=1, max_length=8, description="The new name.")


class RunInput(NameInput):
    port: int | None = Field(default=None, ge=1024, le=65535, description="The port.")


class Things:
    """An area's methods, each answering what it was given."""

    def __init__(self) -> None:
        self.given: list[Input | None] = []

    async def _answer(self, arguments: Input | None) -> ManagementResult:
        self.given.append(arguments)
        data = arguments.model_dump(exclude_unset=True) if arguments else None
        return ManagementResult(True, "Done.", data=data)

    async def overview(self) -> ManagementResult:
        return await self._answer(None)

    async def listing(self, arguments: ListInput) -> ManagementResult:
        return await self._answer(arguments)

    async def get(self, arguments: NameInput) -> ManagementResult:
        return await self._answer(arguments)

    async def rename(self, arguments: RenameInput) -> ManagementResult:
        return await self._answer(arguments)

    async def create(self, arguments: NameInput) -> ManagementResult:
        return await self._answer(arguments)

    async def run(self, arguments: RunInput, expected: object = None) -> ManagementResult:
        return await self._answer(arguments)


@pytest.fixture
def things() -> Things:
    return Things()


@pytest.fixture
def client(things: Things) -> TestClient:
    app = FastAPI()
    rest.install(app)
    app.include_router(
        rest.area_router(
            "/things",
            {
                "GET": rest.Call(things.listing, "Every thing"),
                "GET /overview": rest.Call(things.overview, "The overview"),
                "POST": rest.Call(things.create, "Create a thing"),
                "GET /{name}": rest.Call(things.get, "One thing"),
                "PUT /{name}": rest.Call(things.rename, "Rename a thing"),
                "POST /{name}/run": rest.Call(things.run, "Run a thing"),
            },
        )
    )
    return TestClient(app)


def test_a_method_that_takes_nothing_is_called_with_nothing(client: TestClient, things: Things) -> None:
    assert client.get("/things/overview").json()["message"] == "Done."
    assert things.given == [None]


def test_the_query_fills_the_input_with_the_fields_defaults(client: TestClient) -> None:
    assert client.get("/things").json()["data"] == {"limit": 20, "kind": None}
    assert client.get("/things", params={"limit": "5", "kind": "tool"}).json()["data"] == {"limit": 5, "kind": "tool"}


def test_the_path_names_a_field_and_the_body_is_the_rest(client: TestClient) -> None:
    assert client.get("/things/cup").json()["data"] == {"name": "cup"}
    assert client.put("/things/cup", json={"to": "mug"}).json()["data"] == {"name": "cup", "to": "mug"}
    assert client.post("/things", json={"name": "jar"}).json()["data"] == {"name": "jar"}


def test_a_body_of_optional_fields_may_be_left_out_and_what_it_leaves_out_stays_unset(client: TestClient) -> None:
    assert client.post("/things/cup/run").json()["data"] == {"name": "cup"}
    assert client.post("/things/cup/run", json={"port": 8080}).json()["data"] == {"name": "cup", "port": 8080}


@pytest.mark.parametrize(
    ("method", "path", "request_", "said"),
    [
        ("GET", "/things", {"params": {"limit": "0"}}, "'query.limit'"),
        ("GET", "/things/much-too-long", {}, "'path.name'"),
        ("PUT", "/things/cup", {"json": {}}, "'body.to' is required"),
        ("PUT", "/things/cup", {"json": {"to": "mug", "colour": "red"}}, "unknown property 'body.colour'"),
        ("POST", "/things/cup/run", {"json": {"port": 80}}, "'body.port'"),
    ],
)
def test_what_breaks_the_input_is_answered_422_before_the_method_runs(
    client: TestClient, things: Things, method: str, path: str, request_: dict[str, Any], said: str
) -> None:
    answer = client.request(method, path, **request_)
    assert answer.status_code == 422 and said in answer.json()["message"]
    assert things.given == []


def test_the_document_shows_each_parameter_with_its_field_s_bounds_and_description(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    [limit, kind] = paths["/things"]["get"]["parameters"]
    assert (limit["in"], limit["description"], limit["schema"]["maximum"], limit["schema"]["default"]) == (
        "query",
        "How many.",
        50,
        20,
    )
    assert (kind["name"], kind["required"]) == ("kind", False)
    [name] = paths["/things/{name}"]["put"]["parameters"]
    assert (name["in"], name["required"], name["schema"]["maxLength"]) == ("path", True, 8)
    assert paths["/things/{name}"]["put"]["requestBody"]["required"] is True
    assert not paths["/things/{name}/run"]["post"]["requestBody"].get("required", False)


def test_a_method_that_takes_more_than_its_input_has_no_such_route(things: Things) -> None:
    async def ingest(arguments: NameInput, caller: str) -> ManagementResult:
        return ManagementResult(True, "Done.")

    with pytest.raises(TypeError, match="with its input"):
        rest.area_router("/things", {"POST": rest.Call(ingest, "Ingest")})
