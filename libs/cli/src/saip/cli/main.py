"""`saip`: the person's command line. `saip run` starts the local stack; the rest talks to the REST API."""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import quote

import click

from saip.cli.client import ApiError, GatewayApi, default_admin_token, default_url
from saip.cli.tools import tools

OUTCOMES = ["OK", "ERROR", "REFUSED", "DECLINED", "DENIED", "TIMEOUT"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", default=default_url, show_default="SAIP_GATEWAY_URL or http://127.0.0.1:8282", help="Gateway.")
@click.option(
    "--admin-token",
    default=default_admin_token,
    show_default="SAIP_ADMIN_TOKEN or $SAIP_HOME/admin-token",
    help="The REST API's bearer token.",
)
@click.pass_context
def cli(context: click.Context, url: str, admin_token: str | None) -> None:
    """Operate saip: the same methods the AI reaches through the saip_* tools."""
    context.obj = (url, admin_token)


def _api(context: click.Context) -> GatewayApi:
    url, token = context.obj
    try:
        return GatewayApi(url, token)
    except ApiError as exc:
        raise click.ClickException(str(exc)) from None


def _call(context: click.Context, action: Any) -> Any:
    with _api(context) as api:
        try:
            return action(api)
        except ApiError as exc:
            raise click.ClickException(str(exc)) from None


@cli.command()
def run() -> None:
    """Start NATS and every service as local processes; print the MCP URL and the tokens. Ctrl-C stops it all."""
    from saip.cli.stack import run as run_stack

    sys.exit(run_stack())


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSON.")
@click.pass_context
def status(context: click.Context, as_json: bool) -> None:
    """The gateway, its MCP token, the management surface and the services it depends on."""
    data = _call(context, lambda api: api.status())
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    management, token = data["management"], data["mcp"]["token"]
    surface = f"on ({len(management['tools'])} tools)" if management["surface"] else f"off: {management['reason']}"
    click.echo(f"MCP endpoint:     {data['mcp']['url']}")
    click.echo(f"MCP token:        {'set by ' + token['source'] if token['set'] else 'not set'}")
    click.echo(f"Management tools: {surface}")
    click.echo(f"Approval:         {management['approval']}, wait {management['approvalWaitSeconds']:g} s")
    click.echo("Services:         " + ", ".join(f"{name} {state}" for name, state in data["services"].items()))


@cli.group()
def token() -> None:
    """The MCP bearer token that turns the management tools on."""


@token.command()
@click.pass_context
def rotate(context: click.Context) -> None:
    """Generate a new MCP token (the old one stops working on every replica). It is shown once."""
    click.echo(_call(context, lambda api: api.rotate_token()))


@token.command()
@click.pass_context
def remove(context: click.Context) -> None:
    """Remove the MCP token: /mcp then serves published tools only, without the management tools."""
    _call(context, lambda api: api.remove_token())
    click.echo("MCP token removed; the management tools are gone from /mcp.")


@cli.group()
def audit() -> None:
    """The audit trail of every management call."""


def _line(entry: dict[str, Any]) -> str:
    time = (entry.get("time") or "")[:19].replace("T", " ")
    if entry.get("kind") == "risk":
        return f"{time}  risk  {entry['severity']:<4}  {entry['type']:<22}  {entry['summary']}"
    approval = f"  approval={entry['approval']}" if entry.get("approval") else ""
    kind = entry.get("level") or entry.get("source", "")  # a management call's level, a tool call's source
    return (
        f"{time}  {entry.get('client', ''):<24}  {entry['tool']:<32}  {kind:<11}  "
        f"{entry['outcome']:<8}  {entry['durationMs']:>6} ms{approval}  {entry.get('summary', '')}"
    )


def _print_page(page: dict[str, Any]) -> None:
    for entry in page["entries"]:
        click.echo(_line(entry))
    if page["nextCursor"]:
        click.echo(f"(older: --before {page['nextCursor']})")


@audit.command()
@click.option("-n", "--backlog", default=20, show_default=True, type=click.IntRange(1, 500), help="Entries first.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per line.")
@click.pass_context
def tail(context: click.Context, backlog: int, as_json: bool) -> None:
    """Print the last entries, then every new one as it is chained (Ctrl-C stops)."""
    with _api(context) as api:
        try:
            for entry in api.tail(backlog):
                click.echo(json.dumps(entry) if as_json else _line(entry))
        except ApiError as exc:
            raise click.ClickException(str(exc)) from None
        except KeyboardInterrupt:
            return


@audit.command()
@click.option("-n", "--limit", default=20, show_default=True, type=click.IntRange(1, 500))
@click.option("--tool", help="Only this tool.")
@click.option("--outcome", type=click.Choice(OUTCOMES), help="Only this outcome.")
@click.option("--before", type=click.IntRange(min=0), help="The nextCursor of the previous page.")
@click.pass_context
def log(context: click.Context, limit: int, tool: str | None, outcome: str | None, before: int | None) -> None:
    """Management calls, newest first."""
    _print_page(_call(context, lambda api: api.management_log(limit=limit, tool=tool, outcome=outcome, before=before)))


@audit.command()
@click.option("-n", "--limit", default=20, show_default=True, type=click.IntRange(1, 500))
@click.option("--tool", help="Only this tool.")
@click.option("--before", type=click.IntRange(min=0), help="The nextCursor of the previous page.")
@click.pass_context
def calls(context: click.Context, limit: int, tool: str | None, before: int | None) -> None:
    """Published tool calls (authored and knowledge tools), newest first."""
    _print_page(_call(context, lambda api: api.tool_calls(limit=limit, tool=tool, before=before)))


@audit.command()
@click.pass_context
def verify(context: click.Context) -> None:
    """Walk the hash chain; exit 1 and name the first broken link when it does not hold."""
    result = _call(context, lambda api: api.verify())
    if result["ok"]:
        click.echo(
            f"chain intact: {result['checked']} entries checked (#{result['firstIndex']}..#{result['lastIndex']})"
        )
        return
    broken = result["broken"]
    raise click.ClickException(
        f"chain broken at entry #{broken['index']} (cursor {broken['cursor']}): {broken['reason']}"
    )


@cli.group()
def knowledge() -> None:
    """Documents, pipelines, search and knowledge tools (the saip_knowledge_* methods)."""


def _json_out(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _quoted(name: str) -> str:
    return quote(name, safe="")


@knowledge.command("status")
@click.pass_context
def knowledge_status(context: click.Context) -> None:
    """Documents, chunks, pipelines, published tools and the ingest roots."""
    data = _call(context, lambda api: api.knowledge("GET", "/status"))
    click.echo(f"Documents:    {data['documents']} ({data['chunks']} chunks)")
    click.echo(f"Pipelines:    {data['pipelines']}")
    click.echo(f"Tools:        {', '.join(tool['name'] for tool in data['tools']) or 'none published'}")
    click.echo(f"Ingest roots: {', '.join(data['ingestRoots'])}")
    click.echo(f"Vectors:      {data['vectorStore']} ({data['encoder']})")


@knowledge.command("documents")
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSON.")
@click.pass_context
def knowledge_documents(context: click.Context, as_json: bool) -> None:
    """The ingested documents."""
    data = _call(context, lambda api: api.knowledge("GET", "/documents"))
    if as_json:
        _json_out(data)
        return
    for doc in data["documents"]:
        managed = f"  (managed by {doc['managedBy']})" if doc["managedBy"] else ""
        click.echo(f"{doc['name']:<32}  {doc['mediaType']:<16}  {doc['chunks']:>5} chunks  {doc['source']}{managed}")


@knowledge.command("ingest")
@click.argument("source")
@click.option("--name", help="A unique name; the file or URL name when omitted.")
@click.option("--text", "is_text", is_flag=True, help="SOURCE is the text itself ('-' reads standard input).")
@click.pass_context
def knowledge_ingest(context: click.Context, source: str, name: str | None, is_text: bool) -> None:
    """Ingest SOURCE: an absolute path inside an ingest root, an http(s) URL, or text with --text."""
    if is_text:
        body: dict[str, Any] = {"text": sys.stdin.read() if source == "-" else source}
    elif source.startswith(("http://", "https://")):
        body = {"url": source}
    else:
        body = {"path": source}
    if name:
        body["name"] = name
    data = _call(context, lambda api: api.knowledge("POST", "/documents", json=body, timeout=660))
    document = data["document"]
    click.echo(f"Ingested '{document['name']}': {document['chunks']} chunks.")
    if data["createdPipeline"]:
        click.echo("Created the pipeline 'All documents (simple)'.")


@knowledge.command("delete")
@click.argument("name")
@click.pass_context
def knowledge_delete(context: click.Context, name: str) -> None:
    """Delete a document, its chunks and its original."""
    data = _call(context, lambda api: api.knowledge("DELETE", f"/documents/{_quoted(name)}"))
    click.echo(f"Deleted '{data['document']['name']}' and its {data['chunksDeleted']} chunks.")


@knowledge.command("pipelines")
@click.pass_context
def knowledge_pipelines(context: click.Context) -> None:
    """The pipelines."""
    for pipeline in _call(context, lambda api: api.knowledge("GET", "/pipelines"))["pipelines"]:
        scope = ", ".join(pipeline["documents"]) or "every document"
        click.echo(
            f"{pipeline['name']:<32}  topK {pipeline['topK']}  threshold {pipeline['threshold']:g}  "
            f"rerank {'on' if pipeline['rerank'] else 'off'}  scope: {scope}"
        )


@knowledge.command("apply-pipeline")
@click.argument("name")
@click.option("-d", "--document", "documents", multiple=True, help="A document in scope (repeat); none: every one.")
@click.option("--top-k", type=click.IntRange(1, 50), help="Passages returned (default 5).")
@click.option("--threshold", type=click.FloatRange(0, 1), help="Minimum relevance (default 0.35).")
@click.option("--rerank/--reading-order", default=None, help="Best passages first, or in reading order.")
@click.pass_context
def knowledge_apply_pipeline(
    context: click.Context,
    name: str,
    documents: tuple[str, ...],
    top_k: int | None,
    threshold: float | None,
    rerank: bool | None,
) -> None:
    """Create or update the pipeline NAME."""
    body = {"documents": list(documents), "topK": top_k, "threshold": threshold, "rerank": rerank}
    data = _call(context, lambda api: api.knowledge("PUT", f"/pipelines/{_quoted(name)}", json=body))
    click.echo(f"Pipeline '{data['name']}': scope {', '.join(data['documents']) or 'every document'}.")


@knowledge.command("delete-pipeline")
@click.argument("name")
@click.pass_context
def knowledge_delete_pipeline(context: click.Context, name: str) -> None:
    """Delete the pipeline NAME (its documents stay)."""
    data = _call(context, lambda api: api.knowledge("DELETE", f"/pipelines/{_quoted(name)}"))
    click.echo(f"Deleted the pipeline '{data['name']}'.")


@knowledge.command("search")
@click.argument("query")
@click.option("-p", "--pipeline", help="A pipeline's name; every document when omitted.")
@click.option("-k", "--top-k", type=click.IntRange(1, 50), help="Passages returned.")
@click.option("--json", "as_json", is_flag=True, help="Print the raw JSON.")
@click.pass_context
def knowledge_search(
    context: click.Context, query: str, pipeline: str | None, top_k: int | None, as_json: bool
) -> None:
    """Search QUERY in a pipeline's documents."""
    body = {"query": query, "pipeline": pipeline, "topK": top_k}
    data = _call(context, lambda api: api.knowledge("POST", "/search", json=body))
    if as_json:
        _json_out(data)
        return
    for hit in data["results"]:
        page = f" p.{hit['page']}" if hit["page"] else ""
        click.echo(f"[{hit['relevance']:.2f}] {hit['document']} #{hit['position']}{page}")
        click.echo("    " + " ".join(hit["text"].split())[:300])
    if not data["results"]:
        click.echo("No passage matched; try the words the documents use.")


@knowledge.command("suggest")
@click.option("-p", "--pipeline", help="One pipeline; every pipeline when omitted.")
@click.pass_context
def knowledge_suggest(context: click.Context, pipeline: str | None) -> None:
    """Knowledge tools proposed from each pipeline's documents."""
    params = {"pipeline": pipeline} if pipeline else {}
    for found in _call(context, lambda api: api.knowledge("GET", "/suggestions", params=params))["suggestions"]:
        click.echo(f"{found['name']}  (pipeline '{found['pipeline']}')\n    {found['description']}")


@knowledge.command("publish")
@click.argument("name")
@click.option("-p", "--pipeline", required=True, help="The pipeline the tool searches.")
@click.option("--description", required=True, help="When an AI should use the tool.")
@click.pass_context
def knowledge_publish(context: click.Context, name: str, pipeline: str, description: str) -> None:
    """Publish the knowledge tool NAME on /mcp."""
    body = {"name": name, "pipeline": pipeline, "description": description}
    data = _call(context, lambda api: api.knowledge("POST", "/tools", json=body))
    click.echo(f"Published '{data['name']}', searching '{data['pipeline']}'.")


@knowledge.command("unpublish")
@click.argument("name")
@click.pass_context
def knowledge_unpublish(context: click.Context, name: str) -> None:
    """Remove the knowledge tool NAME from /mcp."""
    data = _call(context, lambda api: api.knowledge("DELETE", f"/tools/{_quoted(name)}"))
    click.echo(f"Unpublished '{data['name']}'.")


cli.add_command(tools)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
