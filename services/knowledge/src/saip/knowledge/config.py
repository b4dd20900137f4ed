"""The knowledge service's settings: where it listens, where documents may be read from, the vector store, and the
documents and pipelines declared in configuration (read-only to the AI)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, Field, model_validator
from pydantic_settings import NoDecode

from saip.common import literals
from saip.common.secret_source import SecretSource
from saip.common.settings import DeclaredItem, Port, Reads, SaipSettings, service_keys

QDRANT_URL_ENV = "QDRANT_URL"
SECRETS_KEY = "knowledge.secrets"
DEFAULT_TOP_K = 5
DEFAULT_THRESHOLD = 0.35
MAX_TOP_K = 50


def _split_paths(value: Any) -> Any:
    """Paths separated by ':' as PATH does (a variable), or a list (saip.yaml)."""
    if isinstance(value, str):
        return [part for part in value.split(os.pathsep) if part.strip()]
    return value


PathList = Annotated[list[Path], NoDecode, BeforeValidator(_split_paths)]


class DeclaredDocument(DeclaredItem):
    """One entry of knowledge.documents: a name and exactly one source."""

    name: str = Field(min_length=1, max_length=200)
    path: str | None = None
    url: str | None = None
    text: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> DeclaredDocument:
        given = [key for key in ("path", "url", "text") if getattr(self, key) is not None]
        if len(given) != 1:
            raise ValueError(f"document '{self.name}' needs exactly one of path, url or text (got {given or 'none'})")
        found = literals.url_literal(self.url) if self.url is not None else None
        if found is not None:
            where, name = found
            raise ValueError(
                f"{where} of document '{self.name}' is a secret written out; put it in the file named by "
                f"{SECRETS_KEY} as {name}, with the hosts it may be sent to, and write ${{{name}}} in the URL"
            )
        return self


class DeclaredPipeline(DeclaredItem):
    """One entry of knowledge.pipelines."""

    name: str = Field(min_length=1, max_length=200)
    documents: list[str] = Field(default_factory=list)
    top_k: int = Field(default=DEFAULT_TOP_K, ge=1, le=MAX_TOP_K)
    threshold: float = Field(default=DEFAULT_THRESHOLD, ge=0.0, le=1.0)
    rerank: bool = True


class KnowledgeSettings(SaipSettings):
    """`knowledge.*` and `qdrant-url`, on top of what every service reads."""

    service: ClassVar[str] = "knowledge"
    # The service's keys: a parallel table, declared the same way in every service (docs/architecture.md).
    keys: ClassVar[Mapping[str, str]] = service_keys(
        endpoint="knowledge",
        own={
            "knowledge.ingest-roots": "Folders documents may be ingested from by path (':'-separated in the variable)",
            "knowledge.max-document-bytes": "Largest document (file, URL body or text) an ingest accepts",
            "knowledge.documents": "Documents declared in configuration (read-only to the AI)",
            "knowledge.pipelines": "Pipelines declared in configuration (read-only to the AI)",
            "knowledge.dense-model": "ONNX sentence-embedding model file of the optional dense encoder (hybrid search)",
            "knowledge.dense-tokenizer": "tokenizer.json of the dense model",
            SECRETS_KEY: "File of the secrets a document URL's ${NAME} may carry, each bound to its hosts",
            "qdrant-url": (
                "Qdrant server URL (QDRANT_URL also works); unset: Qdrant Edge in-process in $home/qdrant-edge"
            ),
        },
    )
    # Besides its keys' variables: the plain QDRANT_URL that `qdrant_location` falls back to, and those the secrets
    # file reads.
    reads: ClassVar[Reads] = Reads(variables=(QDRANT_URL_ENV,), secrets_files=("knowledge_secrets",))

    knowledge_host: str = "127.0.0.1"
    knowledge_port: Port = 50052
    knowledge_metrics_port: Port = 9102
    knowledge_ingest_roots: PathList = Field(default_factory=list)
    knowledge_max_document_bytes: int = Field(default=10 << 20, ge=1024, le=1 << 30)
    knowledge_documents: list[DeclaredDocument] = Field(default_factory=list)
    knowledge_pipelines: list[DeclaredPipeline] = Field(default_factory=list)
    qdrant_url: str | None = None
    # The optional dense encoder: an ONNX sentence-embedding model and its tokenizer.json, both or neither.
    knowledge_dense_model: Path | None = None
    knowledge_dense_tokenizer: Path | None = None
    knowledge_secrets: Path | None = None

    @model_validator(mode="after")
    def _absolute_roots(self) -> KnowledgeSettings:
        relative = [str(root) for root in self.knowledge_ingest_roots if not root.is_absolute()]
        if relative:
            raise ValueError(f"knowledge.ingest-roots must be absolute paths; {relative} are not")
        if (self.knowledge_dense_model is None) != (self.knowledge_dense_tokenizer is None):
            raise ValueError(
                "knowledge.dense-model and knowledge.dense-tokenizer go together: set both (the ONNX model and its "
                "tokenizer.json) or neither"
            )
        return self

    def secrets(self) -> SecretSource:
        """The secrets file, read now: a malformed one is a ConfigurationError naming knowledge.secrets."""
        return SecretSource.load(self.knowledge_secrets, SECRETS_KEY)

    @property
    def ingest_roots(self) -> list[Path]:
        """The configured roots, or $SAIP_HOME/ingest; resolved, so a symlinked root is compared by where it leads."""
        roots = self.knowledge_ingest_roots or [self.home.resolve() / "ingest"]
        return [root.resolve() for root in roots]

    @property
    def qdrant_location(self) -> str | None:
        """qdrant-url (SAIP_QDRANT_URL), else the plain QDRANT_URL; None means Qdrant Edge under `edge_path`."""
        return self.qdrant_url or os.environ.get(QDRANT_URL_ENV) or None

    @property
    def edge_path(self) -> Path:
        """The embedded engine's folder: one Qdrant Edge shard per collection."""
        return self.home.resolve() / "qdrant-edge"

    @property
    def qdrant_path(self) -> Path:
        """The folder of qdrant-client's local mode, whose documents are indexed into Qdrant Edge at the start."""
        return self.home.resolve() / "qdrant"
