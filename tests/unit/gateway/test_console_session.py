"""A console session is a sealed cookie any replica with the same keys opens; it ends when idle, when old, when the
admin token changes, and at sign-out; its CSRF proof is its own."""

from __future__ import annotations

from saip.gateway.console.session import REFRESH_AFTER, Sessions

SEALING = "s" * 40
ADMIN = "a" * 40


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def sessions(clock: Clock, *, admin: str = ADMIN, sealing: str = SEALING) -> Sessions:
    return Sessions(sealing_key=sealing, admin_token=admin, idle_seconds=1800, lifetime_seconds=12 * 3600, clock=clock)


def test_another_replica_with_the_same_keys_opens_the_cookie_and_it_holds_no_token() -> None:
    clock = Clock()
    one, two = sessions(clock), sessions(clock)
    session = one.open()
    cookie = one.seal(session)
    assert ADMIN not in cookie and SEALING not in cookie
    assert two.unseal(cookie) == session
    assert sessions(clock, sealing="t" * 40).unseal(cookie) is None  # another deployment's key


def test_a_damaged_or_forged_cookie_opens_nothing() -> None:
    clock = Clock()
    keys = sessions(clock)
    cookie = keys.seal(keys.open())
    flipped = cookie[:-2] + ("A" if cookie[-2] != "A" else "B") + cookie[-1]
    for bad in (flipped, "", "not-base64!", "x" * 600, cookie[:10]):
        assert keys.unseal(bad) is None


def test_an_idle_session_ends_and_a_used_one_is_written_again() -> None:
    clock = Clock()
    keys = sessions(clock)
    session = keys.open()
    clock.now += REFRESH_AFTER - 1
    assert keys.touched(session) is None  # written moments ago: the same cookie will do
    clock.now += 2
    fresh = keys.touched(session)
    assert fresh is not None and fresh.seen == clock.now
    clock.now += 1799
    assert keys.unseal(keys.seal(session)) is None  # idle since it was opened
    assert keys.unseal(keys.seal(fresh)) is not None  # seen 1799 s ago


def test_a_session_ends_after_its_lifetime_however_busy() -> None:
    clock = Clock()
    keys = sessions(clock)
    session = keys.open()
    while clock.now < session.issued + 12 * 3600 - 600:
        clock.now += 600
        session = keys.touched(session) or session
    assert keys.unseal(keys.seal(session)) is not None
    clock.now += 601
    session = keys.touched(session) or session
    assert keys.unseal(keys.seal(session)) is None


def test_a_new_admin_token_ends_every_session() -> None:
    clock = Clock()
    cookie = sessions(clock).seal(sessions(clock).open())
    assert sessions(clock, admin="b" * 40).unseal(cookie) is None


def test_a_signed_out_session_is_refused_and_the_others_are_not() -> None:
    clock = Clock()
    keys = sessions(clock)
    kept, out = keys.open(), keys.open()
    keys.revoke(out.sid, out.issued + keys.lifetime)
    assert keys.unseal(keys.seal(out)) is None
    assert keys.unseal(keys.seal(kept)) is not None


def test_the_csrf_proof_is_the_session_s_own() -> None:
    clock = Clock()
    keys = sessions(clock)
    one, two = keys.open(), keys.open()
    assert keys.csrf_matches(one, keys.csrf(one))
    assert not keys.csrf_matches(one, keys.csrf(two))
    assert not keys.csrf_matches(one, None)
    assert not keys.csrf_matches(one, "")
