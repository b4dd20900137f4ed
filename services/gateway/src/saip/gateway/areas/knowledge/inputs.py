"""The knowledge tools' arguments, strict, each able to say what it will do and to become its gRPC request."""

from __future__ import annotations

import base64
import binascii
from typing import ClassVar

from pydantic import Field, field_validator, model_validator

from saip.common import literals
from saip.gateway.errors import LiteralSecret
from saip.gateway.surface.management import Input, ListedDocument
from saip.v1 import knowledge_pb2 as pb

# Larger documents go by path or URL: a gRPC message is at most 4 MiB, and a character up to 4 bytes.
MAX_TEXT = 1_000_000
# A file sent with the request (the console's upload) travels in one gRPC message too.
MAX_UPLOAD = 3 * 1024 * 1024


class IngestInput(Input):
    path: str | None = Field(
        default=None,
        max_length=4096,
        description="Absolute path of a file inside an ingest root (saip_knowledge_status lists the roots).",
    )
    url: str | None = Field(default=None, max_length=4096, description="An http(s) URL on a public address.")
    text: str | None = Field(
        default=None, max_length=MAX_TEXT, description="The text itself (up to 1,000,000 characters), read as markdown."
    )
    name: str | None = Field(
        default=None,
        max_length=200,
        description="A unique name for the document; the file or URL name (or text-<hash>) when omitted.",
    )

    SOURCES: ClassVar[tuple[str, ...]] = ("path", "url", "text")

    @model_validator(mode="after")
    def _one_source(self) -> IngestInput:
        given = [key for key in self.SOURCES if getattr(self, key) is not None]
        if len(given) != 1:
            *first, last = self.SOURCES
            raise ValueError(f"give exactly one of {', '.join(first)} or {last} (got {', '.join(given) or 'none'})")
        refused = literals.url_refusal(self.url, literals.KNOWLEDGE_SOURCE) if self.url is not None else None
        if refused is not None:
            raise LiteralSecret(refused)
        return self

    def request(self) -> pb.IngestDocumentRequest:
        request = pb.IngestDocumentRequest(name=self.name or "")
        if self.path is not None:
            request.path = self.path
        elif self.url is not None:
            request.url = self.url
        else:
            request.text = self.text or ""
        return request

    def described(self) -> str:
        if self.path is not None:
            what = f"the file {self.path}"
        elif self.url is not None:
            what = f"the page {self.url}"
        else:
            what = f"{len(self.text or '')} characters of text"
        return f"ingest {what}" + (f" as '{self.name}'" if self.name else "")


class Upload(Input):
    filename: str = Field(
        min_length=1,
        max_length=255,
        description="The file's name; its extension says its kind (.md, .txt, .html, .json, .pdf).",
    )
    contentBase64: str = Field(
        min_length=1, max_length=(MAX_UPLOAD + 2) // 3 * 4, description="The file's bytes, base64 (up to 3 MiB)."
    )

    @field_validator("contentBase64")
    @classmethod
    def _decodes(cls, value: str) -> str:
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("is not base64; send the file's bytes base64-encoded") from None
        return value

    @property
    def content(self) -> bytes:
        return base64.b64decode(self.contentBase64)


class DocumentInput(IngestInput):
    """POST /knowledge/documents: what saip_knowledge_ingest_document takes, or a file sent with the request
    (`upload`; a file larger than 3 MiB goes by path, into an ingest root)."""

    SOURCES: ClassVar[tuple[str, ...]] = ("path", "url", "text", "upload")

    upload: Upload | None = Field(default=None, description="A file sent with the request, up to 3 MiB.")

    def request(self) -> pb.IngestDocumentRequest:
        if self.upload is None:
            return super().request()
        file = pb.Upload(filename=self.upload.filename, content=self.upload.content)
        return pb.IngestDocumentRequest(name=self.name or "", upload=file)

    def described(self) -> str:
        if self.upload is None:
            return super().described()
        size = len(self.upload.content)
        return f"ingest the uploaded file {self.upload.filename} ({size} bytes)" + (
            f" as '{self.name}'" if self.name else ""
        )


class NamedInput(Input):
    name: str = Field(min_length=1, max_length=200, description="The exact name, as the list shows it.")


class PipelineInput(Input):
    name: str = Field(min_length=1, max_length=200, description="The pipeline's name; an existing one is updated.")
    documents: list[ListedDocument] = Field(
        default_factory=list, max_length=500, description="Document names in scope; empty means every document."
    )
    topK: int | None = Field(default=None, ge=1, le=50, description="Passages returned (default 5).")
    threshold: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Minimum relevance, 0 to 1 (default 0.35)."
    )
    rerank: bool | None = Field(default=None, description="True: best passages first (default); false: reading order.")

    def described(self) -> str:
        return f"apply the pipeline '{self.name}' over " + (", ".join(self.documents) or "every document")

    def request(self) -> pb.ApplyPipelineRequest:
        request = pb.ApplyPipelineRequest(name=self.name, documents=self.documents)
        if self.topK is not None:
            request.top_k = self.topK
        if self.threshold is not None:
            request.threshold = self.threshold
        if self.rerank is not None:
            request.rerank = self.rerank
        return request


class SearchInput(Input):
    query: str = Field(min_length=1, max_length=2000, description="The question or keywords.")
    pipeline: str | None = Field(
        default=None, max_length=200, description="A pipeline's name; every document with the defaults when omitted."
    )
    topK: int | None = Field(default=None, ge=1, le=50, description="Passages returned (the pipeline's when omitted).")

    def request(self) -> pb.SearchRequest:
        request = pb.SearchRequest(query=self.query, pipeline=self.pipeline or "")
        if self.topK is not None:
            request.top_k = self.topK
        return request


class SuggestInput(Input):
    pipeline: str | None = Field(default=None, max_length=200, description="One pipeline; every pipeline when omitted.")


class PublishInput(Input):
    name: str = Field(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z][A-Za-z0-9_-]*$",
        description="The tool's name on /mcp: letters, digits, '_' or '-'; not starting with 'saip_'.",
    )
    description: str = Field(
        min_length=1, max_length=1024, description="When an AI should use the tool; suggest_tools drafts one."
    )
    pipeline: str = Field(min_length=1, max_length=200, description="The pipeline the tool searches.")

    def described(self, pipeline: pb.Pipeline) -> str:
        """What publishing serves: the pipeline as the service read it, and the documents it searches now."""
        return (
            f"publish the knowledge tool '{self.name}' on /mcp, searching the pipeline '{pipeline.name}' over "
            f"{scope_words(pipeline)}: {self.description[:200]}"
        )

    def request(self, expected: str = "") -> pb.PublishKnowledgeToolRequest:
        return pb.PublishKnowledgeToolRequest(
            name=self.name, description=self.description, pipeline=self.pipeline, expected_fingerprint=expected
        )


SCOPE_NAMES = 20  # the documents a question names one by one; the rest are counted


def scope_words(pipeline: pb.Pipeline) -> str:
    """The documents a pipeline searches, as a question names them: 'a', 'b' (every document for an empty scope)."""
    names = [f"'{name}'" for name in pipeline.scope_names[:SCOPE_NAMES]]
    more = len(pipeline.scope_names) - SCOPE_NAMES
    listed = ", ".join(names) + (f" and {more} more" if more > 0 else "") if names else "no document yet"
    return f"every document (now {listed})" if not pipeline.document_ids else listed
