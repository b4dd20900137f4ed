"""One call on the real engine, in this process: the runtime's helpers, the limits, escapes, fetch under the guard."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from typing import Any

import pytest

from saip.sandbox.isolate import WEB_PARTS, run_job
from saip.sandbox.job import Job, Outcome
from tests.http_origin import QuietHandler, http_origin


def run(code: str, **options: Any) -> Outcome:
    """One call on a fresh isolate, in this process (a worker runs exactly this on one of its spares)."""
    return run_job(
        Job(code=code, arguments=options.pop("arguments", {}), statics=options.pop("statics", {}), **options)
    )


def result(code: str, **options: Any) -> Any:
    outcome = run(code, **options)
    assert outcome.ok, outcome.error
    return json.loads(outcome.result_json)


def test_params_and_static_values_are_globals_and_static_wins() -> None:
    value = result("return [a, b, region]", arguments={"a": 1, "b": 2, "region": "eu"}, statics={"region": "us"})
    assert value == [1, 2, "us"]


def test_the_return_value_is_awaited() -> None:
    assert result("return new Promise((resolve) => resolve({ late: true }))") == {"late": True}


def test_console_is_captured_and_capped() -> None:
    outcome = run("for (let i = 0; i < 5; i++) console.log('line', i, { i }); return 1", console_cap=3)
    assert outcome.console == ['line 0 {"i":0}', 'line 1 {"i":1}', 'line 2 {"i":2}']
    assert outcome.console_dropped == 2


def test_each_call_gets_a_fresh_context() -> None:
    run("globalThis.leftover = 42; return 1")
    assert result("return typeof leftover") == "undefined"


def test_url_and_search_params_behave_like_the_web_platform() -> None:
    value = result(
        "const u = new URL('../b/c?q=a b&x=1#frag', 'https://Example.COM:443/a/index.html');"
        "u.searchParams.set('x', '2'); u.searchParams.append('y', 'a&b');"
        "return [u.href, u.hostname, u.port, u.pathname, u.origin, u.searchParams.get('q'),"
        " new URLSearchParams({k: 'v w'}).toString()]"
    )
    assert value == [
        "https://example.com/b/c?q=a+b&x=2&y=a%26b#frag",
        "example.com",
        "",
        "/b/c",
        "https://example.com",
        "a b",
        "k=v+w",
    ]


def test_an_invalid_url_is_a_type_error_the_code_can_catch() -> None:
    assert result("try { new URL('not a url'); } catch (e) { return e.name + ': ' + e.message; }") == (
        "TypeError: Invalid URL: 'not a url'"
    )


def test_the_web_helpers_script_is_made_of_every_file_of_js_web() -> None:
    files = resources.files("saip.sandbox").joinpath("js", "web").iterdir()
    assert sorted(file.name for file in files) == sorted(f"{part}.js" for part in WEB_PARTS)


def test_base64_and_utf8_round_trip() -> None:
    value = result(
        "const bytes = new TextEncoder().encode('héllo ✓');"
        "const b64 = btoa(String.fromCharCode(...bytes));"
        "return [b64, new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)))]"
    )
    assert value == ["aMOpbGxvIOKckw==", "héllo ✓"]


def test_digests_and_hmac_match_the_published_vectors() -> None:
    value = result(
        "return [await crypto.sha256Hex('abc'),"
        " await crypto.hmacSha256Hex('key', 'The quick brown fox jumps over the lazy dog')]"
    )
    assert value == [
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8",
    ]


def test_the_host_answers_a_code_that_replaced_promise() -> None:
    # The door's promise is made from the Promise the runtime took before the code ran: a digest still answers,
    # and the settlement's knock still reaches the worker after an await on the host.
    value = result(
        "Promise.withResolvers = () => { throw new Error('hijacked'); };"
        " globalThis.Promise = function () { throw new Error('hijacked'); };"
        " return await crypto.sha256Hex('abc')"
    )
    assert value == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_random_uuids_are_version_4_and_distinct() -> None:
    uuids = result("return Array.from({ length: 50 }, () => crypto.randomUUID())")
    assert len(set(uuids)) == 50
    assert all(uuid[14] == "4" and uuid[19] in "89ab" for uuid in uuids)


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("return require('fs').readFileSync('/etc/passwd')", "ReferenceError: require is not defined"),
        ("return process.env", "ReferenceError: process is not defined"),
        ("return await import('fs')", "Not supported"),
        ("return Deno.readTextFile('/etc/passwd')", "ReferenceError: Deno is not defined"),
        ("return typeof WebAssembly === 'undefined' ? undefined : 'wasm'", "The code returned undefined"),
    ],
)
def test_the_host_is_out_of_reach(code: str, error: str) -> None:
    outcome = run(code)
    assert not outcome.ok
    assert error in outcome.error


def test_an_infinite_loop_is_stopped_at_the_wall_clock_limit_as_a_guard_block() -> None:
    outcome = run("while (true) {}", timeout=0.5)
    assert not outcome.ok
    assert outcome.error == "The code ran longer than the 0.5 s wall-clock limit and was stopped."
    assert outcome.guard_blocks == [("time-limit", outcome.error)]


def test_a_heap_bomb_is_stopped_at_the_memory_cap_as_a_guard_block() -> None:
    outcome = run("const a = []; while (true) a.push(new Array(100000).fill(1));", memory_bytes=32 * 1024 * 1024)
    assert not outcome.ok
    assert outcome.error == "The code used more than the 32 MiB memory cap and was stopped."
    assert [reason for reason, _ in outcome.guard_blocks] == ["memory-limit"]


def test_a_recursion_bomb_fails_as_a_range_error_the_code_may_catch() -> None:
    bomb = "const f = (n) => f(n + 1) + 1;"
    assert run(f"{bomb} return f(0)").error == "RangeError: Maximum call stack size exceeded"
    assert result(f"{bomb} try {{ return f(0); }} catch (e) {{ return 'caught ' + e.name; }}") == "caught RangeError"


def test_an_allocation_past_the_cap_ends_the_call_even_when_the_code_catches_it() -> None:
    outcome = run("try { new Uint8Array(2 ** 28); } catch (e) { return 'caught'; }", memory_bytes=32 * 1024 * 1024)
    assert not outcome.ok
    assert outcome.error == "The code used more than the 32 MiB memory cap and was stopped."
    assert [reason for reason, _ in outcome.guard_blocks] == ["memory-limit"]


def test_a_busy_loop_in_a_timer_callback_is_stopped_at_the_wall_clock_limit() -> None:
    outcome = run("await new Promise(() => setTimeout(() => { while (true) {} }, 1)); return 1", timeout=0.5)
    assert outcome.error == "The code ran longer than the 0.5 s wall-clock limit and was stopped."
    assert [reason for reason, _ in outcome.guard_blocks] == ["time-limit"]


def test_the_console_of_a_stopped_call_is_kept() -> None:
    outcome = run("console.log('before the loop'); while (true) {}", timeout=0.5)
    assert outcome.console == ["before the loop"]
    assert [reason for reason, _ in outcome.guard_blocks] == ["time-limit"]


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("return () => 1", "The return value (a function) is not JSON"),
        ("return 10n", "The return value is not JSON (Do not know how to serialize a BigInt)"),
        ("const o = {}; o.self = o; return o", "The return value is not JSON (Converting circular structure"),
        ("const x = 1;", "The code returned undefined: end it with `return <value>`."),
        ("return {", "The code does not parse: SyntaxError"),
        ("throw new RangeError('out of range')", "RangeError: out of range"),
    ],
)
def test_results_that_are_not_json_and_failing_code_are_explained(code: str, error: str) -> None:
    outcome = run(code)
    assert not outcome.ok
    assert error in outcome.error


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("throw { code: 42, why: 'quota' }", 'The code threw {"code":42,"why":"quota"}'),
        ("await Promise.reject([1, 'two'])", 'The code threw [1,"two"]'),
        ("throw 42", "The code threw 42"),
        ("throw null", "The code threw null"),
        ("throw 'a plain message'", "a plain message"),
        ("throw undefined", "The code threw undefined; throw new Error(message) to say what failed."),
        (
            "const o = {}; o.self = o; throw o",
            "The code threw a value that cannot be shown as JSON; throw new Error(message) to say what failed.",
        ),
    ],
)
def test_a_thrown_value_that_is_not_an_error_reads_as_its_json(code: str, error: str) -> None:
    outcome = run(code)
    assert not outcome.ok
    assert outcome.error == error


@pytest.mark.parametrize(
    ("thrown", "error"),
    [
        ("new TypeError('bad input')", "TypeError: bad input"),
        ("'a plain message'", "a plain message"),
        ("{ code: 42 }", 'The code threw {"code":42}'),
    ],
)
def test_a_value_thrown_in_a_timer_callback_fails_the_call_as_a_synchronous_throw_does(thrown: str, error: str) -> None:
    # The call awaits a promise the callback never settles: only the throw can end it (the limit only bounds the test).
    outcome = run(f"await new Promise(() => setTimeout(() => {{ throw {thrown} }}, 5)); return 1", timeout=5)
    assert (outcome.ok, outcome.error, outcome.guard_blocks) == (False, error, [])
    assert outcome.error == run(f"throw {thrown}").error


def test_timers_of_no_delay_run_in_order_and_a_cleared_one_never_runs() -> None:
    code = (
        "const seen = [];"
        "const cleared = setTimeout(() => { throw new Error('cleared, so never thrown') }, 1); clearTimeout(cleared);"
        "await new Promise((done) => { setTimeout(() => seen.push('later'), 20); setTimeout(() => seen.push('now'), 0);"
        " setTimeout(done, 40); });"
        "return [...seen, await new Promise((done) => setTimeout(done, undefined, 'its argument'))]"
    )
    assert result(code) == ["now", "later", "its argument"]


def test_a_result_past_the_size_cap_is_refused() -> None:
    outcome = run("return 'x'.repeat(2000)", max_result_chars=1000)
    assert outcome.error == "The result is larger than 1000 characters; return less."
    assert [reason for reason, _ in outcome.guard_blocks] == ["result-too-large"]


class _Handler(QuietHandler):
    def do_GET(self) -> None:
        routes = {
            "/json": (200, {"content-type": "application/json"}, b'{"hello": "sandbox"}'),
            "/metadata": (302, {"location": "http://169.254.169.254/latest/meta-data/"}, b""),
            "/loop": (302, {"location": "/loop"}, b""),
            "/big": (200, {"content-type": "text/plain"}, b"x" * 5000),
        }
        status, headers, body = routes.get(self.path, (404, {}, b"not found"))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        echoed = json.dumps(
            {"method": "POST", "body": self.rfile.read(length).decode(), "type": self.headers["content-type"]}
        )
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(echoed.encode())


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with http_origin(_Handler) as url:
        yield url


def granted(**options: Any) -> dict[str, Any]:
    """The local test site granted by name: the person listed 127.0.0.1 exactly, so its address is not refused."""
    return {"network_mode": "allowlist", "hosts_allow": ("127.0.0.1",), **options}


def test_fetch_reads_json_from_a_granted_host(site: str) -> None:
    value = result(
        f"const r = await fetch('{site}/json'); return [r.status, r.ok, r.headers.get('Content-Type'), await r.json()]",
        **granted(),
    )
    assert value == [200, True, "application/json", {"hello": "sandbox"}]


def test_fetch_posts_a_body(site: str) -> None:
    value = result(
        f"const r = await fetch('{site}/echo', {{ method: 'post', body: JSON.stringify({{ n: 1 }}),"
        " headers: { 'content-type': 'application/json' } }); return await r.json()",
        **granted(),
    )
    assert value == {"method": "POST", "body": '{"n":1}', "type": "application/json"}


@pytest.mark.parametrize(
    ("mode", "url", "reason"),
    [
        ("blocked", "https://example.com/", "network-blocked"),
        ("strict", "http://127.0.0.1/", "private-address"),
        ("strict", "http://169.254.169.254/latest/meta-data/", "private-address"),
        ("strict", "http://[::1]/", "private-address"),
        ("strict", "http://10.1.2.3/", "private-address"),
        ("strict", "file:///etc/passwd", "bad-url"),
    ],
)
def test_fetch_refusals_are_guard_blocks_with_their_reason(mode: str, url: str, reason: str) -> None:
    outcome = run(f"return await fetch('{url}')", network_mode=mode)
    assert not outcome.ok
    assert outcome.error.startswith("TypeError: fetch refused: ")
    assert [label for label, _ in outcome.guard_blocks] == [reason]


def test_a_host_outside_the_allowlist_is_refused(site: str) -> None:
    outcome = run("return await fetch('https://example.org/')", **granted())
    assert [label for label, _ in outcome.guard_blocks] == ["host-not-allowed"]
    assert "add it to sandbox.hostsAllow" in outcome.error


def test_a_redirect_to_the_metadata_address_is_refused_at_the_hop(site: str) -> None:
    outcome = run(f"return await fetch('{site}/metadata')", **granted())
    assert [label for label, _ in outcome.guard_blocks] == ["host-not-allowed"]
    assert "169.254.169.254" in outcome.error


def test_a_redirect_loop_is_cut_after_the_redirect_cap(site: str) -> None:
    outcome = run(f"return await fetch('{site}/loop')", **granted(max_redirects=3))
    assert [label for label, _ in outcome.guard_blocks] == ["too-many-redirects"]


def test_a_body_past_the_cap_is_refused(site: str) -> None:
    outcome = run(f"return await (await fetch('{site}/big')).text()", **granted(max_body=1000))
    assert [label for label, _ in outcome.guard_blocks] == ["body-too-large"]


def test_the_code_may_catch_a_refusal_and_the_guard_still_records_it() -> None:
    outcome = run(
        "try { await fetch('http://127.0.0.1/'); } catch (e) { return 'caught: ' + e.message.slice(0, 13); }",
        network_mode="strict",
    )
    assert outcome.ok and json.loads(outcome.result_json) == "caught: fetch refused"
    assert [label for label, _ in outcome.guard_blocks] == ["private-address"]
