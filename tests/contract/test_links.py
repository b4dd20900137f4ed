"""The docs' cross-references hold: every relative link of README.md and docs/*.md reaches a file, and its anchor a
heading of that file; every section a doc or a comment names by its title after the doc's name (`BENCHMARKS.md,
"Cold start"`) is the start of one of that doc's headings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FOLDERS = ("services", "libs", "bench", "tests", "docs", "scripts")
SOURCES = [
    ROOT / "README.md",
    ROOT / "Makefile",
    *sorted(
        path
        for folder in FOLDERS
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".py", ".md") and not {"node_modules", "__pycache__"} & set(path.parts)
    ),
]
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A doc's name, then a section's title in quotes: `docs/BENCHMARKS.md, "Cold start"`, `[audit.md](audit.md) "Memory"`.
NAMED = re.compile(r"\b([A-Za-z]+\.md)\)?,? \"([^\"]+)\"")


def headings(path: Path) -> list[str]:
    """The titles of a markdown file's headings, outside its code blocks."""
    titles, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"#+ (.+)", line)):
            titles.append(heading.group(1).strip())
    return titles


def anchor(title: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, only letters, digits, spaces, '-' and '_', spaces as '-'."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    made: set[str] = set()
    for title in headings(path):
        slug, n = anchor(title), 1
        while slug in made:  # a repeated title gets -1, -2, ...
            slug, n = f"{anchor(title)}-{n}", n + 1
        made.add(slug)
    return made


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.name)
def test_every_relative_link_of_a_doc_reaches_a_file_and_its_heading(doc: Path) -> None:
    broken = []
    for target in LINK.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:
        path, _, fragment = target.partition("#")
        linked = (doc.parent / path).resolve() if path else doc
        if not linked.exists() or (fragment and fragment not in anchors(linked)):
            broken.append(target)
    assert not broken, f"{doc.name} links to what is not there (a file, or a heading's anchor): {broken}"


def test_every_section_named_after_a_doc_is_one_of_its_headings() -> None:
    wrong = []
    for source in SOURCES:
        # A comment or docstring wraps: its lines are read as one, without their `#`.
        text = re.sub(r"\s*\n\s*(#\s*)?", " ", source.read_text(encoding="utf-8"))
        for name, section in NAMED.findall(text):
            doc = ROOT / "docs" / name
            if doc.exists() and not any(title.startswith(section) for title in headings(doc)):
                wrong.append(f'{source.relative_to(ROOT)}: {name}, "{section}"')
    assert not wrong, f"these name a section their doc does not have (say the heading as it is now): {wrong}"
