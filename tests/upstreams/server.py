"""A real upstream MCP server for the tests, built on the SDK's low-level `Server`: `python -m tests.upstreams.server
<transport> <tools.json> [port]` with transport `http` (streamable HTTP on /mcp, answers as SSE streams), `json`
(streamable HTTP answering with JSON bodies), `legacy` (streamable HTTP that refuses `server/discover`, so clients
speak 2025-11-25 with it), `sse` (on /sse), `stdio`, `noisy` (stdio, after a first line of `NOISE` bytes that is no
JSON-RPC and answers nothing: past a small `tools.upstream-max-response-bytes`, it ends every connection), or
`garbage` (an HTTP endpoint on /mcp that answers every request with JSON that is not JSON-RPC).

Its tools are read from the JSON file on every tools/list (a list of MCP tool definitions), so a test changes a
tool's description by rewriting the file: the rug pull; each listing adds a line to `<tools file>.listed`, which a
test counts. What a call does depends on the tool's name:

- `echo`: the arguments back, as text and structured content;
- `env`: the value of the variable named by the argument `name` (the stdio server's clean environment);
- `huge`: `size` bytes of text (a result that must be bounded);
- `hang`: never answers (a call that must time out);
- `slow`: reports progress twice ("half way", "done"), then answers;
- `pid`: the server's process id (a stdio server is gone once its connection closes);
- `ask`: asks its caller for a colour (elicitation: pushed in 2025-11-25, an input request in 2026-07-28) and
  answers what came back (`colour: <colour>`, or the action: `declined`, `cancelled`);
- `ask_twice`: asks for the fence's colour, then for the gate's (`fence: <colour>, gate: <colour>`; an answer that
  is not an accept ends it with its action);
- `ask_watched`: asks for the colour as `ask` does, then waits as `watched` does (a call cancelled after its
  question was answered);
- `watched`: writes `<tools file>.started`, waits forever, and writes `<tools file>.cancelled` when its request is
  cancelled (a cancel that reached the upstream);
- `noise` (stdio): writes a line of `NOISE` bytes that is no JSON-RPC and answers nothing on the wire, then waits
  forever (past a small limit, the line ends the connection under the calls in flight);
- anything else: `<name> ran`.
"""

from __future__ import annotations

import json
import os
import sys
from io import TextIOWrapper
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server import Server, ServerRequestContext
from mcp.server.sse import SseServerTransport
from mcp.server.stdio import stdio_server
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

COLOUR_KEY = "colour"
NOISE = 1024 * 1024
COLOUR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["colour"],
    "properties": {"colour": {"type": "string", "title": "Colour", "description": "Which colour to paint it."}},
}


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)])


async def _ask(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    """The colour question: pushed on the back channel (2025-11-25), or returned for the client's retry (2026-07-28)."""
    message = "Which colour should the fence be?"
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        answer = (params.input_responses or {}).get(COLOUR_KEY)
        if not isinstance(answer, types.ElicitResult):
            request = types.ElicitRequest(
                params=types.ElicitRequestFormParams(message=message, requested_schema=COLOUR_SCHEMA)
            )
            return types.InputRequiredResult(input_requests={COLOUR_KEY: request}, request_state="asked")
        result = answer
    else:
        result = await ctx.session.elicit_form(message, COLOUR_SCHEMA, related_request_id=ctx.request_id)
    if result.action == "accept":
        return _text(f"colour: {(result.content or {}).get('colour')}")
    return _text("declined" if result.action == "decline" else "cancelled")


GATE_KEY = "gate"


async def _ask_twice(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    """Two questions in a row: pushed one after the other (2025-11-25), or one input request per round, the first
    answer carried in the request state (2026-07-28)."""
    questions = {COLOUR_KEY: "Which colour should the fence be?", GATE_KEY: "And which colour should the gate be?"}
    answers: dict[str, types.ElicitResult] = {}
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        if params.request_state:
            answers[COLOUR_KEY] = types.ElicitResult.model_validate_json(params.request_state)
        answers.update(
            {
                key: value
                for key, value in (params.input_responses or {}).items()
                if isinstance(value, types.ElicitResult)
            }
        )
        for key, message in questions.items():
            if key in answers and answers[key].action != "accept":
                break
            if key not in answers:
                request = types.ElicitRequest(
                    params=types.ElicitRequestFormParams(message=message, requested_schema=COLOUR_SCHEMA)
                )
                state = answers[COLOUR_KEY].model_dump_json() if COLOUR_KEY in answers else None
                return types.InputRequiredResult(input_requests={key: request}, request_state=state)
    else:
        for key, message in questions.items():
            answers[key] = await ctx.session.elicit_form(message, COLOUR_SCHEMA, related_request_id=ctx.request_id)
            if answers[key].action != "accept":
                break
    said = []
    for key in questions:
        answer = answers.get(key)
        if answer is None or answer.action != "accept":
            return _text("declined" if answer is not None and answer.action == "decline" else "cancelled")
        said.append(f"{'fence' if key == COLOUR_KEY else key}: {(answer.content or {}).get('colour')}")
    return _text(", ".join(said))


async def _watched(tools_file: Path) -> types.CallToolResult:
    await anyio.Path(f"{tools_file}.started").write_text("started", encoding="utf-8")
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await anyio.Path(f"{tools_file}.cancelled").write_text("cancelled", encoding="utf-8")
        raise
    raise AssertionError("unreachable: sleep_forever returns only by being cancelled")


def build(tools_file: Path, wire: anyio.AsyncFile[str] | None = None) -> Server[Any]:
    """The server; `wire` is a stdio server's stdout, which the SDK writes its messages to."""

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        tools = json.loads(await anyio.Path(tools_file).read_text(encoding="utf-8"))
        async with await anyio.open_file(f"{tools_file}.listed", "a", encoding="utf-8") as listed:
            await listed.write("listed\n")
        return types.ListToolsResult(tools=[types.Tool.model_validate(tool) for tool in tools])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        arguments = dict(params.arguments or {})
        match params.name:
            case "echo":
                text = json.dumps(arguments, sort_keys=True)
                return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=arguments)
            case "env":
                value = os.environ.get(str(arguments.get("name", "")), "(unset)")
                return types.CallToolResult(content=[types.TextContent(text=value)])
            case "huge":
                text = "x" * int(arguments.get("size", 1))
                return types.CallToolResult(content=[types.TextContent(text=text)])
            case "hang":
                await anyio.sleep_forever()
            case "slow":
                await ctx.session.report_progress(1, 2, "half way")
                await ctx.session.report_progress(2, 2, "done")
                return types.CallToolResult(content=[types.TextContent(text="slow ran")])
            case "pid":
                return types.CallToolResult(content=[types.TextContent(text=str(os.getpid()))])
            case "ask":
                return await _ask(ctx, params)
            case "ask_twice":
                return await _ask_twice(ctx, params)
            case "ask_watched":
                asked = await _ask(ctx, params)
                if isinstance(asked, types.InputRequiredResult):
                    return asked
                return await _watched(tools_file)
            case "watched":
                return await _watched(tools_file)
            case "noise":
                if wire is None:
                    raise ValueError("noise is written on a stdio server's wire only")
                # Between the SDK's messages: none is being written while the calls wait.
                await wire.write("x" * NOISE + "\n")
                await wire.flush()
                await anyio.sleep_forever()
        return types.CallToolResult(content=[types.TextContent(text=f"{params.name} ran")])

    return Server("test-upstream", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


def handshake_only(app: Any) -> Any:
    """The app, answering `server/discover` with HTTP 400: a client's probe fails and it falls back to `initialize`
    (the 2025-11-25 era), as against a server that predates 2026-07-28."""

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        if b'"server/discover"' in body:
            await JSONResponse({"error": "server/discover is not spoken here"}, status_code=400)(scope, receive, send)
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await app(scope, replay, send)

    return guarded


def main(argv: list[str]) -> None:
    transport, tools_file = argv[0], Path(argv[1])
    if transport in ("stdio", "noisy"):
        if transport == "noisy":
            sys.stdout.buffer.write(b"x" * NOISE + b"\n")
            sys.stdout.buffer.flush()

        async def run() -> None:
            wire = anyio.wrap_file(TextIOWrapper(sys.stdout.buffer, encoding="utf-8"))
            server = build(tools_file, wire)
            async with stdio_server(stdout=wire) as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run)
        return
    server = build(tools_file)
    port = int(argv[2])
    if transport in ("http", "json"):
        app: Any = server.streamable_http_app(json_response=transport == "json")
    elif transport == "legacy":
        app = handshake_only(server.streamable_http_app())
    elif transport == "garbage":

        async def garbage(request: Request) -> Response:
            return JSONResponse({"this is": "not JSON-RPC"})

        app = Starlette(routes=[Route("/mcp", garbage, methods=["GET", "POST", "DELETE"])])
    else:
        sse = SseServerTransport("/messages/")

        async def connect(request: Request) -> Response:
            async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
                await server.run(read, write, server.create_initialization_options())
            return Response()

        app = Starlette(routes=[Route("/sse", connect), Mount("/messages/", app=sse.handle_post_message)])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(sys.argv[1:])
