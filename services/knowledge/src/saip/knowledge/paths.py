"""The rule "Paths are explicit": an ingest path is absolute and stays inside an ingest root, symlinks included."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from saip.knowledge.errors import InvalidRequest, NotFound, Refused


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _roots_text(roots: Sequence[Path]) -> str:
    return ", ".join(str(root) for root in roots)


def suggestion(raw: str, roots: Sequence[Path]) -> Path | None:
    """The absolute path a relative one most likely means: in the first root that holds it (None: no root does)."""
    for root in roots:
        candidate = Path(os.path.normpath(root / raw))
        if _within(candidate, root) and candidate.exists():
            return candidate
    return None


def resolve(raw: str, roots: Sequence[Path]) -> Path:
    """The real path of a regular file inside the roots, or an error that says what to send instead.

    The path as given must be absolute and lie inside a root once `..` is folded; the file it leads to, after every
    symlink is followed, must lie inside a root too, so neither traversal nor a link can leave them.
    """
    if not roots:
        raise Refused("no ingest root is configured; ask the person to set knowledge.ingest-roots")
    text = raw.strip()
    if not text:
        raise InvalidRequest("the path is empty; give the absolute path of a file inside an ingest root")
    if "\x00" in text:
        raise InvalidRequest("the path contains a NUL character; give the absolute path of a file")
    given = Path(text)
    if not given.is_absolute():
        meant = suggestion(text, roots)
        if meant is None:
            raise InvalidRequest(
                f"Paths are explicit: '{text}' is relative, and no ingest root holds it. Call again with the absolute "
                f"path of a file inside an ingest root ({_roots_text(roots)})."
            )
        raise InvalidRequest(
            f"Paths are explicit: '{text}' is relative. Call again with the absolute path '{meant}' "
            f"(ingest roots: {_roots_text(roots)})."
        )
    folded = Path(os.path.normpath(given))
    if not any(_within(folded, root) for root in roots):
        raise Refused(
            f"'{folded}' is outside the ingest roots ({_roots_text(roots)}). Ask the person to copy the file into "
            "one of them, or to add its folder to knowledge.ingest-roots."
        )
    if not folded.exists():
        if folded.is_symlink():
            raise NotFound(f"'{folded}' is a symlink to a file that is missing; ask the person to fix or remove it")
        raise NotFound(f"'{folded}' is missing: no such file. List the folder and call again with an existing file.")
    real = folded.resolve(strict=True)
    if not any(_within(real, root) for root in roots):
        raise Refused(
            f"'{folded}' leads to '{real}', which is outside the ingest roots ({_roots_text(roots)}); "
            "a symlink cannot leave them. Ask the person to copy the file into an ingest root."
        )
    if real.is_dir():
        raise InvalidRequest(f"'{folded}' is a folder; ingest the files in it one by one")
    if not real.is_file():
        raise InvalidRequest(f"'{folded}' is not a regular file (a device, socket or pipe); ingest a regular file")
    return real


def read_capped(path: Path, max_bytes: int) -> bytes:
    """The file's bytes, refusing one larger than the cap before reading it whole."""
    size = path.stat().st_size
    if size > max_bytes:
        raise InvalidRequest(
            f"'{path}' is {size} bytes, more than the ingest limit of {max_bytes} bytes "
            "(knowledge.max-document-bytes); split it into smaller files"
        )
    with path.open("rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:  # it grew while being read
        raise InvalidRequest(f"'{path}' is larger than the ingest limit of {max_bytes} bytes; split it")
    return data
