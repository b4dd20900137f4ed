"""Paths are explicit: absolute, inside an ingest root, and no symlink or '..' leaves the roots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from saip.knowledge import paths
from saip.knowledge.errors import InvalidRequest, NotFound, Refused


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "ingest"
    (folder / "team").mkdir(parents=True)
    (folder / "team" / "runbook.md").write_text("# Runbook\n")
    return folder.resolve()


def test_an_absolute_path_inside_a_root_is_accepted(root: Path) -> None:
    assert paths.resolve(str(root / "team" / "runbook.md"), [root]) == root / "team" / "runbook.md"


def test_a_relative_path_is_answered_with_the_absolute_path_to_use(root: Path) -> None:
    with pytest.raises(InvalidRequest, match="Paths are explicit") as refused:
        paths.resolve("team/runbook.md", [root])
    assert f"'{root / 'team' / 'runbook.md'}'" in str(refused.value)


def test_a_relative_path_no_root_holds_is_answered_with_the_roots_not_a_made_up_path(root: Path) -> None:
    with pytest.raises(InvalidRequest) as refused:
        paths.resolve("team/gone.md", [root])
    assert str(refused.value) == (
        "Paths are explicit: 'team/gone.md' is relative, and no ingest root holds it. Call again with the absolute "
        f"path of a file inside an ingest root ({root})."
    )


def test_a_missing_file_is_named_as_missing(root: Path) -> None:
    with pytest.raises(NotFound, match=f"'{root / 'team' / 'gone.md'}' is missing"):
        paths.resolve(str(root / "team" / "gone.md"), [root])


def test_traversal_out_of_the_root_is_refused(root: Path) -> None:
    (root.parent / "secret.txt").write_text("s3cret")
    with pytest.raises(Refused, match="outside the ingest roots"):
        paths.resolve(f"{root}/team/../../secret.txt", [root])


def test_a_symlink_that_leaves_the_root_is_refused(root: Path) -> None:
    (root.parent / "outside.md").write_text("# Elsewhere\n")
    os.symlink(root.parent / "outside.md", root / "link.md")
    with pytest.raises(Refused, match="a symlink cannot leave them"):
        paths.resolve(str(root / "link.md"), [root])


def test_a_symlinked_folder_that_leaves_the_root_is_refused(root: Path) -> None:
    outside = root.parent / "elsewhere"
    outside.mkdir()
    (outside / "doc.md").write_text("# Doc\n")
    os.symlink(outside, root / "door")
    with pytest.raises(Refused, match="outside the ingest roots"):
        paths.resolve(str(root / "door" / "doc.md"), [root])


def test_a_symlink_inside_the_root_is_followed(root: Path) -> None:
    os.symlink(root / "team" / "runbook.md", root / "alias.md")
    assert paths.resolve(str(root / "alias.md"), [root]) == root / "team" / "runbook.md"


def test_a_folder_is_refused(root: Path) -> None:
    with pytest.raises(InvalidRequest, match="is a folder"):
        paths.resolve(str(root / "team"), [root])


def test_a_second_root_is_honoured(root: Path, tmp_path: Path) -> None:
    other = tmp_path / "shared"
    other.mkdir()
    (other / "faq.txt").write_text("faq")
    assert paths.resolve(str(other / "faq.txt"), [root, other]) == other / "faq.txt"


def test_a_file_over_the_cap_is_refused_before_it_is_read(root: Path) -> None:
    big = root / "big.txt"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(InvalidRequest, match="more than the ingest limit of 1024 bytes"):
        paths.read_capped(big, 1024)
    assert paths.read_capped(big, 4096) == b"x" * 2048
