"""The knowledge service over gRPC, on a real nats-server and Qdrant Edge in the test's folder: ingest, search,
pipelines, knowledge tools, refusals that leave nothing behind, configuration that wins, state that survives a
restart, and the migration of an earlier build's local-mode folder."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http.server
import json
import logging
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import grpc
import httpx
import pytest
from nats.aio.client import Client as NatsClient
from nats.js.errors import NotFoundError

from saip.common import bus, jetstream, names
from saip.common.natsd import LocalNats
from saip.common.netguard import NetworkMode
from saip.common.watch import keep_alive
from saip.knowledge.clients import GuardedFetcher, KvCatalog, ObjectOriginals
from saip.knowledge.config import DeclaredDocument, DeclaredPipeline
from saip.knowledge.knowledge import Knowledge
from saip.knowledge.qdrant import QdrantIndex
from saip.knowledge.server import Running
from saip.v1 import common_pb2, events_pb2, knowledge_pb2, knowledge_pb2_grpc
from tests.http_origin import http_origin
from tests.integration.knowledge_support import (
    ingest,
    knowledge_settings,
    knowledge_stub,
    refusal,
    running_knowledge,
)
from tests.unit.knowledge.samples import minilm, pdf, prose

pytestmark = pytest.mark.integration

Stub = knowledge_pb2_grpc.KnowledgeServiceStub

RUNBOOK = """# NATS runbook

Restart the NATS broker with `systemctl restart nats` when clients report a stale connection. JetStream keeps
every stream on disk, so a restart loses nothing; consumers resume from their last acknowledged message.

Before a restart, drain the gateway so in-flight approval questions are answered first.
"""
METRICS_PAGE = """<html><head><title>Gateway metrics</title></head><body>
<h1>Scraping</h1><p>Prometheus scrapes the gateway on /metrics every fifteen seconds; the histogram
saip_gateway_management_call_seconds shows how long approvals take.</p>
<p>Dashboards in Grafana read only metrics a test proves are exported, which keeps panels from going blank.</p>
</body></html>"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = (tmp_path / "docs").resolve()
    folder.mkdir()
    (folder / "runbook.md").write_text(RUNBOOK)
    (folder / "metrics.html").write_text(METRICS_PAGE)
    (folder / "qdrant.pdf").write_bytes(
        pdf(
            [
                "Qdrant keeps the chunk vectors; local mode stores them in a folder owned by one process.",
                "Point QDRANT_URL at a Qdrant server to share the collection between knowledge replicas.",
            ],
            title="Vector store notes",
        )
    )
    return folder


@pytest.fixture
async def app(tmp_path: Path, root: Path, nats_server: LocalNats) -> AsyncIterator[Running]:
    settings = knowledge_settings(tmp_path / "home", nats_server.url, knowledge_ingest_roots=[root])
    async with running_knowledge(settings) as running:
        yield running


@pytest.fixture
async def stub(app: Running) -> AsyncIterator[Stub]:
    async with knowledge_stub(app.port) as client:
        yield client


async def chunk_count(stub: Stub) -> int:
    return (await stub.GetStatus(knowledge_pb2.GetKnowledgeStatusRequest())).chunks


async def test_three_types_are_ingested_and_searched_with_names_and_positions(stub: Stub, root: Path) -> None:
    first, steps = await ingest(stub, path=str(root / "runbook.md"))
    second, _ = await ingest(stub, path=str(root / "metrics.html"))
    third, _ = await ingest(stub, path=str(root / "qdrant.pdf"), name="Vector store")
    assert first.created_default_pipeline and not second.created_default_pipeline
    assert [step.done for step in steps] == [0, 1] and steps[-1].total == 1
    assert (first.document.name, first.document.media_type, first.document.title) == (
        "runbook.md",
        "text/markdown",
        "NATS runbook",
    )
    assert (third.document.id, third.document.pages, third.document.title) == ("vector-store", 2, "Vector store notes")

    listed = await stub.ListDocuments(knowledge_pb2.ListDocumentsRequest())
    assert [doc.name for doc in listed.documents] == ["metrics.html", "runbook.md", "Vector store"]
    pipelines = await stub.ListPipelines(knowledge_pb2.ListPipelinesRequest())
    assert [(p.name, p.top_k, round(p.threshold, 2), list(p.document_ids)) for p in pipelines.pipelines] == [
        ("All documents (simple)", 5, 0.35, [])
    ]

    found = await stub.Search(knowledge_pb2.SearchRequest(pipeline="All documents (simple)", query="restart nats"))
    best = found.hits[0]
    assert (best.document_name, best.position, best.source) == ("runbook.md", 0, str(root / "runbook.md"))
    assert "systemctl restart nats" in best.text and best.relevance == 1.0
    pdf_hit = (await stub.Search(knowledge_pb2.SearchRequest(query="QDRANT_URL replicas server"))).hits[0]
    assert (pdf_hit.document_name, pdf_hit.page) == ("Vector store", 1)
    html_hit = (await stub.Search(knowledge_pb2.SearchRequest(query="prometheus scrapes"))).hits[0]
    assert html_hit.document_name == "metrics.html" and "<p>" not in html_hit.text


async def test_ingest_by_text_and_a_long_document_reports_progress_per_batch(stub: Stub) -> None:
    text = prose(1600, topic="compaction")
    done, steps = await ingest(stub, text=text, name="Compaction notes")
    chunks = done.document.chunks
    assert chunks > 256 and done.document.source_kind == "text"
    assert [step.done for step in steps] == [0, 256, chunks] and {step.total for step in steps} == {chunks}
    assert await chunk_count(stub) == chunks


@pytest.mark.parametrize(
    ("source", "code", "words"),
    [
        pytest.param({"path": "runbook.md"}, grpc.StatusCode.INVALID_ARGUMENT, "Paths are explicit", id="relative"),
        pytest.param({"path": "/nowhere/else.md"}, grpc.StatusCode.FAILED_PRECONDITION, "outside", id="outside"),
        pytest.param({"text": "   "}, grpc.StatusCode.INVALID_ARGUMENT, "the text is empty", id="empty-text"),
        pytest.param({"url": "ftp://example.org/a"}, grpc.StatusCode.INVALID_ARGUMENT, "http(s) URL", id="ftp"),
        pytest.param({}, grpc.StatusCode.INVALID_ARGUMENT, "give one of path", id="no-source"),
    ],
)
async def test_bad_input_is_refused_with_what_to_do_instead(
    stub: Stub, source: dict[str, str], code: grpc.StatusCode, words: str
) -> None:
    refused = await refusal(stub, **source)
    assert refused.code() == code and words in (refused.details() or "")
    assert await chunk_count(stub) == 0


async def test_a_relative_path_is_answered_with_the_absolute_path(stub: Stub, root: Path) -> None:
    refused = await refusal(stub, path="runbook.md")
    assert f"'{root / 'runbook.md'}'" in (refused.details() or "")


async def test_files_that_cannot_be_ingested_leave_nothing_behind(stub: Stub, root: Path, tmp_path: Path) -> None:
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (root / "binary.txt").write_bytes(b"\x00\x01\x02binary")
    (root / "huge.txt").write_bytes(b"a " * (6 << 20))
    (root / "deep.json").write_bytes(b"[" * 5000 + b"]" * 5000)
    (root / "deeper.json").write_bytes(b'{"a":' * 5000 + b"1" + b"}" * 5000)
    (tmp_path / "secret.md").write_text("# Secret\n")
    os.symlink(tmp_path / "secret.md", root / "escape.md")
    cases = {
        "missing.md": (grpc.StatusCode.NOT_FOUND, "is missing"),
        "image.png": (grpc.StatusCode.INVALID_ARGUMENT, "unsupported type"),
        "binary.txt": (grpc.StatusCode.INVALID_ARGUMENT, "looks binary"),
        "huge.txt": (grpc.StatusCode.INVALID_ARGUMENT, "more than the ingest limit"),
        "escape.md": (grpc.StatusCode.FAILED_PRECONDITION, "a symlink cannot leave them"),
        "deep.json": (grpc.StatusCode.INVALID_ARGUMENT, "nested more than 64 levels deep"),
        "deeper.json": (grpc.StatusCode.INVALID_ARGUMENT, "nested more than 64 levels deep"),
    }
    for name, (code, words) in cases.items():
        refused = await refusal(stub, path=str(root / name))
        assert (refused.code(), words in (refused.details() or "")) == (code, True), name
    status = await stub.GetStatus(knowledge_pb2.GetKnowledgeStatusRequest())
    assert (status.documents, status.chunks, status.pipelines) == (0, 0, 0)


async def test_the_same_name_or_content_twice_is_refused(stub: Stub, root: Path) -> None:
    await ingest(stub, path=str(root / "runbook.md"))
    again = await refusal(stub, text="# Other\n\nother text entirely", name="RUNBOOK.md")
    twin = await refusal(stub, text=RUNBOOK, name="copy")
    assert again.code() == grpc.StatusCode.ALREADY_EXISTS and "named 'runbook.md' exists" in (again.details() or "")
    assert twin.code() == grpc.StatusCode.ALREADY_EXISTS and "already ingested as 'runbook.md'" in (
        twin.details() or ""
    )


async def test_a_failed_ingest_leaves_no_chunks_and_no_original(app: Running, nats_client: NatsClient) -> None:
    """The caller goes away after the chunks are indexed but before the commit: everything stored is removed."""

    class Gone(Exception):
        pass

    async def progress(done: int, total: int, message: str) -> None:
        if done > 0:
            raise Gone

    with pytest.raises(Gone):
        await app.knowledge.ingest("text", prose(30), "Half written", progress=progress)
    assert app.knowledge.documents() == []
    assert (await app.knowledge.status())["chunks"] == 0
    assert await live_originals(nats_client) == []


async def live_originals(nats_client: NatsClient) -> list[str]:
    store = await nats_client.jetstream().object_store(names.DOCUMENTS_OBJECT_STORE)
    try:
        return [info.name for info in await store.list(ignore_deletes=True)]
    except NotFoundError:  # nats-py's answer for a store with no object in it
        return []


async def test_deleting_a_document_removes_its_chunks_and_original(
    stub: Stub, root: Path, nats_client: NatsClient
) -> None:
    kept, _ = await ingest(stub, path=str(root / "runbook.md"))
    other, _ = await ingest(stub, path=str(root / "metrics.html"))
    assert sorted(await live_originals(nats_client)) == sorted([kept.document.ingest_id, other.document.ingest_id])
    before = await chunk_count(stub)
    deleted = await stub.DeleteDocument(knowledge_pb2.DeleteDocumentRequest(name="runbook.md"))
    assert deleted.chunks_deleted == 1 and await chunk_count(stub) == before - 1
    assert await live_originals(nats_client) == [other.document.ingest_id]
    found = await stub.Search(knowledge_pb2.SearchRequest(query="restart nats broker"))
    assert all(hit.document_name != "runbook.md" for hit in found.hits)
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await stub.DeleteDocument(knowledge_pb2.DeleteDocumentRequest(name="runbook.md"))
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND and "'metrics.html'" in (missing.value.details() or "")


async def test_pipelines_scope_documents_and_refuse_what_would_dangle(stub: Stub, root: Path) -> None:
    await ingest(stub, path=str(root / "runbook.md"))
    await ingest(stub, path=str(root / "qdrant.pdf"))
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await stub.ApplyPipeline(knowledge_pb2.ApplyPipelineRequest(name="Ops", documents=["gone.md"]))
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND and "no document named 'gone.md'" in (
        unknown.value.details() or ""
    )
    applied = await stub.ApplyPipeline(
        knowledge_pb2.ApplyPipelineRequest(name="Ops", documents=["runbook.md"], top_k=2, threshold=0.5)
    )
    assert applied.created and list(applied.pipeline.document_names) == ["runbook.md"]
    scoped = await stub.Search(knowledge_pb2.SearchRequest(pipeline="ops", query="qdrant restart"))
    assert {hit.document_name for hit in scoped.hits} == {"runbook.md"}
    updated = await stub.ApplyPipeline(knowledge_pb2.ApplyPipelineRequest(name="OPS", documents=["runbook.md"]))
    assert not updated.created and (updated.pipeline.name, updated.pipeline.top_k) == ("Ops", 2)

    with pytest.raises(grpc.aio.AioRpcError) as in_use:
        await stub.DeleteDocument(knowledge_pb2.DeleteDocumentRequest(name="runbook.md"))
    assert in_use.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "in the scope of the pipeline(s) 'Ops'" in (in_use.value.details() or "")


async def test_the_threshold_drops_weak_matches_and_rerank_off_keeps_reading_order(stub: Stub) -> None:
    text = "\n\n".join(
        [
            "Compaction merges segments. " * 20 + "Rarely, compaction pauses writes.",
            "Backups copy the store nightly. " * 20 + "Compaction is not needed before a backup.",
            "Compaction compaction compaction: the merge policy, the segment sizes and the compaction schedule. " * 8,
        ]
    )
    await ingest(stub, text=text, name="Storage")
    await stub.ApplyPipeline(
        knowledge_pb2.ApplyPipelineRequest(name="Loose", documents=[], threshold=0.0, rerank=False, top_k=10)
    )
    loose = await stub.Search(knowledge_pb2.SearchRequest(pipeline="Loose", query="compaction"))
    strict = await stub.Search(knowledge_pb2.SearchRequest(query="compaction"))  # default threshold 0.35
    assert [hit.position for hit in loose.hits] == sorted(hit.position for hit in loose.hits)
    assert len(strict.hits) + strict.dropped_below_threshold == len(loose.hits)
    assert all(hit.relevance >= 0.35 for hit in strict.hits)
    assert [hit.score for hit in strict.hits] == sorted((hit.score for hit in strict.hits), reverse=True)


async def test_a_query_without_content_words_is_refused(stub: Stub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as empty:
        await stub.Search(knowledge_pb2.SearchRequest(query="the and of"))
    assert empty.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "no searchable words" in (
        empty.value.details() or ""
    )


async def test_a_suggested_tool_is_published_served_called_and_unpublished(stub: Stub, root: Path) -> None:
    await ingest(stub, path=str(root / "runbook.md"))
    await ingest(stub, path=str(root / "metrics.html"))
    [suggestion] = (await stub.SuggestTools(knowledge_pb2.SuggestToolsRequest())).suggestions
    assert suggestion.pipeline == "All documents (simple)" and suggestion.name.startswith("search_")
    assert "'NATS runbook'" in suggestion.description and "'Gateway metrics'" in suggestion.description

    with pytest.raises(grpc.aio.AioRpcError) as reserved:
        await stub.PublishTool(
            knowledge_pb2.PublishKnowledgeToolRequest(name="saip_docs", description="d", pipeline=suggestion.pipeline)
        )
    assert "starts with 'saip_', which is reserved for this app's own management tools" in (
        reserved.value.details() or ""
    )
    published = await stub.PublishTool(
        knowledge_pb2.PublishKnowledgeToolRequest(
            name=suggestion.name, description=suggestion.description, pipeline=suggestion.pipeline
        )
    )
    assert published.tool.pipeline_name == "All documents (simple)"

    [served] = (await stub.ListServedTools(common_pb2.ListServedToolsRequest())).tools
    schema = json.loads(served.input_schema_json)
    assert (served.name, served.source, served.read_only, served.idempotent) == (
        suggestion.name,
        "knowledge",
        True,
        True,
    )
    assert schema["required"] == ["query"] and set(schema["properties"]) == {"query", "topK"}

    reply = await stub.CallServedTool(
        common_pb2.CallServedToolRequest(name=served.name, arguments_json=json.dumps({"query": "restart nats"}))
    )
    answer = json.loads(reply.text)
    assert not reply.is_error and json.loads(reply.structured_json) == answer
    assert answer["results"][0]["document"] == "runbook.md" and answer["results"][0]["source"] == str(
        root / "runbook.md"
    )
    bad = await stub.CallServedTool(
        common_pb2.CallServedToolRequest(name=served.name, arguments_json=json.dumps({"q": "x"}))
    )
    assert bad.is_error and "unknown argument(s) ['q']" in bad.text

    with pytest.raises(grpc.aio.AioRpcError) as used:
        await stub.DeletePipeline(knowledge_pb2.DeletePipelineRequest(name="All documents (simple)"))
    assert f"'{served.name}' search" in (used.value.details() or "")
    await stub.UnpublishTool(knowledge_pb2.UnpublishKnowledgeToolRequest(name=served.name))
    assert not (await stub.ListServedTools(common_pb2.ListServedToolsRequest())).tools


async def test_a_url_to_a_private_address_is_refused_and_raised_as_a_risk_event(
    stub: Stub, nats_client: NatsClient
) -> None:
    js = nats_client.jetstream()
    risks = await js.subscribe(names.AUDIT_RISK, ordered_consumer=True)
    refused = await refusal(stub, url="http://127.0.0.1:9/secrets.json")
    assert refused.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "refused by the network guard" in (refused.details() or "")
    message = await risks.next_msg(timeout=10)
    event = events_pb2.AuditRecord.FromString(message.data).risk
    assert (event.service, event.type, event.reason) == ("knowledge", "sandbox-guard-blocked", "private-address")
    await risks.unsubscribe()


@pytest.fixture
def web(root: Path) -> Iterator[str]:
    """A local web server over the docs folder (the guard is open for this test; strict refuses loopback)."""
    with http_origin(functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))) as url:
        yield url


async def test_ingest_by_url_reads_the_page_through_the_guarded_fetch(
    tmp_path: Path, root: Path, nats_server: LocalNats, web: str
) -> None:
    settings = knowledge_settings(tmp_path / "home", nats_server.url, knowledge_ingest_roots=[root])
    async with running_knowledge(settings, url_mode=NetworkMode.OPEN) as app, knowledge_stub(app.port) as stub:
        done, _ = await ingest(stub, url=f"{web}/metrics.html")
        missing = await refusal(stub, url=f"{web}/absent.md")
    assert (done.document.name, done.document.media_type, done.document.source_kind) == (
        "metrics.html",
        "text/html",
        "url",
    )
    assert missing.code() == grpc.StatusCode.NOT_FOUND and "answered HTTP 404" in (missing.details() or "")


async def test_configured_documents_and_pipelines_are_read_only_and_survive_a_restart(
    tmp_path: Path, root: Path, nats_server: LocalNats
) -> None:
    settings = knowledge_settings(
        tmp_path / "home",
        nats_server.url,
        knowledge_ingest_roots=[root],
        knowledge_documents=[DeclaredDocument(name="Runbook", path=str(root / "runbook.md"))],
        knowledge_pipelines=[DeclaredPipeline(name="Ops", documents=["Runbook"], top_k=3)],
    )
    async with running_knowledge(settings) as app, knowledge_stub(app.port) as stub:
        [document] = (await stub.ListDocuments(knowledge_pb2.ListDocumentsRequest())).documents
        assert document.managed_by == "knowledge.documents"
        with pytest.raises(grpc.aio.AioRpcError) as doc_refused:
            await stub.DeleteDocument(knowledge_pb2.DeleteDocumentRequest(name="Runbook"))
        with pytest.raises(grpc.aio.AioRpcError) as pipe_refused:
            await stub.ApplyPipeline(knowledge_pb2.ApplyPipelineRequest(name="Ops", documents=[]))
        await ingest(stub, text="# Notes\n\nThe gateway drains before a broker restart.", name="notes")
    assert doc_refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "managed by configuration; remove or change it under knowledge.documents" in (
        doc_refused.value.details() or ""
    )
    assert "under knowledge.pipelines in saip.yaml" in (pipe_refused.value.details() or "")

    # A restart finds everything again: the catalog in NATS, the chunks in the local Qdrant folder; the unchanged
    # configured document is not ingested a second time.
    async with running_knowledge(settings) as app, knowledge_stub(app.port) as stub:
        names_after = [d.name for d in (await stub.ListDocuments(knowledge_pb2.ListDocumentsRequest())).documents]
        found = await stub.Search(knowledge_pb2.SearchRequest(pipeline="Ops", query="restart"))
        assert names_after == ["notes", "Runbook"] and found.hits[0].document_name == "Runbook"
        assert (await stub.GetStatus(knowledge_pb2.GetKnowledgeStatusRequest())).chunks == 2


async def test_two_replicas_on_one_bucket_see_each_other_s_writes(
    tmp_path: Path, root: Path, nats_server: LocalNats
) -> None:
    """The catalog is the bucket, not the process: a tool published on one replica is served by the other."""
    one = knowledge_settings(tmp_path / "one", nats_server.url, knowledge_ingest_roots=[root])
    two = knowledge_settings(tmp_path / "two", nats_server.url, knowledge_ingest_roots=[root])
    async with (
        running_knowledge(one) as first,
        running_knowledge(two) as second,
        knowledge_stub(first.port) as a,
        knowledge_stub(second.port) as b,
    ):
        await ingest(a, text="# Shared\n\nBoth replicas read one catalog.", name="shared")
        await a.PublishTool(
            knowledge_pb2.PublishKnowledgeToolRequest(
                name="search_shared", description="Search.", pipeline="All documents (simple)"
            )
        )
        served = (await b.ListServedTools(common_pb2.ListServedToolsRequest())).tools
        assert [tool.name for tool in served] == ["search_shared"]


async def test_the_bucket_records_are_the_contract_messages(app: Running, stub: Stub, nats_client: NatsClient) -> None:
    await ingest(stub, text="# Kept\n\nRecords in the bucket are protobuf.", name="kept")
    js = nats_client.jetstream()
    kv = await jetstream.ensure_kv(js, names.KNOWLEDGE_BUCKET)
    record = knowledge_pb2.Document.FromString((await kv.get("document.kept")).value)
    pipeline = knowledge_pb2.Pipeline.FromString((await kv.get("pipeline.all-documents-simple")).value)
    assert (record.name, record.chunks, pipeline.name) == ("kept", 1, "All documents (simple)")


async def test_the_metrics_dashboards_may_use_are_exported(app: Running, stub: Stub) -> None:
    await ingest(stub, text="# Counted\n\nOne ingest, one search.", name="counted")
    await stub.Search(knowledge_pb2.SearchRequest(query="ingest search"))
    async with httpx.AsyncClient() as http:
        text = (await http.get(f"http://127.0.0.1:{app.metrics_port}/metrics")).text
    for line in (
        'saip_knowledge_ingests_total{kind="text",outcome="ok"} 1.0',
        "saip_knowledge_ingested_chunks_total 1.0",
        'saip_knowledge_searches_total{via="search"} 1.0',
        "saip_knowledge_documents 1.0",
        "saip_knowledge_pipelines 1.0",
        "saip_knowledge_published_tools 0.0",
    ):
        assert line in text.splitlines(), line
    assert 'saip_knowledge_search_seconds_count{via="search"} 1.0' in text


async def test_the_dense_encoder_finds_meaning_the_words_miss_and_documents_are_reindexed_into_it(
    tmp_path: Path, root: Path, nats_server: LocalNats
) -> None:
    """Documents ingested with lexical vectors only are re-indexed from their originals when a dense model is
    configured; then a query that shares no word with the right passage still finds it (RRF fusion), and the
    threshold still drops what is unrelated."""
    cars = "# Garage\n\nMy car would not start this morning, so the mechanic replaced the battery."
    fruit = "# Market\n\nBananas and oranges were on sale at the market stall today."
    lexical = knowledge_settings(tmp_path / "home", nats_server.url, knowledge_ingest_roots=[root])
    async with running_knowledge(lexical) as app, knowledge_stub(app.port) as stub:
        await ingest(stub, text=cars, name="garage")
        await ingest(stub, text=fruit, name="market")
        words_only = await stub.Search(knowledge_pb2.SearchRequest(query="automobile broke down"))
        assert list(words_only.hits) == []

    model, tokenizer = minilm()
    hybrid = knowledge_settings(
        tmp_path / "home",
        nats_server.url,
        knowledge_ingest_roots=[root],
        knowledge_dense_model=model,
        knowledge_dense_tokenizer=tokenizer,
    )
    async with running_knowledge(hybrid) as app, knowledge_stub(app.port) as stub:
        status = await stub.GetStatus(knowledge_pb2.GetKnowledgeStatusRequest())
        found = await stub.Search(knowledge_pb2.SearchRequest(query="automobile broke down"))
        both = await stub.Search(knowledge_pb2.SearchRequest(query="mechanic battery"))
    assert status.encoder.startswith("lexical-bm25 + model-") and status.encoder.endswith("(RRF)")
    assert status.chunks == 2 and "collection saip_chunks_" in status.vector_store
    # The fruit passage is ranked too (every chunk has a cosine), but far below the best one: under the threshold.
    assert [hit.document_name for hit in found.hits] == ["garage"] and found.dropped_below_threshold == 1
    assert found.hits[0].relevance == 1.0
    assert both.hits[0].document_name == "garage" and both.hits[0].relevance == 1.0


async def test_an_unreadable_catalog_record_is_absent_from_the_copy_whether_read_first_or_written_later(
    nats_client: NatsClient,
) -> None:
    # A length-delimited field that promises five bytes and holds two: no message reads it.
    unreadable = b"\x0a\x05ab"
    js = nats_client.jetstream()
    catalog = await KvCatalog.open(js)
    kv = await js.key_value(names.KNOWLEDGE_BUCKET)
    await kv.put("document.early", unreadable)
    async with anyio.create_task_group() as group:
        group.start_soon(catalog.watch)
        await catalog.ready()
        assert catalog.document("early") is None
        await catalog.create_document(knowledge_pb2.Document(id="late", name="Late"))
        assert [document.name for document in catalog.documents()] == ["Late"]
        await catalog.caught_up(await kv.put("document.late", unreadable))
        assert catalog.document("late") is None and catalog.documents() == []
        group.cancel_scope.cancel()


@asynccontextmanager
async def earlier_build(home: Path, nats_url: str, root: Path) -> AsyncIterator[Knowledge]:
    """The knowledge rules as an earlier build ran them: the catalog and the originals in NATS, the chunks in
    qdrant-client's local mode under $SAIP_HOME/qdrant (its embedded engine then)."""
    nc = await bus.connect(nats_url, "earlier-build", within=10)
    js = nc.jetstream()
    catalog = await KvCatalog.open(js)
    following = asyncio.create_task(keep_alive(catalog.watch, "catalog"))
    index = await QdrantIndex.open(None, home / "qdrant")
    try:
        await catalog.ready()
        originals = await ObjectOriginals.open(js)
        yield Knowledge(
            catalog=catalog,
            originals=originals,
            index=index,
            fetcher=GuardedFetcher(None),
            roots=[root],
            max_bytes=1 << 20,
        )
    finally:
        await index.close()
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following
        await nc.close()


def logged(caplog: pytest.LogCaptureFixture, message: str) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.getMessage() == message]


async def test_an_earlier_build_s_local_mode_folder_is_reindexed_into_edge_once(
    tmp_path: Path, root: Path, nats_server: LocalNats, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    async with earlier_build(home, nats_server.url, root) as knowledge:
        runbook, _ = await knowledge.ingest("path", str(root / "runbook.md"))
        notes, _ = await knowledge.ingest("text", prose(400, topic="compaction"), "Compaction notes")
    assert (home / "qdrant" / "collection").is_dir() and not (home / "qdrant-edge").exists()

    caplog.set_level(logging.INFO, logger="saip.knowledge")
    settings = knowledge_settings(home, nats_server.url, knowledge_ingest_roots=[root])
    async with running_knowledge(settings) as app, knowledge_stub(app.port) as stub:
        status = await stub.GetStatus(knowledge_pb2.GetKnowledgeStatusRequest())
        found = await stub.Search(knowledge_pb2.SearchRequest(query="restart nats"))
    [started] = logged(caplog, "re-indexing documents from their originals")
    steps = logged(caplog, "document re-indexed")
    assert logged(
        caplog,
        "an earlier build's vector store (qdrant-client local mode) found; its documents are "
        "re-indexed into Qdrant Edge from their originals",
    )
    assert (started.documents, [(s.done, s.of) for s in steps]) == (2, [(1, 2), (2, 2)])  # type: ignore[attr-defined]
    assert status.chunks == started.chunks == runbook.chunks + notes.chunks  # type: ignore[attr-defined]
    assert status.vector_store.startswith(f"Qdrant Edge at {home.resolve() / 'qdrant-edge'}")
    assert found.hits[0].document_name == "runbook.md"
    assert not (home / "qdrant").exists()  # every document is in the shard: the old folder is retired

    caplog.clear()
    async with running_knowledge(settings) as app, knowledge_stub(app.port) as stub:
        again = await stub.GetStatus(knowledge_pb2.GetKnowledgeStatusRequest())
    assert again.chunks == status.chunks and not logged(caplog, "re-indexing documents from their originals")


async def test_the_earlier_build_s_folder_is_kept_while_a_document_cannot_be_reindexed(
    tmp_path: Path, root: Path, nats_server: LocalNats, nats_client: NatsClient, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    async with earlier_build(home, nats_server.url, root) as knowledge:
        kept, _ = await knowledge.ingest("path", str(root / "runbook.md"))
        lost, _ = await knowledge.ingest("path", str(root / "metrics.html"))
    await ObjectOriginals(await nats_client.jetstream().object_store(names.DOCUMENTS_OBJECT_STORE)).delete(
        lost.ingest_id
    )

    caplog.set_level(logging.INFO, logger="saip.knowledge")
    settings = knowledge_settings(home, nats_server.url, knowledge_ingest_roots=[root])
    async with running_knowledge(settings) as app, knowledge_stub(app.port) as stub:
        found = await stub.Search(knowledge_pb2.SearchRequest(query="restart nats"))
    [warning] = logged(
        caplog,
        "the earlier build's vector store is kept: some documents could not be re-indexed from their originals; "
        "delete them and ingest them again, then restart",
    )
    assert warning.documents == ["metrics.html"]  # type: ignore[attr-defined]
    assert found.hits[0].document_name == kept.name
    assert (home / "qdrant" / "collection").is_dir()  # its chunks are still there: nothing is lost
