"""The bundle of a shipped server: `saip-bundle.json` (the JSON Schema `saip-bundle.schema.json` beside this module)
and the knowledge snapshots in `snapshots/` beside it, one folder.

Every part (one tool) carries the SHA-256 of its canonical JSON (sorted keys, no spaces, without its own `sha256`),
the whole the SHA-256 of the bundle's canonical JSON without its top-level `sha256`, and each snapshot the SHA-256 of
its bytes. `read` checks the schema and every hash before anything uses the bundle; `write` checks the schema before
anything is written, so a bundle on disk is always one `read` accepts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from saip.common import canonical
from saip.common.masking import Masker

BUNDLE_FILE = "saip-bundle.json"
SNAPSHOTS = "snapshots"
FORMAT = 1
AUTHORED, KNOWLEDGE, UPSTREAM = "authored", "knowledge", "upstream"
STDIO, STREAMABLE_HTTP = "stdio", "streamable-http"
TRANSPORTS = (STREAMABLE_HTTP, STDIO)


class BundleInvalid(ValueError):
    """A bundle that fails its schema or its hashes; the message names each problem and what to do."""


def sha256_of(value: Any) -> str:
    """The SHA-256 of a JSON value's canonical form, without a `sha256` member of its own."""
    if isinstance(value, Mapping):
        value = {key: item for key, item in value.items() if key != "sha256"}
    return canonical.sha256_of(value)


def file_sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def knowledge_definition(
    name: str, description: str, pipeline: Mapping[str, Any], documents: Sequence[Mapping[str, Any]]
) -> str:
    """The definition hash of a knowledge tool: what it is called and says, how it searches, and the exact documents
    (by the hash of their originals) it searches. A re-ingest, a scope or a setting change all move it."""
    return sha256_of(
        {
            "name": name,
            "description": description,
            "pipeline": {key: pipeline[key] for key in ("topK", "threshold", "rerank")},
            "documents": sorted(str(document["sha256"]) for document in documents),
        }
    )


@cache
def schema() -> dict[str, Any]:
    text = resources.files("saip.shipped").joinpath("saip-bundle.schema.json").read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def schema_problems(document: Any) -> list[str]:
    """Each place the document fails its schema, with the value masked when it looks like a secret (a literal
    token in an upstream header is refused without being repeated)."""
    validator = Draft202012Validator(schema())
    masker = Masker()
    problems = []
    for error in sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path))):
        where = "/".join(str(part) for part in error.absolute_path) or "(the bundle)"
        problems.append(f"{where}: {masker.text(error.message)}")
    return problems


def seal(document: dict[str, Any]) -> dict[str, Any]:
    """The document with every part's hash and the whole's filled in."""
    document["tools"] = [{**part, "sha256": sha256_of(part)} for part in document["tools"]]
    document["sha256"] = sha256_of(document)
    return document


@dataclass(frozen=True)
class Bundle:
    """A bundle that passed `read`: its document and the folder its snapshots are in."""

    document: dict[str, Any]
    folder: Path

    @property
    def name(self) -> str:
        return str(self.document["name"])

    @property
    def transport(self) -> str:
        return str(self.document["transport"])

    @property
    def version(self) -> int:
        return int(self.document["version"])

    @property
    def sha256(self) -> str:
        return str(self.document["sha256"])

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.document["tools"])

    def snapshot(self, part: Mapping[str, Any]) -> Path:
        return self.folder / str(part["snapshot"]["path"])


def verify(document: Any, folder: Path) -> Bundle:
    """Check a bundle document: its schema, then every part's hash, every snapshot's bytes and the whole's hash."""
    problems = schema_problems(document)
    if problems:
        raise BundleInvalid(
            f"the bundle does not fit saip-bundle.schema.json: {'; '.join(problems)}. Ship it again from saip "
            "(saip_shipyard_ship) instead of editing it."
        )
    names = [part["name"] for part in document["tools"]]
    doubled = sorted({name for name in names if names.count(name) > 1})
    if doubled:
        raise BundleInvalid(f"the bundle names {doubled} more than once; each tool name may appear once")
    for part in document["tools"]:
        if sha256_of(part) != part["sha256"]:
            raise BundleInvalid(
                f"the part '{part['name']}' does not match its sha256: it was changed after it was shipped. Ship the "
                "server again instead of editing its bundle."
            )
        if part["kind"] == KNOWLEDGE:
            _verify_snapshot(part, folder)
    if sha256_of(document) != document["sha256"]:
        raise BundleInvalid(
            "the bundle does not match its sha256: it was changed after it was shipped. Ship the server again "
            "instead of editing its bundle."
        )
    return Bundle(document, folder)


def _verify_snapshot(part: Mapping[str, Any], folder: Path) -> None:
    snapshot = part["snapshot"]
    path = (folder / snapshot["path"]).resolve()
    if not path.is_relative_to(folder.resolve()) or not path.is_file():
        raise BundleInvalid(f"the snapshot of '{part['name']}' ({snapshot['path']}) is missing beside the bundle")
    if path.stat().st_size != snapshot["bytes"] or file_sha256(path) != snapshot["sha256"]:
        raise BundleInvalid(
            f"the snapshot of '{part['name']}' does not match its sha256: it was changed after it was shipped. Ship "
            "the server again."
        )


def read(path: Path) -> Bundle:
    """The bundle at `path` (a saip-bundle.json, or the folder holding one), checked."""
    file = path / BUNDLE_FILE if path.is_dir() else path
    try:
        document = json.loads(file.read_text())
    except FileNotFoundError:
        raise BundleInvalid(f"there is no bundle at {file}; give the path of a saip-bundle.json") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleInvalid(f"{file} is not a readable JSON bundle ({exc}); ship the server again") from None
    return verify(document, file.parent)


def write(folder: Path, document: dict[str, Any]) -> Bundle:
    """Write a sealed document as `folder`/saip-bundle.json, its snapshots already in `folder`/snapshots; the
    document is checked against the schema before it is written, and the folder as a whole after."""
    problems = schema_problems(document)
    if problems:
        raise BundleInvalid(f"the bundle does not fit saip-bundle.schema.json: {'; '.join(problems)}")
    target = folder / BUNDLE_FILE
    if target.exists():
        raise BundleInvalid(f"{folder} already holds a bundle; write into a new folder")
    target.write_text(json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    return verify(document, folder)
