"""`saip knowledge ...`: documents, pipelines, search and knowledge tools, through the REST API (the methods the
saip_knowledge_* tools call)."""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path
from typing import Any

import click

from saip.cli.commands import call, listed, on_name, segment
from saip.cli.output import Table, fields, json_option, listing, report

INGEST_TIMEOUT = 660.0  # the gateway gives an ingest 600 s; a large PDF takes a while
UPLOAD_LIMIT = 3 * 1024 * 1024  # what the gateway takes with --upload (its MAX_UPLOAD); a larger file goes by path
DOCUMENTS = Table((32, 16, 0, 0))  # name, media type, chunks, source
PIPELINES = Table((32, 0, 0, 0, 0))  # name, topK, threshold, rerank, scope


def _knowledge(context: click.Context, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    return call(context, method, f"/knowledge{path}", **kwargs)


def _named(kind: str, name: str) -> str:
    return f"/{kind}/{segment(name)}"


@click.group()
def knowledge() -> None:
    """Documents, pipelines, search and knowledge tools (the saip_knowledge_* methods)."""


def _status(data: dict[str, Any]) -> None:
    fields(
        [
            ("Documents", f"{data['documents']} ({data['chunks']} chunks)"),
            ("Pipelines", data["pipelines"]),
            ("Tools", ", ".join(tool["name"] for tool in data["tools"]) or "none published"),
            ("Ingest roots", ", ".join(data["ingestRoots"])),
            ("Vectors", f"{data['vectorStore']} ({data['encoder']})"),
        ]
    )


def _documents(data: dict[str, Any]) -> None:
    for doc in data["documents"]:
        managed = f"  (managed by {doc['managedBy']})" if doc["managedBy"] else ""
        DOCUMENTS.echo(doc["name"], doc["mediaType"], f"{doc['chunks']:>5} chunks", doc["source"] + managed)


def local_path(source: str) -> str:
    """A path as a shell means it: one relative to the working folder that names a file there is made absolute.
    Any other is sent as given, for the service to answer (the path of an ingest root, or why not)."""
    if Path(source).is_absolute() or not Path(source).is_file():
        return source
    return os.path.abspath(source)  # its symlinks as they are: the service follows them and checks where they lead


@knowledge.command("ingest")
@click.argument("source")
@click.option("--name", help="A unique name; the file or URL name when omitted.")
@click.option("--text", "is_text", is_flag=True, help="SOURCE is the text itself ('-' reads standard input).")
@click.option(
    "--upload", is_flag=True, help="SOURCE is a file here, sent with the request (up to 3 MiB), wherever saip runs."
)
@json_option
@click.pass_context
def knowledge_ingest(
    context: click.Context, source: str, name: str | None, is_text: bool, upload: bool, as_json: bool
) -> None:
    """Ingest SOURCE: an absolute path inside an ingest root, an http(s) URL, text with --text, or a file of this
    machine with --upload."""
    if is_text:
        body: dict[str, Any] = {"text": _stdin_text() if source == "-" else source}
    elif upload:
        body = {"upload": _upload(Path(source))}
    elif "://" in source:  # a URL of any scheme: the service says which it takes
        body = {"url": source}
    else:
        body = {"path": local_path(source)}
    if name:
        body["name"] = name
    report(_knowledge(context, "POST", "/documents", json=body, timeout=INGEST_TIMEOUT), as_json)


def _upload(file: Path) -> dict[str, str]:
    """The file to send with --upload, or the error that says what to do instead; a file over the gateway's limit is
    refused before it is read."""
    if not file.is_file():
        raise click.BadParameter(f"{file} is not a file here; give the path of the file to send", param_hint="SOURCE")
    try:
        size = file.stat().st_size
        if size > UPLOAD_LIMIT:
            raise click.ClickException(
                f"{file} is {size / 1024 / 1024:.1f} MiB and --upload sends up to 3 MiB: copy it into an ingest root "
                "(`saip knowledge status` names them) and ingest it by its absolute path"
            )
        content = file.read_bytes()
    except OSError as exc:
        raise click.ClickException(f"cannot read {file}: {exc.strerror or exc}") from None
    return {"filename": file.name, "contentBase64": base64.b64encode(content).decode()}


def _stdin_text() -> str:
    """Standard input as the text to ingest, or the error that says what to give instead (bytes that are not UTF-8
    could not be sent as text)."""
    try:
        return sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError:
        raise click.ClickException(
            "standard input is not UTF-8 text; --text takes text (a file of this machine goes with --upload)"
        ) from None


def _pipelines(data: dict[str, Any]) -> None:
    for pipeline in data["pipelines"]:
        PIPELINES.echo(
            pipeline["name"],
            f"topK {pipeline['topK']}",
            f"threshold {pipeline['threshold']:g}",
            f"rerank {'on' if pipeline['rerank'] else 'off'}",
            f"scope: {', '.join(pipeline['documents']) or 'every document'}",
        )


@knowledge.command("apply-pipeline")
@click.argument("name")
@click.option("-d", "--document", "documents", multiple=True, help="A document in scope (repeat); none: every one.")
@click.option("--top-k", type=click.IntRange(1, 50), help="Passages returned (default 5).")
@click.option("--threshold", type=click.FloatRange(0, 1), help="Minimum relevance (default 0.35).")
@click.option("--rerank/--reading-order", default=None, help="Best passages first, or in reading order.")
@json_option
@click.pass_context
def knowledge_apply_pipeline(
    context: click.Context,
    name: str,
    documents: tuple[str, ...],
    top_k: int | None,
    threshold: float | None,
    rerank: bool | None,
    as_json: bool,
) -> None:
    """Create or update the pipeline NAME."""
    body = {"documents": list(documents), "topK": top_k, "threshold": threshold, "rerank": rerank}
    report(_knowledge(context, "PUT", _named("pipelines", name), json=body), as_json)


@knowledge.command("search")
@click.argument("query")
@click.option("-p", "--pipeline", help="A pipeline's name; every document when omitted.")
@click.option("-k", "--top-k", type=click.IntRange(1, 50), help="Passages returned.")
@json_option
@click.pass_context
def knowledge_search(
    context: click.Context, query: str, pipeline: str | None, top_k: int | None, as_json: bool
) -> None:
    """Search QUERY in a pipeline's documents."""

    def show(data: dict[str, Any]) -> None:
        for hit in data["results"]:
            page = f" p.{hit['page']}" if hit["page"] else ""
            click.echo(f"[{hit['relevance']:.2f}] {hit['document']} #{hit['position']}{page}")
            click.echo("    " + " ".join(hit["text"].split())[:300])

    body = {"query": query, "pipeline": pipeline, "topK": top_k}
    listing(_knowledge(context, "POST", "/search", json=body), as_json, show, entries="results")


@knowledge.command("suggest")
@click.option("-p", "--pipeline", help="One pipeline; every pipeline when omitted.")
@json_option
@click.pass_context
def knowledge_suggest(context: click.Context, pipeline: str | None, as_json: bool) -> None:
    """Knowledge tools proposed from each pipeline's documents."""

    def show(data: dict[str, Any]) -> None:
        for found in data["suggestions"]:
            click.echo(f"{found['name']}  (pipeline '{found['pipeline']}')\n    {found['description']}")

    params = {"pipeline": pipeline} if pipeline else {}
    listing(_knowledge(context, "GET", "/suggestions", params=params), as_json, show, entries="suggestions")


@knowledge.command("publish")
@click.argument("name")
@click.option("-p", "--pipeline", required=True, help="The pipeline the tool searches.")
@click.option("--description", required=True, help="When an AI should use the tool.")
@json_option
@click.pass_context
def knowledge_publish(context: click.Context, name: str, pipeline: str, description: str, as_json: bool) -> None:
    """Publish the knowledge tool NAME on /mcp."""
    body = {"name": name, "pipeline": pipeline, "description": description}
    report(_knowledge(context, "POST", "/tools", json=body), as_json)


for command in (
    listed(
        "status",
        "Documents, chunks, pipelines, published tools and the ingest roots.",
        lambda context: _knowledge(context, "GET", "/status"),
        _status,
    ),
    listed(
        "documents",
        "The ingested documents.",
        lambda context: _knowledge(context, "GET", "/documents"),
        _documents,
        entries="documents",
    ),
    listed(
        "pipelines",
        "The pipelines.",
        lambda context: _knowledge(context, "GET", "/pipelines"),
        _pipelines,
        entries="pipelines",
    ),
    on_name(
        "delete",
        "Delete the document NAME, its chunks and its original.",
        lambda context, name: _knowledge(context, "DELETE", _named("documents", name)),
    ),
    on_name(
        "delete-pipeline",
        "Delete the pipeline NAME (its documents stay).",
        lambda context, name: _knowledge(context, "DELETE", _named("pipelines", name)),
    ),
    on_name(
        "unpublish",
        "Remove the knowledge tool NAME from /mcp.",
        lambda context, name: _knowledge(context, "DELETE", _named("tools", name)),
    ),
):
    knowledge.add_command(command)
