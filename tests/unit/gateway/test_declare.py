"""Declaring a tool: its name, input model, caller and description come from the method, its level and plan from
the decorator, and a method that cannot be a tool says why."""

from __future__ import annotations

import pytest
from pydantic import Field

from saip.gateway.surface.declare import Declared, prompt, resource, tool
from saip.gateway.surface.expected import NOTHING
from saip.gateway.surface.management import Approval, Caller, Input, Level, ManagementResult, NoInput


class CityInput(Input):
    city: str = Field(min_length=1, description="Which city.")


class Weather(Declared):
    category = "weather"

    def __init__(self) -> None:
        self.callers: list[Caller] = []

    @tool(Level.READ, "Get the forecast", idempotent=True)
    async def forecast(self, arguments: CityInput) -> ManagementResult:
        """The forecast for one city,
        by the hour."""
        return ManagementResult(True, f"sunny in {arguments.city}")

    async def plan_alert(self, arguments: CityInput) -> Approval:
        return Approval(Level.DESTRUCTIVE, f"page everyone in {arguments.city}", high_risk=True)

    @tool(Level.WRITE, "Raise an alert", verb="raise_alert", planner=plan_alert)
    async def alert(self, arguments: CityInput, caller: Caller) -> ManagementResult:
        """Page the people on call."""
        self.callers.append(caller)
        return ManagementResult(True, "paged")

    @tool(Level.READ, "List the cities", summary="list the cities")
    async def cities(self) -> ManagementResult:
        """Every city with a forecast."""
        return ManagementResult(True, "Paris, Lima")

    @resource("saip://guide/weather", "Weather guide")
    async def guide(self) -> str:
        """How to read a forecast."""
        return "# Forecasts"

    @prompt("saip_weather_report")
    async def report(self, arguments: dict[str, str]) -> object:
        """Write a weather report."""
        return arguments


async def test_a_tool_is_named_bound_and_described_by_its_method() -> None:
    area = Weather()
    tools = {found.name: found for found in area.tools()}
    assert list(tools) == ["saip_weather_forecast", "saip_weather_raise_alert", "saip_weather_cities"]
    forecast = tools["saip_weather_forecast"]
    assert (forecast.input_model, forecast.level, forecast.title, forecast.idempotent) == (
        CityInput,
        Level.READ,
        "Get the forecast",
        True,
    )
    assert forecast.description == "The forecast for one city, by the hour."
    assert tools["saip_weather_cities"].input_model is NoInput
    assert (await forecast.handler(CityInput(city="Lima"), Caller(), NOTHING)).message == "sunny in Lima"


async def test_the_caller_reaches_a_handler_that_asks_for_it_and_the_plan_is_the_area_s() -> None:
    area = Weather()
    alert = next(found for found in area.tools() if found.name == "saip_weather_raise_alert")
    arguments = alert.bind({"city": "Paris"})
    assert await alert.approval_for(arguments) == Approval(Level.DESTRUCTIVE, "page everyone in Paris", high_risk=True)
    await alert.handler(arguments, Caller(client_name="probe"), NOTHING)
    assert [caller.client_name for caller in area.callers] == ["probe"]
    cities = next(found for found in area.tools() if found.name == "saip_weather_cities")
    assert await cities.approval_for(NoInput()) == Approval(Level.READ, "list the cities")


def test_resources_and_prompts_take_their_descriptions_from_the_docstring() -> None:
    area = Weather()
    [guide] = area.resources()
    [report] = area.prompts()
    assert (guide.uri, guide.name, guide.description, guide.mime_type) == (
        "saip://guide/weather",
        "Weather guide",
        "How to read a forecast.",
        "text/markdown",
    )
    assert (report.name, report.description) == ("saip_weather_report", "Write a weather report.")


def test_a_tool_without_a_description_is_refused() -> None:
    class Silent(Declared):
        category = "silent"

        @tool(Level.READ, "Nothing")
        async def nothing(self) -> ManagementResult:
            return ManagementResult(True, "")

    with pytest.raises(TypeError, match="write the description the AI reads as the method's docstring"):
        Silent().tools()


def test_a_handler_that_takes_something_else_is_refused() -> None:
    class Loose(Declared):
        category = "loose"

        @tool(Level.READ, "Loose")
        async def loose(self, city: str) -> ManagementResult:
            """Takes a bare string."""
            return ManagementResult(True, city)

    with pytest.raises(TypeError, match="'city' is none of them"):
        Loose().tools()
