"""Every module of the code is small enough to hold one concept: at most 400 lines, outside generated code (libs/api's
protobuf modules) and what npm installs or builds."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).parents[2]
MAX_LINES = 400
CODE = (".py", ".c", ".h", ".js", ".ts", ".tsx")
GENERATED = (ROOT / "libs" / "api",)
NOT_OURS = {"node_modules", "dist", "__pycache__"}


def modules() -> list[Path]:
    return [
        path
        for top in ("libs", "services", "console/src")
        for path in (ROOT / top).rglob("*")
        if path.suffix in CODE
        and path.is_file()
        and not NOT_OURS.intersection(path.relative_to(ROOT).parts)
        and not any(path.is_relative_to(generated) for generated in GENERATED)
    ]


def test_no_module_of_the_code_is_over_400_lines() -> None:
    found = modules()
    assert len(found) > 200, "the modules were found"
    long = {
        str(path.relative_to(ROOT)): lines
        for path in found
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}, "split these along their seams (one concept per module)"
