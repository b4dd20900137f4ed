"""What the command line writes to this machine's disk, whole or not at all: a download (`saip audit export -o`) and
an export's folder (`saip shipyard export`). A write that fails part way (the gateway's stream ends, the disk is full,
a folder is not writable) leaves nothing behind and says why: never a file that looks complete and is not, never a
traceback."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import click


def cannot_write(path: Path, exc: OSError) -> click.ClickException:
    return click.ClickException(f"cannot write {path}: {exc.strerror or exc}; nothing was left there")


@contextlib.contextmanager
def whole_file(path: Path) -> Iterator[BinaryIO]:
    """A file to write `path` with: it stands at `path` once the block ends without an error, over what was there; on
    any error `path` is as it was and the partial copy (a hidden file beside it) is removed."""
    partial = path.parent / f".{path.name}.{secrets.token_hex(4)}.partial"
    try:
        # Made new, with the mode a plain open gives a file (0666 less the umask), as the file it becomes.
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise cannot_write(path, exc) from None
    try:
        with os.fdopen(descriptor, "wb") as out:
            yield out
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise cannot_write(path, exc) from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def whole_folder(folder: Path) -> Iterator[list[Path]]:
    """The list to note each file and folder made under `folder` in (parents first): on any error each is removed,
    newest first, and so is `folder` when this made it, so an error leaves the disk as it was."""
    made: list[Path] = []
    if not folder.exists():
        try:
            folder.mkdir(parents=True)
        except OSError as exc:
            raise cannot_write(folder, exc) from None
        made.append(folder)
    try:
        yield made
    except BaseException as failure:
        for path in reversed(made):
            with contextlib.suppress(OSError):
                path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()
        if isinstance(failure, OSError):
            raise cannot_write(folder, failure) from None
        raise
