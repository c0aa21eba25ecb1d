"""API keys and caller identities are compared exactly, through the served gateway on loopback.

* Every near miss of an API key (case, whitespace, prefix, suffix, truncation, empty, non-ASCII lookalikes,
  another scheme word, the header sent twice) is a 401 on every authenticated route; the key itself is not.
* A caller whose identity is a near miss of another's (case, whitespace, prefix, suffix, a sub-caller of the
  same store tenant, lookalikes) never reaches the other's stored responses, sessions, cached answers or
  pooled cascades, whichever way round.
* The CSRF token the engine sends the language server is the configured one, byte for byte: a gateway
  configured with a near miss of the LS's token is refused by the LS.
"""

from __future__ import annotations

import itertools
import json
import socket
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from engine.cascade.polling import PollSettings
from engine.http.app import HttpSettings
from engine.http.gateway import Gateway, GatewayConfig, ServedGateway
from fakels.server import FakeLSThread
from tests.engine.http.conftest import MODEL
from tests.support.fake_ls import StartFakeLs

CSRF = "Engine-Csrf-Token-42"
OWNER_KEY, OWNER = "sk-Owner-Key-42", "team:alice"

# Callers whose identity is a near miss of OWNER's; each has a key of its own (one of them a near miss of
# OWNER_KEY that is configured for someone else).
NEAR_IDENTITIES: list[tuple[str, str, str]] = [
    ("identity-upper-case", "sk-caller-1", "TEAM:ALICE"),
    ("identity-one-letter-case", "sk-caller-2", "Team:alice"),
    ("identity-leading-space", "sk-caller-3", " team:alice"),
    ("identity-trailing-space", "sk-caller-4", "team:alice "),
    ("identity-prefix", "sk-caller-5", "xteam:alice"),
    ("identity-suffix", "sk-caller-6", "team:alicex"),
    ("identity-truncated", "sk-caller-7", "team:alic"),
    ("identity-same-tenant-sub-caller", "sk-caller-8", "team:alice:bot"),
    ("identity-cyrillic-a-lookalike", "sk-caller-9", "team:\u0430lice"),
    ("identity-fullwidth-lookalike", "sk-caller-10", "team:\uff41lice"),
    ("key-differs-from-the-owners-only-in-case", OWNER_KEY.lower(), "team:bob"),
]
NEAR_IDS = [name for name, _, _ in NEAR_IDENTITIES]

KEY_MISSES: list[tuple[str, Callable[[str], bytes]]] = [
    ("upper-case", lambda k: f"Bearer {k.upper()}".encode()),
    ("one-letter-case-flipped", lambda k: f"Bearer {k[:3]}{k[3].swapcase()}{k[4:]}".encode()),
    ("leading-space", lambda k: f"Bearer  {k}".encode()),
    ("leading-tab", lambda k: f"Bearer \t{k}".encode()),
    ("prefix", lambda k: f"Bearer x{k}".encode()),
    ("suffix", lambda k: f"Bearer {k}x".encode()),
    ("truncated", lambda k: f"Bearer {k[:-1]}".encode()),
    ("space-then-more", lambda k: f"Bearer {k} x".encode()),
    ("empty-token", lambda k: b"Bearer "),
    ("scheme-only", lambda k: b"Bearer"),
    ("empty-header", lambda k: b""),
    ("no-scheme", lambda k: k.encode()),
    ("scheme-basic", lambda k: f"Basic {k}".encode()),
    ("scheme-token", lambda k: f"Token {k}".encode()),
    ("scheme-with-colon", lambda k: f"Bearer: {k}".encode()),
    ("no-space-after-scheme", lambda k: f"Bearer{k}".encode()),
    ("tab-after-scheme", lambda k: f"Bearer\t{k}".encode()),
    ("cyrillic-e-lookalike", lambda k: f"Bearer {k.replace('e', chr(0x435))}".encode()),
    ("fullwidth-digit-lookalike", lambda k: f"Bearer {k.replace('4', chr(0xFF14))}".encode()),
    ("nbsp-suffix-utf8", lambda k: f"Bearer {k}\u00a0".encode()),
    ("nbsp-suffix-latin1", lambda k: f"Bearer {k}".encode() + b"\xa0"),
    ("zero-width-space-suffix", lambda k: f"Bearer {k}\u200b".encode()),
]
KEY_MISS_IDS = [name for name, _ in KEY_MISSES]
_prompts = itertools.count()


@pytest.fixture(scope="module")
def fake(start_module_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_module_fake_ls(csrf_token=CSRF, record_secrets=True)


def gateway_for(fake: FakeLSThread, csrf: str = CSRF) -> ServedGateway:
    keys = {OWNER_KEY: OWNER, **{key: identity for _, key, identity in NEAR_IDENTITIES}}
    config = GatewayConfig(
        ls_address=fake.address,
        csrf_token=csrf,
        http=HttpSettings(api_keys=keys),
        poll=PollSettings(poll_interval_s=0.002),
    )
    return ServedGateway(Gateway(config)).start()


@pytest.fixture(scope="module")
def served(fake: FakeLSThread) -> Iterator[ServedGateway]:
    gateway = gateway_for(fake)
    yield gateway
    if gateway.url in _CLIENTS:
        _CLIENTS.pop(gateway.url).close()
    gateway.stop()


def request(
    served: ServedGateway,
    method: str,
    path: str,
    key: str | None = OWNER_KEY,
    body: object = None,
    *,
    session: str | None = None,
) -> httpx.Response:
    headers: list[tuple[bytes, bytes]] = [(b"Content-Type", b"application/json")]
    if key is not None:
        headers.append((b"Authorization", f"Bearer {key}".encode()))
    if session is not None:
        headers.append((b"X-Session-Id", session.encode()))
    content = None if body is None else json.dumps(body).encode()
    return client_for(served).request(method, served.url + path, headers=headers, content=content)


_CLIENTS: dict[str, httpx.Client] = {}


def client_for(served: ServedGateway) -> httpx.Client:
    """One keep-alive client per served gateway (a fresh connection per request costs tens of ms)."""
    if served.url not in _CLIENTS:
        _CLIENTS[served.url] = httpx.Client(timeout=30)
    return _CLIENTS[served.url]


def raw_status(served: ServedGateway, authorization: list[bytes], method: str = "GET", path: str = "/v1/models") -> int:
    """The status of one request whose Authorization header lines are ``authorization``, byte for byte (httpx
    refuses some of them, e.g. a value ending in a space)."""
    body = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "input": "hi"}).encode()
    lines = [f"{method} {path} HTTP/1.1".encode(), f"Host: 127.0.0.1:{served.port}".encode(), b"Connection: close"]
    lines += [b"Authorization: " + value for value in authorization]
    if method == "POST":
        lines += [b"Content-Type: application/json", f"Content-Length: {len(body)}".encode()]
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as conn:
        conn.sendall(b"\r\n".join(lines) + b"\r\n\r\n" + (body if method == "POST" else b""))
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1])


def sends(fake: FakeLSThread) -> list[Any]:
    return [e for e in fake.journal.entries() if e.method == "SendUserCascadeMessage" and e.status == "OK"]


def chat(served: ServedGateway, key: str, messages: list[dict[str, Any]], session: str | None = None) -> httpx.Response:
    return request(served, "POST", "/v1/chat/completions", key, {"model": MODEL, "messages": messages}, session=session)


def fresh_prompt() -> str:
    return f"identity prompt {next(_prompts)}"


# ------------------------------------------------------------------------------------------- API keys


AUTHENTICATED_ROUTES = [
    ("GET", "/v1/models"),
    ("GET", "/v1/ledger"),
    ("POST", "/v1/chat/completions"),
    ("POST", "/v1/responses"),
    ("GET", "/v1/responses/resp_x"),
    ("DELETE", "/v1/responses/resp_x"),
    ("GET", "/v1/responses/resp_x/input_items"),
    ("GET", "/v1/sessions/s1"),
]


@pytest.mark.parametrize(("name", "miss"), KEY_MISSES, ids=KEY_MISS_IDS)
def test_a_near_miss_api_key_is_refused(served: ServedGateway, name: str, miss: Callable[[str], bytes]) -> None:
    assert raw_status(served, [miss(OWNER_KEY)]) == 401


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param([], id="missing"),
        pytest.param([b"Bearer wrong", f"Bearer {OWNER_KEY}".encode()], id="sent-twice-wrong-then-right"),
        pytest.param([f"Bearer {OWNER_KEY}".encode(), b"Bearer wrong"], id="sent-twice-right-then-wrong"),
    ],
)
def test_an_api_key_not_sent_exactly_once_is_refused(served: ServedGateway, authorization: list[bytes]) -> None:
    assert raw_status(served, authorization) == 401


@pytest.mark.parametrize(("method", "path"), AUTHENTICATED_ROUTES, ids=[f"{m} {p}" for m, p in AUTHENTICATED_ROUTES])
def test_every_authenticated_route_refuses_a_near_miss_key(served: ServedGateway, method: str, path: str) -> None:
    for miss in (f"Bearer {OWNER_KEY}x", f"Bearer {OWNER_KEY.upper()}", f"Bearer {OWNER_KEY[:-1]}", "Bearer "):
        assert raw_status(served, [miss.encode()], method, path) == 401, miss
    assert raw_status(served, [], method, path) == 401


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param(f"Bearer {OWNER_KEY}".encode(), id="exact"),
        # The auth-scheme is case-insensitive (RFC 9110 section 11.1); the key is not.
        pytest.param(f"bearer {OWNER_KEY}".encode(), id="scheme-lower-case"),
        pytest.param(f"BEARER {OWNER_KEY}".encode(), id="scheme-upper-case"),
        # Whitespace around the whole field line is not part of the field value (RFC 9112 section 5.1).
        pytest.param(f" \tBearer {OWNER_KEY} \t".encode(), id="optional-whitespace-around-the-field-value"),
    ],
)
def test_the_api_key_is_accepted(served: ServedGateway, authorization: bytes) -> None:
    assert raw_status(served, [authorization]) == 200


# ------------------------------------------------------------------------------------------- caller identities


@pytest.fixture(scope="module")
def owned(served: ServedGateway, fake: FakeLSThread) -> dict[str, str]:
    """What OWNER holds: a stored response, a session with a committed tool result, a cached chat answer."""
    stored = request(served, "POST", "/v1/responses", OWNER_KEY, {"model": MODEL, "input": fresh_prompt()})
    assert stored.status_code == 200, stored.text
    call: dict[str, Any] = {"id": "call_owned", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": fresh_prompt()},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_owned", "content": "owner's result"},
    ]
    assert chat(served, OWNER_KEY, messages, session="shared").status_code == 200
    cached = fresh_prompt()
    assert chat(served, OWNER_KEY, [{"role": "user", "content": cached}]).status_code == 200
    return {"response": stored.json()["id"], "session": "shared", "cached": cached}


def assert_owner_still_holds(served: ServedGateway, owned: dict[str, str]) -> None:
    assert request(served, "GET", f"/v1/responses/{owned['response']}").status_code == 200
    assert request(served, "GET", f"/v1/sessions/{owned['session']}").status_code == 200


@pytest.mark.parametrize(("name", "key", "identity"), NEAR_IDENTITIES, ids=NEAR_IDS)
def test_a_near_miss_identity_never_reaches_the_owners_stored_response(
    served: ServedGateway, owned: dict[str, str], name: str, key: str, identity: str
) -> None:
    response_id = owned["response"]
    for method, path in (
        ("GET", f"/v1/responses/{response_id}"),
        ("GET", f"/v1/responses/{response_id}/input_items"),
        ("DELETE", f"/v1/responses/{response_id}"),
    ):
        answer = request(served, method, path, key)
        assert answer.status_code == 404, (method, path, answer.text)
        assert answer.json()["error"]["code"] == "response_not_found"
    chained = request(
        served, "POST", "/v1/responses", key, {"model": MODEL, "input": "x", "previous_response_id": response_id}
    )
    assert chained.status_code == 404, chained.text
    assert chained.json()["error"]["param"] == "previous_response_id"
    assert_owner_still_holds(served, owned)


@pytest.mark.parametrize(("name", "key", "identity"), NEAR_IDENTITIES, ids=NEAR_IDS)
def test_the_owner_never_reaches_a_near_miss_identitys_stored_response(
    served: ServedGateway, name: str, key: str, identity: str
) -> None:
    theirs = request(served, "POST", "/v1/responses", key, {"model": MODEL, "input": fresh_prompt()})
    assert theirs.status_code == 200, theirs.text
    response_id = theirs.json()["id"]
    assert request(served, "GET", f"/v1/responses/{response_id}").status_code == 404
    assert request(served, "DELETE", f"/v1/responses/{response_id}").status_code == 404
    assert request(served, "GET", f"/v1/responses/{response_id}", key).status_code == 200


@pytest.mark.parametrize(("name", "key", "identity"), NEAR_IDENTITIES, ids=NEAR_IDS)
def test_a_near_miss_identity_never_reaches_the_owners_session(
    served: ServedGateway, owned: dict[str, str], name: str, key: str, identity: str
) -> None:
    answer = request(served, "GET", f"/v1/sessions/{owned['session']}", key)
    assert answer.status_code == 404, answer.text
    assert answer.json()["error"]["code"] == "session_not_found"
    assert_owner_still_holds(served, owned)


@pytest.mark.parametrize(("name", "key", "identity"), NEAR_IDENTITIES, ids=NEAR_IDS)
def test_a_near_miss_identity_is_never_served_the_owners_cached_answer(
    served: ServedGateway, fake: FakeLSThread, owned: dict[str, str], name: str, key: str, identity: str
) -> None:
    before = len(sends(fake))
    assert chat(served, key, [{"role": "user", "content": owned["cached"]}]).status_code == 200
    assert len(sends(fake)) == before + 1, "answered from another caller's cache entry"


@pytest.mark.parametrize(("name", "key", "identity"), NEAR_IDENTITIES, ids=NEAR_IDS)
def test_a_near_miss_identity_never_resumes_the_owners_cascade(
    served: ServedGateway, fake: FakeLSThread, name: str, key: str, identity: str
) -> None:
    prompt = fresh_prompt()
    first = chat(served, OWNER_KEY, [{"role": "user", "content": prompt}])
    assert first.status_code == 200, first.text
    owners_cascade = sends(fake)[-1].request["cascade_id"]
    answer = first.json()["choices"][0]["message"]["content"]
    follow_up = [
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": answer},
        {"role": "user", "content": "and then?"},
    ]
    assert chat(served, key, follow_up).status_code == 200
    assert sends(fake)[-1].request["cascade_id"] != owners_cascade, "resumed another caller's cascade"
    # The owner's cascade was left in the pool for its owner.
    assert chat(served, OWNER_KEY, follow_up).status_code == 200
    assert sends(fake)[-1].request["cascade_id"] == owners_cascade


# ------------------------------------------------------------------------------------------- the LS CSRF token


def test_the_engine_sends_the_configured_csrf_token_exactly(served: ServedGateway, fake: FakeLSThread) -> None:
    assert chat(served, OWNER_KEY, [{"role": "user", "content": fresh_prompt()}]).status_code == 200
    assert {e.headers["x-codeium-csrf-token"] for e in fake.journal.entries()} == {CSRF}


CSRF_MISSES: list[tuple[str, str]] = [
    ("upper-case", CSRF.upper()),
    ("lower-case", CSRF.lower()),
    ("leading-space", " " + CSRF),
    ("trailing-space", CSRF + " "),
    ("prefix", "x" + CSRF),
    ("suffix", CSRF + "x"),
    ("truncated", CSRF[:-1]),
    ("empty", ""),
    ("scheme-word-in-front", "Bearer " + CSRF),
]


@pytest.mark.parametrize(("name", "csrf"), CSRF_MISSES, ids=[name for name, _ in CSRF_MISSES])
def test_a_gateway_configured_with_a_near_miss_csrf_token_is_refused_by_the_ls(
    fake: FakeLSThread, name: str, csrf: str
) -> None:
    before = len(sends(fake))
    gateway = gateway_for(fake, csrf)
    try:
        answer = chat(gateway, OWNER_KEY, [{"role": "user", "content": fresh_prompt()}])
    finally:
        if gateway.url in _CLIENTS:
            _CLIENTS.pop(gateway.url).close()
        gateway.stop()
    assert answer.status_code >= 500, answer.text
    assert len(sends(fake)) == before
    refused = [e for e in fake.journal.entries() if e.headers.get("x-codeium-csrf-token") == csrf]
    assert refused, "the gateway did not send its configured token"
    assert {e.status for e in refused} == {"UNAUTHENTICATED"}
