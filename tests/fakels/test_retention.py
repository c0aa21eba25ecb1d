"""A long-running fake stays within its bounds: the journal keeps the newest entries (by count and
by raw bytes), the cascade used longest ago is forgotten past ``max_cascades``, and readers are told
what was dropped instead of reading a journal with a hole in it."""

from __future__ import annotations

import http.client

import grpc
import pytest

from fakels.cascade import EXPIRED_TEXT, LanguageServerState
from fakels.control_client import ControlClient, ControlError
from fakels.demo import play_turn
from fakels.journal import Journal, JournalEntry
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.retention import Retention
from fakels.server import FakeLSThread

TOKEN = "retention-token"


def _entry(raw: bytes = b"x") -> JournalEntry:
    return JournalEntry(0, 0.0, "grpc", "Heartbeat", "/p", {}, raw, {})


def _journal(max_entries: int = 1000, max_bytes: int = 10**6, *sizes: int) -> Journal:
    journal = Journal(max_entries=max_entries, max_bytes=max_bytes)
    for size in sizes:
        journal.append(_entry(b"x" * size))
    return journal


@pytest.mark.parametrize(("appended", "kept", "first"), [(2, 2, 0), (3, 3, 0), (4, 3, 1), (10, 3, 7)])
def test_the_journal_keeps_the_newest_entries_up_to_its_count(appended: int, kept: int, first: int) -> None:
    journal = _journal(3, 10**6, *[1] * appended)
    assert (journal.retained, journal.first_seq, len(journal)) == (kept, first, appended)
    assert [e.seq for e in journal.entries()] == list(range(first, appended))
    assert journal.dropped_since(0) == first
    assert journal.dropped_since(first) == 0


@pytest.mark.parametrize(
    ("sizes", "kept"), [((5, 4), 2), ((5, 5), 2), ((5, 6), 1), ((3, 3, 3, 1), 4), ((3, 3, 3, 2), 3)]
)
def test_the_journal_keeps_the_newest_entries_within_its_bytes(sizes: tuple[int, ...], kept: int) -> None:
    """max_bytes 10: 9 and 10 bytes fit, 11 do not."""
    journal = _journal(1000, 10, *sizes)
    assert journal.retained == kept
    assert journal.retained_bytes == sum(sizes[-kept:])


def test_the_newest_entry_is_kept_however_big() -> None:
    journal = _journal(1000, 10, 4, 50)
    assert ([e.seq for e in journal.entries()], journal.retained_bytes) == ([1], 50)


def test_since_keeps_its_meaning_after_drops_and_a_clear_restarts_the_numbers() -> None:
    journal = _journal(2, 10**6, 1, 1, 1, 1, 1)
    assert [e.seq for e in journal.entries(since=4)] == [4]
    assert [e.seq for e in journal.entries(since=5)] == []
    assert journal.dropped_since(1) == 2
    journal.clear()
    assert (len(journal), journal.retained, journal.first_seq, journal.append(_entry()).seq) == (0, 0, 0, 0)


@pytest.mark.parametrize("bounds", [(0, 10), (10, 0)])
def test_a_bound_below_one_is_refused(bounds: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="at least one"):
        Journal(max_entries=bounds[0], max_bytes=bounds[1])


def test_a_server_under_a_long_stream_of_turns_stays_within_its_bounds() -> None:
    retention = Retention(journal_max_entries=40, journal_max_bytes=10**6, max_cascades=3)
    with FakeLSThread(csrf_token=TOKEN, control_port=0, retention=retention) as fake:
        for n in range(25):
            assert play_turn(fake.address, TOKEN, f"turn {n}").text
            assert fake.journal.retained <= 40
            assert len(_state(fake).cascades) <= 3
        total = len(fake.journal)
        assert total > 40 * 2, f"the stream was too short to test the bound: {total} requests"
        assert fake.journal.retained == 40
        assert _state(fake).evicted == 22

        port = fake.ports.control
        assert port is not None
        client = ControlClient(port)
        with pytest.raises(ControlError, match=rf"dropped entries 0\.\.{total - 41} under its retention bound"):
            client.journal(since=0)
        assert [e["seq"] for e in client.journal(since=total - 40)] == list(range(total - 40, total))
        assert client.state()["journal_retained"] == 40
        assert _dropped_header(port, since=0) == str(total - 40)
        assert _dropped_header(port, since=total - 1) == "0"


def _dropped_header(port: int, since: int) -> str | None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", f"/journal?since={since}")
        response = connection.getresponse()
        response.read()
        return response.getheader("Fakels-Journal-Dropped")
    finally:
        connection.close()


def test_a_forgotten_cascade_answers_as_expired_and_one_retired_by_a_reset_as_not_found() -> None:
    with FakeLSThread(csrf_token=TOKEN, retention=Retention(max_cascades=2)) as fake:
        ids = [_start(fake) for _ in range(3)]
        assert set(_state(fake).cascades) == set(ids[1:])
        assert _poll_error(fake, ids[0]) == (grpc.StatusCode.NOT_FOUND, EXPIRED_TEXT)
        assert _poll_error(fake, ids[1]) is None
        fake.reset()
        code, message = _poll_error(fake, ids[2]) or (None, "")
        assert (code, "not found" in message) == (grpc.StatusCode.NOT_FOUND, True)


def _state(fake: FakeLSThread) -> LanguageServerState:
    assert fake.server is not None
    return fake.server.core.state


def _start(fake: FakeLSThread) -> str:
    with grpc.insecure_channel(fake.address) as channel:
        stub = ls_grpc.LanguageServerServiceStub(channel)
        answer = stub.StartCascade(ls.StartCascadeRequest(), metadata=[("x-codeium-csrf-token", TOKEN)])
        return str(answer.cascade_id)


def _poll_error(fake: FakeLSThread, cascade_id: str) -> tuple[grpc.StatusCode, str] | None:
    with grpc.insecure_channel(fake.address) as channel:
        stub = ls_grpc.LanguageServerServiceStub(channel)
        try:
            stub.GetCascadeTrajectory(
                ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id), metadata=[("x-codeium-csrf-token", TOKEN)]
            )
        except grpc.RpcError as exc:
            return exc.code(), exc.details()
        return None
