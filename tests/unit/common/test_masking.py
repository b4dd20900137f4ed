"""Secret masking: names, patterns, known values; ${ENV} references stay."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saip.common import masking
from saip.common.masking import MASK, Masker, is_secret_name, mask_text, mask_value


@pytest.mark.parametrize(
    "name",
    [
        "Authorization",
        "token",
        "access_token",
        "api_key",
        "x-api-key",
        "apiKey",
        "password",
        "passwd",
        "client_secret",
        "secrets",
        "privateKey",
        "credentials",
        "cookie",
        "key",
    ],
)
def test_secret_names_are_recognised(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["name", "city", "tool", "description", "count", "author"])
def test_ordinary_names_are_not_secrets(name: str) -> None:
    assert not is_secret_name(name)


def test_values_under_secret_names_become_the_mask_and_references_stay() -> None:
    masked = mask_value(
        {
            "headers": {"Authorization": "Bearer abc.def", "X-Api-Key": "k-123456"},
            "password": "hunter22",
            "apiKey": "${WEATHER_API_KEY}",
            "port": 8080,
            "token": 123456,
            "nested": [{"secret": "s3cr3t"}, "plain"],
        }
    )
    assert masked == {
        "headers": {"Authorization": MASK, "X-Api-Key": MASK},
        "password": MASK,
        "apiKey": "${WEATHER_API_KEY}",
        "port": 8080,
        "token": MASK,
        "nested": [{"secret": MASK}, "plain"],
    }


FREE_TEXT = [
    ("Authorization: Bearer eyJhbGciOi.x-y_z", "Authorization: Bearer ***"),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNz'", "curl -H 'Authorization: Basic ***'"),
    ("GET /v1?api_key=abc123&city=Oslo", "GET /v1?api_key=***&city=Oslo"),
    ('{"password": "hunter2", "user": "ann"}', '{"password": "***", "user": "ann"}'),
    ("token=${GITHUB_TOKEN} is a reference", "token=${GITHUB_TOKEN} is a reference"),
    ("nothing secret here", "nothing secret here"),
]


@pytest.mark.parametrize(("text", "expected"), FREE_TEXT)
def test_patterns_in_free_text_are_masked(text: str, expected: str) -> None:
    assert mask_text(text) == expected


@pytest.mark.parametrize(("text", "expected"), FREE_TEXT)
def test_masking_twice_changes_nothing_more(text: str, expected: str) -> None:
    assert mask_text(mask_text(text)) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("fetch https://ann:hunter22@db.example.com/x failed", "fetch https://ann:***@db.example.com/x failed"),
        ("nats://saip:pw@nats:4222", "nats://saip:***@nats:4222"),
        ("https://user@example.com/ has no password", "https://user@example.com/ has no password"),
        ("https://ann:${DB_PASSWORD}@db/", "https://ann:${DB_PASSWORD}@db/"),
        (
            "https://bucket.s3.amazonaws.com/f?X-Amz-Credential=AKIA%2F1&X-Amz-Signature=9f8e&x=1",
            "https://bucket.s3.amazonaws.com/f?X-Amz-Credential=***&X-Amz-Signature=***&x=1",
        ),
        ("https://blob.example/f?sv=2024&sig=abc%3D", "https://blob.example/f?sv=2024&sig=***"),
        ("https://app.example/cb?code=4/0Ad&state=xyz", "https://app.example/cb?code=***&state=xyz"),
        ("https://api.example/v1?access_token=t0k3n&q=cats", "https://api.example/v1?access_token=***&q=cats"),
        ("https://example.com/docs?page=2#code=1", "https://example.com/docs?page=2#code=1"),
    ],
)
def test_credentials_in_urls_are_masked(text: str, expected: str) -> None:
    assert mask_text(text) == expected


def test_known_secret_values_are_replaced_wherever_they_appear() -> None:
    masker = Masker(["sk-live-0123456789", "abc"])  # 3 characters is too short to be a known secret
    assert masker.text("called with sk-live-0123456789 in the url") == "called with *** in the url"
    assert masker.value({"note": "key sk-live-0123456789", "short": "abc"}) == {"note": "key ***", "short": "abc"}


def test_json_is_masked_compact_sorted_and_bounded() -> None:
    masker = Masker()
    assert masker.json({"b": 1, "password": "x"}) == '{"b":1,"password":"***"}'
    assert len(masker.json({"text": "x" * 10_000}, limit=100)) == 100


def _every_pattern(text: str) -> str:
    """The masking without its gates: every pattern over every text, in the masker's order."""
    text = masking._USERINFO.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}", text)
    text = masking._URL_CREDENTIAL.sub(lambda m: f"{m.group(1)}{MASK}", text)
    text = masking._BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)
    text = masking._JSON_PAIR.sub(lambda m: f'{m.group(1)}"{MASK}"', text)
    return masking._TEXT_PAIR.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)


# Pieces the patterns react to, put together in any order by the property below.
_PIECES = st.sampled_from(
    [
        "token",
        "Token",
        "key",
        "api_KEY",
        "password",
        "passwd",
        "Authorization",
        "client_secret",
        "credentials",
        "cookie",
        "tok",
        "en",
        "pa\u017f\u017fword",  # long s: IGNORECASE matches it to s
        "authorız",
        "atİon",
        "\u212aey",  # the Kelvin sign, k to IGNORECASE
        "Bearer ",
        "basic ",
        "bearer",
        "https://",
        "ann",
        ":",
        "=",
        "@",
        '"',
        "?",
        "&",
        "sig",
        "code",
        " ",
        "${ENV}",
        "***",
        "abc123",
        "/",
        ",",
    ]
)


@given(st.lists(_PIECES, max_size=12).map("".join) | st.text(max_size=40))
@settings(max_examples=400, deadline=None)
def test_the_gates_skip_only_patterns_that_could_not_match(text: str) -> None:
    assert Masker().text(text) == _every_pattern(text)


def test_a_message_that_quotes_the_input_is_masked_where_it_quotes_it_and_nowhere_else() -> None:
    given = {"name": "password=hunter2", "documents": ["Authorization: Bearer sk-live-abcdef"], "apiKey": "k1k1k1"}
    message = (
        "No tool named 'password=hunter2'; no document 'Authorization: Bearer sk-live-abcdef' (sk-live-abcdef); "
        "key k1k1k1. The REST API needs the admin token: send 'Authorization: Bearer <admin token>'."
    )
    assert Masker().quoted(message, given) == (
        "No tool named 'password=***'; no document 'Authorization: Bearer ***' (***); key ***. The REST API needs "
        "the admin token: send 'Authorization: Bearer <admin token>'."
    )
    # Nothing to hide (a reference, a value too short to look for): the answer need not be read again.
    assert Masker().quoting({"name": "weather", "env": "${API_KEY}", "token": "a"}) is None


def test_a_message_that_quotes_the_input_in_another_case_is_masked_all_the_same() -> None:
    given = {"spec": {"sandbox": {"hostsAllow": ["Bearer sk-live-51Habcdefghijklmnop"]}, "password": "Hunter2Xyz"}}
    message = "hostsAllow entry 'bearer sk-live-51habcdefghijklmnop' is not a host name; 'HUNTER2XYZ' is not either."
    assert Masker().quoted(message, given) == "hostsAllow entry 'bearer ***' is not a host name; '***' is not either."


def test_input_nested_deeper_than_recursion_reaches_is_read_for_what_a_message_quotes() -> None:
    given: object = {"password": "hunter22"}
    for _ in range(5000):
        given = [given]
    assert Masker().quoted("No document 'hunter22'.", given) == "No document '***'."
