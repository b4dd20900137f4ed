"""/console serves the built app: its page for every app route, its hashed files cached for good, nothing outside
its folder, and every answer under the console's Content-Security-Policy."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from saip.gateway.console.static import NOT_BUILT, POLICY, ConsoleFiles


@pytest.fixture
def built(tmp_path: Path) -> Path:
    folder = tmp_path / "console"
    (folder / "assets").mkdir(parents=True)
    (folder / "index.html").write_text('<!doctype html><script type="module" src="/console/assets/app.js"></script>')
    (folder / "assets" / "app.js").write_text("console.log('app')")
    (folder / "favicon.svg").write_text("<svg/>")
    (tmp_path / "secret.txt").write_text("not the console's")
    return folder


def test_every_app_route_is_the_app_s_page_under_its_policy(built: Path) -> None:
    client = TestClient(ConsoleFiles(built))
    for path in ("/console/", "/console/tools/word-count", "/console/approvals"):
        page = client.get(path)
        assert page.status_code == 200 and page.text.startswith("<!doctype html>")
        assert page.headers["content-security-policy"] == POLICY
        assert "frame-ancestors 'none'" in POLICY and "script-src 'self'" in POLICY and "unsafe-inline" not in POLICY
        assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"
    moved = client.get("/console", follow_redirects=False)
    assert (moved.status_code, moved.headers["location"]) == (308, "/console/")


def test_hashed_files_are_cached_for_good_and_a_missing_one_is_not_the_page(built: Path) -> None:
    client = TestClient(ConsoleFiles(built))
    script = client.get("/console/assets/app.js")
    assert script.text == "console.log('app')" and "immutable" in script.headers["cache-control"]
    assert script.headers["content-security-policy"] == POLICY
    missing = client.get("/console/assets/gone.js")
    assert missing.status_code == 404 and "reload" in missing.text
    assert client.get("/console/favicon.svg").text == "<svg/>"


def test_nothing_outside_the_console_s_folder_is_served(built: Path) -> None:
    client = TestClient(ConsoleFiles(built))
    for path in ("/console/..%2fsecret.txt", "/console/%2e%2e/secret.txt", "/console/assets/..%2f..%2fsecret.txt"):
        answer = client.get(path)
        assert "not the console's" not in answer.text


def test_a_console_not_built_says_how_to_build_it(tmp_path: Path) -> None:
    answer = TestClient(ConsoleFiles(tmp_path / "nowhere")).get("/console/")
    assert (answer.status_code, answer.text) == (503, NOT_BUILT)


def test_the_console_s_files_are_only_read(built: Path) -> None:
    answer = TestClient(ConsoleFiles(built)).post("/console/")
    assert answer.status_code == 405 and answer.headers["allow"] == "GET, HEAD"
