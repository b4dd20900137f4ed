"""No package under libs/ or services/ has an import cycle: not between two modules, nor around several, counting the
imports under `TYPE_CHECKING` and those inside functions (grimp reads every import statement of a module). A cycle
is broken by moving the shared piece out, never by importing late."""

from __future__ import annotations

from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).parents[2]
# Every package of the workspace: saip.<name> under each library's and service's src/ (saip itself is a namespace).
PACKAGES = sorted(
    f"saip.{folder.name}"
    for folder in ROOT.glob("*/*/src/saip/*")
    if folder.parts[-5] in ("libs", "services") and folder.is_dir() and folder.name != "__pycache__"
)
# Cycles tolerated for the time a change that removes them takes to land, each as the modules it goes around; each
# entry must still be a cycle, so none stays by mistake. Empty: the tree has none.
ALLOWED: set[frozenset[str]] = set()


def cycles(graph: grimp.ImportGraph) -> dict[frozenset[str], tuple[str, ...]]:
    """Each group of modules that import one another round (a strongly connected component of the import graph),
    with one cycle through it to show. An import lies on a cycle when what it imports leads back to the importer;
    those imports, taken as links, join exactly the modules of each group."""
    links: dict[str, set[str]] = {}
    shown: dict[str, tuple[str, ...]] = {}
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            back = graph.find_shortest_chain(imported, importer)
            if back is not None:
                links.setdefault(importer, set()).add(imported)
                links.setdefault(imported, set()).add(importer)
                shown.setdefault(importer, (importer, *back))
    groups: dict[frozenset[str], tuple[str, ...]] = {}
    seen: set[str] = set()
    for start in sorted(links):
        if start in seen:
            continue
        group, frontier = {start}, [start]
        while frontier:
            for neighbour in links[frontier.pop()] - group:
                group.add(neighbour)
                frontier.append(neighbour)
        seen |= group
        groups[frozenset(group)] = shown[min(module for module in group if module in shown)]
    return groups


def _said(group: frozenset[str], path: tuple[str, ...]) -> str:
    others = sorted(group - set(path))
    return " -> ".join(path) + (f" (and around {', '.join(others)})" if others else "")


def test_every_package_is_read() -> None:
    assert {"saip.cli", "saip.common", "saip.audit", "saip.gateway", "saip.v1"} <= set(PACKAGES)


def test_no_package_has_an_import_cycle() -> None:
    found = cycles(grimp.build_graph(*PACKAGES, cache_dir=None))
    new = {_said(group, path) for group, path in found.items() if group not in ALLOWED}
    assert not new, "import cycles (move the shared piece out of the modules named):\n" + "\n".join(sorted(new))
    gone = {" <-> ".join(sorted(group)) for group in ALLOWED - set(found)}
    assert not gone, "no longer cycles, so out of ALLOWED with them:\n" + "\n".join(sorted(gone))


def test_a_cycle_closed_by_a_function_level_or_type_checking_import_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "cyclic"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyclic import b\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from cyclic import c\n")
    (package / "c.py").write_text("from cyclic import d\n\n\ndef later() -> None:\n    from cyclic import a\n")
    (package / "d.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = cycles(grimp.build_graph("cyclic", cache_dir=None))
    assert found == {frozenset({"cyclic.a", "cyclic.b", "cyclic.c"}): ("cyclic.a", "cyclic.b", "cyclic.c", "cyclic.a")}
