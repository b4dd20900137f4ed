"""The console's feed tells each subscriber which topic moved: at once, then at most once a window with the latest
news, and a subscriber that falls behind is told to read everything again."""

from __future__ import annotations

from saip.gateway.console.feed import QUEUE, RESYNC, Feed


async def test_a_topic_is_told_at_once_then_once_more_at_the_window_s_end_with_the_latest_data() -> None:
    feed = Feed(throttle=0.2)
    with feed.subscribed() as console:
        for index in range(1, 6):
            feed.publish("audit", {"index": index})
        feed.publish("tools", {"key": "tool.x"})
        first = await console.next(1)
        other = await console.next(1)
        assert first is not None and (first.topic, first.data) == ("audit", {"index": 1})
        assert other is not None and other.topic == "tools"
        assert await console.next(0.05) is None  # the burst is held back
        last = await console.next(1)
        assert last is not None and (last.topic, last.data) == ("audit", {"index": 5})
        assert await console.next(0.3) is None  # nothing moved since


async def test_a_subscriber_that_falls_behind_is_told_to_read_everything_again() -> None:
    feed = Feed(throttle=0)
    with feed.subscribed() as console:
        for index in range(QUEUE + 10):
            feed.publish(f"topic-{index}")
        told = await console.next(1)
        assert told is not None and told.topic == RESYNC
        assert await console.next(0.05) is None
        feed.publish("approvals")
        after = await console.next(1)
        assert after is not None and after.topic == "approvals"


async def test_a_console_that_left_is_told_nothing() -> None:
    feed = Feed()
    with feed.subscribed():
        assert feed.subscribers == 1
    feed.publish("tools")
    assert feed.subscribers == 0
