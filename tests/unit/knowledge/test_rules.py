"""The knowledge rules over in-memory fakes of their ports: an ingest commits whole or leaves nothing, the first
document creates the default pipeline, pipelines scope what exists, the threshold drops weak passages, refusals say
what to do instead, and declared items are read-only. (tests/integration/test_knowledge_service.py runs the same
service over NATS and Qdrant.)"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from saip.knowledge import chunking, sparse
from saip.knowledge.config import DeclaredDocument, DeclaredPipeline
from saip.knowledge.errors import AlreadyExists, InvalidRequest, NotFound, Refused, StoreUnavailable
from saip.knowledge.knowledge import SourceKind
from saip.knowledge.ports import Fetched
from tests.unit.knowledge import fakes
from tests.unit.knowledge.fakes import Faked
from tests.unit.knowledge.samples import prose

RUNBOOK = "# NATS runbook\n\nRestart the NATS broker with systemctl when clients report a stale connection."
COMPACTION = "Compaction merges segments. Compaction runs nightly; compaction merges the small segments first."
PASSING = (
    "The release notes mention compaction once, among upgrades of the dashboard, the installer, the logging format, "
    "the command line, the configuration reference, the container images and the deployment manifests."
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = (tmp_path / "docs").resolve()
    folder.mkdir()
    (folder / "runbook.md").write_text(RUNBOOK)
    return folder


@pytest.fixture
def rules(root: Path) -> Faked:
    return fakes.rules(root)


def names(rules: Faked) -> list[str]:
    return [document.name for document in rules.knowledge.documents()]


async def test_an_ingest_that_fails_midway_leaves_no_record_no_original_and_no_chunk(rules: Faked) -> None:
    rules.index.fail_at = 2
    with pytest.raises(StoreUnavailable):
        await rules.knowledge.ingest("text", prose(600), "Long notes")
    assert (names(rules), rules.originals.data, rules.index.chunks) == ([], {}, {})
    assert rules.catalog.pipelines() == []

    class Gone(Exception):
        pass

    async def caller_went_away(done: int, total: int, message: str) -> None:
        if done:
            raise Gone

    rules.index.fail_at = None
    with pytest.raises(Gone):
        await rules.knowledge.ingest("text", prose(600), "Long notes", progress=caller_went_away)
    assert (names(rules), rules.originals.data, rules.index.chunks) == ([], {}, {})


async def test_an_original_whose_upload_fails_while_the_chunks_are_indexed_leaves_nothing(rules: Faked) -> None:
    rules.originals.fail = True
    with pytest.raises(StoreUnavailable):  # the service's own error, not the task group's
        await rules.knowledge.ingest("text", prose(600), "Long notes")
    assert (names(rules), rules.originals.data, rules.index.chunks) == ([], {}, {})


async def test_an_ingest_that_fails_lets_the_upload_of_its_original_finish_then_removes_it(rules: Faked) -> None:
    gate = rules.originals.gate = anyio.Event()

    class Gone(Exception):
        pass

    async def caller_went_away(done: int, total: int, message: str) -> None:
        if done:
            gate.set()  # the upload resumes as the ingest fails
            raise Gone

    with pytest.raises(Gone):
        await rules.knowledge.ingest("text", prose(600), "Long notes", progress=caller_went_away)
    assert len(rules.originals.completed) == 1  # not cut short: no part of it is left behind unnamed
    assert (names(rules), rules.originals.data, rules.index.chunks) == ([], {}, {})


async def test_an_ingest_reports_progress_per_batch_and_commits_with_the_catalog_record(rules: Faked) -> None:
    steps: list[tuple[int, int]] = []

    async def progress(done: int, total: int, message: str) -> None:
        steps.append((done, total))

    document, _ = await rules.knowledge.ingest("text", prose(1600, topic="compaction"), "Compaction", progress=progress)
    total = document.chunks
    assert total > 256 and steps[0] == (0, total) and steps[-1] == (total, total)
    assert len(steps) == 1 + -(-total // 256)
    assert rules.originals.data[document.ingest_id]
    assert await rules.index.count(document.ingest_id) == total


@pytest.mark.parametrize(
    ("text", "apart"),
    [
        (prose(30, topic="compaction"), True),
        # One paragraph of 2,100 tokens without a sentence break, cut between the tokens of a piece such as
        # "compaction3.segment": the chunks' pieces are not the text's, so the keywords are read from the text.
        (" ".join(f"compaction{i % 7}.segment" for i in range(700)), False),
    ],
)
async def test_a_document_keeps_the_keywords_of_its_whole_text(rules: Faked, text: str, apart: bool) -> None:
    assert chunking.apart(chunking.chunk(text)) is apart
    document, _ = await rules.knowledge.ingest("text", text, "Notes")
    assert document.chunks > 1
    stored = rules.catalog.document(document.id)
    assert stored is not None and list(stored.keywords) == list(document.keywords) == sparse.keywords(text)


async def test_the_first_document_creates_the_default_pipeline_and_no_later_one_does(rules: Faked, root: Path) -> None:
    _, created = await rules.knowledge.ingest("path", str(root / "runbook.md"))
    _, again = await rules.knowledge.ingest("text", COMPACTION, "Compaction")
    assert (created, again) == (True, False)
    [default] = rules.pipelines.every()
    assert (default.name, default.top_k, round(default.threshold, 2), list(default.document_ids)) == (
        "All documents (simple)",
        5,
        0.35,
        [],
    )


async def test_the_same_name_or_the_same_content_twice_is_refused(rules: Faked) -> None:
    await rules.knowledge.ingest("text", COMPACTION, "Compaction")
    with pytest.raises(AlreadyExists, match="delete it first"):
        await rules.knowledge.ingest("text", RUNBOOK, "compaction")  # one slug: one name
    with pytest.raises(AlreadyExists, match="already ingested as 'Compaction'"):
        await rules.knowledge.ingest("text", COMPACTION, "Other name")


@pytest.mark.parametrize(
    ("kind", "value", "refusal", "says"),
    [
        ("text", "  ", InvalidRequest, "the text is empty"),
        ("text", "x" * (fakes.MAX_BYTES + 1), InvalidRequest, "more than the ingest limit"),
        ("path", "docs/runbook.md", InvalidRequest, "absolute"),
        ("path", "/etc/hostname", Refused, "outside"),
        ("url", "ftp://example.org/a", InvalidRequest, "not an http"),
        ("url", "http://10.0.0.1/a", Refused, "refused by the network guard"),
    ],
)
async def test_what_cannot_be_ingested_is_refused_with_what_to_do_instead(
    rules: Faked, kind: SourceKind, value: str, refusal: type[Exception], says: str
) -> None:
    rules.fetcher.refused.add("http://10.0.0.1/a")
    with pytest.raises(refusal, match=says):
        await rules.knowledge.ingest(kind, value, "Refused")
    assert (names(rules), rules.originals.data) == ([], {})


async def test_a_page_fetched_by_url_is_named_after_its_final_address(rules: Faked) -> None:
    final = "https://docs.example.org/guides/compaction.html"
    page = b"<html><head><title>Compaction</title></head><body><p>" + COMPACTION.encode() + b"</p></body></html>"
    rules.fetcher.pages["https://docs.example.org/compaction"] = Fetched(page, "text/html; charset=utf-8", final)
    document, _ = await rules.knowledge.ingest("url", "https://docs.example.org/compaction")
    assert (document.name, document.source_kind, document.media_type) == ("compaction.html", "url", "text/html")


async def test_pipelines_scope_existing_documents_and_refuse_what_would_dangle(rules: Faked) -> None:
    await rules.knowledge.ingest("text", COMPACTION, "Compaction")
    await rules.knowledge.ingest("text", RUNBOOK, "Runbook")
    with pytest.raises(NotFound, match="no document named 'Missing'"):
        await rules.pipelines.apply("Ops", ["Runbook", "Missing"])
    pipeline, created = await rules.pipelines.apply("Ops", ["Runbook"], top_k=3)
    assert created and list(pipeline.document_names) == ["Runbook"]

    found = await rules.search.search("Ops", "compaction merges segments")
    assert found.hits == []  # Compaction is outside the scope
    with pytest.raises(Refused, match="in the scope of the pipeline"):
        await rules.knowledge.delete_document("Runbook")

    await rules.knowledge.delete_document("Runbook", force=True)
    with pytest.raises(Refused, match="no longer exist"):
        await rules.search.search("Ops", "restart nats")


async def test_the_threshold_drops_weak_passages_and_rerank_off_keeps_reading_order(rules: Faked) -> None:
    await rules.knowledge.ingest("text", PASSING, "Appendix")
    await rules.knowledge.ingest("text", COMPACTION, "Compaction")
    found = await rules.search.search("", "compaction merges segments")
    assert [document.name for _, document, _ in found.hits] == ["Compaction"]
    assert found.dropped == 1 and found.hits[0][2] == 1.0

    await rules.pipelines.apply("Everything", [], threshold=0.0, rerank=False)
    kept = await rules.search.search("Everything", "compaction merges segments")
    assert [document.name for _, document, _ in kept.hits] == ["Appendix", "Compaction"]  # by name, not by score
    assert kept.dropped == 0


@pytest.mark.parametrize(
    ("query", "top_k", "says"),
    [("  ", None, "the query is empty"), ("the of and", None, "no searchable words"), ("nats", 51, "topK must be")],
)
async def test_a_query_that_cannot_be_searched_is_refused(
    rules: Faked, query: str, top_k: int | None, says: str
) -> None:
    await rules.knowledge.ingest("text", RUNBOOK, "Runbook")
    with pytest.raises(InvalidRequest, match=says):
        await rules.search.search("", query, top_k)


async def test_a_knowledge_tool_searches_its_pipeline_and_guards_its_name(rules: Faked) -> None:
    await rules.knowledge.ingest("text", RUNBOOK, "Runbook")
    await rules.pipelines.apply("Ops", ["Runbook"])
    with pytest.raises(Refused, match="reserved"):
        await rules.tools.publish("saip_ops", "Searches the runbook.", "Ops")
    with pytest.raises(Refused, match="reserved"):
        await rules.tools.publish("Saip_Ops", "Searches the runbook.", "Ops")
    with pytest.raises(InvalidRequest, match="not a valid tool name"):
        await rules.tools.publish("ops search", "Searches the runbook.", "Ops")
    with pytest.raises(InvalidRequest, match="needs a description"):
        await rules.tools.publish("ops_search", "", "Ops")
    tool = await rules.tools.publish("ops_search", "Searches the operations runbook.", "Ops")
    assert tool.pipeline_name == "Ops"
    with pytest.raises(AlreadyExists, match="already published"):
        await rules.tools.publish("ops_search", "Again.", "Ops")

    [served] = rules.tools.served()
    assert (served.name, served.title, served.read_only, served.source) == (
        "ops_search",
        "Search Ops",
        True,
        "knowledge",
    )
    answer = await rules.tools.call("ops_search", {"query": "restart nats", "topK": 1})
    assert [result["document"] for result in answer["results"]] == ["Runbook"]
    with pytest.raises(InvalidRequest, match="unknown argument"):
        await rules.tools.call("ops_search", {"query": "nats", "limit": 2})
    with pytest.raises(Refused, match="unpublish them first"):
        await rules.pipelines.delete("Ops")

    await rules.tools.unpublish("ops_search")
    await rules.pipelines.delete("Ops")
    assert rules.tools.served() == []


async def test_suggestions_skip_a_pipeline_whose_scope_dangles(rules: Faked) -> None:
    await rules.knowledge.ingest("text", RUNBOOK, "Runbook")
    await rules.knowledge.ingest("text", COMPACTION, "Compaction")
    await rules.pipelines.apply("Ops", ["Runbook"])
    await rules.knowledge.delete_document("Runbook", force=True)
    assert [found.pipeline for found in rules.tools.suggest()] == ["All documents (simple)"]
    with pytest.raises(Refused, match="no longer exist"):
        rules.tools.suggest("Ops")


async def test_declared_items_come_in_read_only_and_leave_with_their_declaration(rules: Faked, root: Path) -> None:
    documents = [DeclaredDocument(name="Runbook", path=str(root / "runbook.md"))]
    pipelines = [DeclaredPipeline(name="Ops", documents=["Runbook"], top_k=2)]
    assert await rules.declared.apply(documents, pipelines) == []
    with pytest.raises(Refused, match=r"managed by configuration; remove or change it under knowledge\.documents"):
        await rules.knowledge.delete_document("Runbook")
    with pytest.raises(Refused, match=r"change it under knowledge\.pipelines"):
        await rules.pipelines.apply("Ops", [])
    with pytest.raises(Refused, match=r"remove it from knowledge\.pipelines"):
        await rules.pipelines.delete("Ops")

    first = rules.catalog.document("runbook")
    assert first is not None
    assert await rules.declared.apply(documents, pipelines) == []
    assert rules.catalog.document("runbook") == first  # the same content is not ingested again

    (root / "runbook.md").write_text(RUNBOOK + "\n\nDrain the gateway first.")
    await rules.declared.apply(documents, pipelines)
    changed = rules.catalog.document("runbook")
    assert changed is not None and changed.ingest_id != first.ingest_id
    assert first.ingest_id not in rules.index.chunks and first.ingest_id not in rules.originals.data

    assert await rules.declared.apply([], []) == []
    assert (names(rules), [p.name for p in rules.pipelines.every()]) == ([], ["All documents (simple)"])


async def test_a_declared_item_that_cannot_be_applied_is_a_problem_not_a_failed_start(rules: Faked) -> None:
    problems = await rules.declared.apply(
        [DeclaredDocument(name="Gone", path="/nowhere/gone.md")], [DeclaredPipeline(name="Ops", documents=["Gone"])]
    )
    assert [problem.split(":", 1)[0] for problem in problems] == ["Gone", "Ops"]


async def test_documents_the_index_lost_are_reindexed_from_their_originals(rules: Faked) -> None:
    document, _ = await rules.knowledge.ingest("text", COMPACTION, "Compaction")
    rules.index.chunks.clear()  # a new Qdrant server, a lost local folder
    assert await rules.knowledge.reindex() == ["Compaction"]
    assert await rules.index.count(document.ingest_id) == document.chunks
    assert await rules.knowledge.reindex() == []


async def test_an_uploaded_file_is_read_by_its_name_s_kind_and_kept_as_an_upload(rules: Faked) -> None:
    loaded = rules.knowledge.uploaded("C:\\notes\\runbook.md", RUNBOOK.encode())
    document, _ = await rules.knowledge.ingest_loaded(loaded)
    assert (document.name, document.source_kind, document.source, document.media_type) == (
        "runbook.md",
        "upload",
        "runbook.md",
        "text/markdown",
    )


@pytest.mark.parametrize(
    ("filename", "data", "said"),
    [
        ("", b"x", "the upload has no file name"),
        ("tool.exe", b"x", "'tool.exe' has '.exe', an unsupported type"),
        ("empty.md", b"", "'empty.md' is empty"),
    ],
)
def test_an_upload_without_a_name_a_kind_or_content_is_refused(
    rules: Faked, filename: str, data: bytes, said: str
) -> None:
    with pytest.raises(InvalidRequest, match=said):
        rules.knowledge.uploaded(filename, data)


@pytest.mark.parametrize("unseen", ["\x00", "\x07", "\x1b[31m", "\u202e", "\u200b", "\u2028"])
async def test_a_name_with_a_control_or_invisible_character_is_refused_naming_it_and_nothing_is_stored(
    rules: Faked, unseen: str
) -> None:
    name = f"Ops{unseen}notes"
    said = rf"\(U\+{ord(unseen[0]):04X} at character 4\); type the name as it should read"
    with pytest.raises(InvalidRequest, match=r"a pipeline's name may not hold control or invisible characters " + said):
        await rules.pipelines.apply(name, [])
    with pytest.raises(InvalidRequest, match=r"a document's name may not hold control or invisible characters"):
        await rules.knowledge.ingest("text", RUNBOOK, name)
    assert (names(rules), [pipeline.name for pipeline in rules.pipelines.every()]) == ([], [])
