"""The plain path of ``POST /api/v1/infer`` reads a request exactly as the DRF serializer does.

``plain_infer_request`` skips the serializer for plain requests (speed); wherever it answers, its answer
must be the serializer's ``validated_data``, and it must answer for the requests client apps send.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inference.request_body import InferRequestSerializer, plain_infer_request


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _serializer(data: Any) -> dict[str, Any] | None:
    serializer = InferRequestSerializer(data=data)
    return _plain(serializer.validated_data) if serializer.is_valid() else None


# texts near the edges: blank, padded, long, with NUL or a lone surrogate, non-ASCII
texts = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", " ", "  web  ", "\x00", "a\ud800b", "é", "web\n"]),
    st.integers(0, 3).map(lambda n: "x" * (40 * n + 1)),
    st.integers(60, 70).map(lambda n: "r" * n),
)
values = st.one_of(
    texts, st.none(), st.integers(), st.booleans(), st.floats(allow_nan=False), st.lists(texts)
)
context = st.dictionaries(
    st.sampled_from(
        [
            "role",
            "product",
            "channel",
            "language",
            "history",
            "session_id",
            "typology",
            "user_id",
            "timestamp",
            "x",
        ]
    ),
    st.one_of(values, st.lists(texts, max_size=22)),
)
requests = st.dictionaries(
    st.sampled_from(
        ["prompt", "context", "parameters", "dry_run", "idempotency_key", "disambiguation", "extra"]
    ),
    st.one_of(
        values,
        context,
        st.dictionaries(st.text(max_size=5), values, max_size=3),
        st.integers(120, 140).map(lambda n: " k" * (n // 2)),
    ),
)

# mostly well-formed requests, each part sometimes odd: the plain path answers for many of them
near_plain = st.fixed_dictionaries(
    {"prompt": texts},
    optional={
        "context": st.fixed_dictionaries(
            {},
            optional={
                "channel": st.one_of(texts, st.none()),
                "role": st.one_of(texts, st.none()),
                "language": texts,
                "session_id": texts,
                "history": st.lists(texts, max_size=22),
            },
        ),
        "parameters": st.dictionaries(st.text(max_size=5), values, max_size=3),
        "dry_run": st.one_of(st.booleans(), st.sampled_from([0, 1, "true"])),
        "idempotency_key": texts,
    },
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(requests, near_plain))
def test_wherever_the_plain_path_answers_the_serializer_gives_the_same_data(data: dict[str, Any]) -> None:
    plain = plain_infer_request(data)
    if plain is not None:
        assert _serializer(data) == _plain(plain)


@settings(max_examples=300, deadline=None)
@given(
    prompt=st.text(min_size=1, max_size=200).filter(lambda t: "\x00" not in t and t.isprintable()),
    channel=st.sampled_from(["web", "chat", "email"]),
    history=st.lists(st.sampled_from(["hi", "I need help with my invoice"]), max_size=3),
    dry_run=st.booleans(),
)
def test_the_requests_client_apps_send_take_the_plain_path(
    prompt: str, channel: str, history: list[str], dry_run: bool
) -> None:
    data = {
        "prompt": prompt,
        "context": {"channel": channel, "history": history, "language": "en", "session_id": "s-1"},
        "parameters": {"order_id": "A-1"},
        "dry_run": dry_run,
    }
    plain = plain_infer_request(data)
    assert plain is not None
    assert _plain(plain) == _serializer(data)


def test_what_only_the_serializer_can_judge_goes_to_it() -> None:
    for data in (
        {},  # the prompt is required
        {"prompt": 3},  # DRF turns a number into text
        {"prompt": "hi", "context": {"timestamp": "2026-11-22T07:00:00Z"}},
        {"prompt": "hi", "context": {"channel": ""}},
        {"prompt": "hi", "context": {"role": "r" * 64}},
        {"prompt": "hi", "dry_run": "true"},
        {"prompt": "hi", "unknown": 1},
        {"prompt": "a\x00b"},
        {"prompt": "x" * 20_001},
        {"prompt": "hi", "context": {"history": ["a"] * 21}},
        {"prompt": "hi", "context": {"history": ["a" * 2001]}},
        {"prompt": "hi", "idempotency_key": "k" * 129},
        ["hi"],
    ):
        assert plain_infer_request(data) is None, data


def test_a_continuation_is_read_by_the_serializer():
    """``disambiguation`` (the answer to an earlier "X or Y?") is never read by the plain path, so its
    field messages are the serializer's."""
    data = {"prompt": "sso", "disambiguation": {"request_id": "abc", "choice": "SSO & SAML login"}}

    assert plain_infer_request(data) is None
    assert _serializer(data)["disambiguation"] == {"request_id": "abc", "choice": "SSO & SAML login"}
    assert _serializer({"prompt": "sso", "disambiguation": {"request_id": "abc"}}) is None
