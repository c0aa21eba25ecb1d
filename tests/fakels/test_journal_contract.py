"""The journal as other processes and test helpers read it: the JSONL line of an entry (every key),
a journal file in a folder that does not exist yet, clear(), the requests() filter and the text of
last() when nothing matches."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from fakels.decoder import UnknownField
from fakels.journal import Journal, JournalEntry, read_jsonl
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.rpcs import SERVICE_NAME
from tests.fakels.core_support import SESSION, CoreCalls

START_PATH = f"/{SERVICE_NAME}/StartCascade"
STATUS = "GetCascadeTrajectory"


def _entry(seq: int, method: str = "Heartbeat", **changes: object) -> JournalEntry:
    fields: dict[str, object] = {
        "seq": seq,
        "time": 1.0,
        "transport": "grpc",
        "method": method,
        "path": f"/{SERVICE_NAME}/{method}",
        "headers": {},
        "raw": b"",
        "request": {},
    }
    fields.update(changes)
    return JournalEntry(**fields)  # type: ignore[arg-type]


def test_entry_to_json_has_every_key() -> None:
    entry = JournalEntry(
        seq=7,
        time=42.25,
        transport="connect",
        method="GetCascadeTrajectory",
        path="/some/path",
        headers={"user-agent": "test"},
        raw=b"\x0a\x01x\xa0\x06\x01",
        request={"cascade_id": "x"},
        unknown_fields=(UnknownField(path="<root>", number=100, wire_type=0, value=1),),
        status="UNAVAILABLE",
        error="try again later",
        response={"status": "CASCADE_RUN_STATUS_IDLE"},
        notes=("first note", "second note"),
    )
    assert entry.to_json() == {
        "seq": 7,
        "time": 42.25,
        "transport": "connect",
        "method": "GetCascadeTrajectory",
        "path": "/some/path",
        "headers": {"user-agent": "test"},
        "raw_b64": "CgF4oAYB",
        "raw_len": 6,
        "request": {"cascade_id": "x"},
        "unknown_fields": [{"path": "<root>", "number": 100, "wire_type": "varint", "value": 1}],
        "status": "UNAVAILABLE",
        "error": "try again later",
        "response": {"status": "CASCADE_RUN_STATUS_IDLE"},
        "notes": ["first note", "second note"],
    }


def test_golden_jsonl_line_of_a_call_in_a_new_nested_folder(tmp_path: Path) -> None:
    path = tmp_path / "not" / "there" / "journal.jsonl"
    with CoreCalls(journal=Journal(path)) as lsc:
        lsc.clock.advance(12.5)
        request = ls.StartCascadeRequest(metadata=common.Metadata(session_id=SESSION))
        reply = lsc.raw(START_PATH, [request.SerializeToString()], headers={"user-agent": "golden/1"})
    cascade_id = ls.StartCascadeResponse.FromString(reply.payloads[0]).cascade_id
    assert cascade_id == "fakels-cascade-test-0001"
    raw = request.SerializeToString()
    assert read_jsonl(path) == [
        {
            "seq": 0,
            "time": 12.5,
            "transport": "grpc",
            "method": "StartCascade",
            "path": START_PATH,
            "headers": {"user-agent": "golden/1"},
            "raw_b64": base64.b64encode(raw).decode("ascii"),
            "raw_len": len(raw),
            "request": {"metadata": {"session_id": SESSION}},
            "unknown_fields": [],
            "status": "OK",
            "error": "",
            "response": {"cascade_id": cascade_id},
            "notes": [],
        }
    ]


def test_a_new_journal_truncates_its_file(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_text('{"stale": true}\n', encoding="utf-8")
    journal = Journal(path)
    assert path.read_text(encoding="utf-8") == ""
    assert len(journal) == 0


def test_clear_empties_memory_and_file(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal = Journal(path)
    for method in ("StartCascade", STATUS):
        journal.append(_entry(-1, method=method))
    assert len(read_jsonl(path)) == 2

    journal.clear()
    assert len(journal) == 0
    assert path.read_text(encoding="utf-8") == ""

    again = journal.append(_entry(-1, method="GetUserStatus"))
    assert again.seq == 0
    assert [(line["seq"], line["method"]) for line in read_jsonl(path)] == [(0, "GetUserStatus")]


def test_requests_lists_only_accepted_decoded_calls() -> None:
    with CoreCalls() as lsc:
        cascade_id = lsc.start()
        unknown = lsc.call(STATUS, ls.GetCascadeTrajectoryRequest(cascade_id="no-such-cascade"))
        garbage = lsc.raw(f"/{SERVICE_NAME}/{STATUS}", [b"\xff"])
        good = lsc.call(STATUS, ls.GetCascadeTrajectoryRequest(cascade_id=cascade_id))
        journal = lsc.journal

    assert (unknown.code.name, garbage.code.name, good.code.name) == ("NOT_FOUND", "INVALID_ARGUMENT", "OK")
    # Three calls journaled: one rejected but decoded, one undecodable, one accepted.
    assert [(e.status, e.request) for e in journal.entries(STATUS)] == [
        ("NOT_FOUND", {"cascade_id": "no-such-cascade"}),
        ("INVALID_ARGUMENT", None),
        ("OK", {"cascade_id": cascade_id}),
    ]
    assert journal.requests(STATUS) == [{"cascade_id": cascade_id}]
    assert journal.requests("StartCascade") == [{"metadata": {"session_id": SESSION}}]
    assert journal.requests("GetUserStatus") == []


def test_last_names_the_methods_seen_when_nothing_matches() -> None:
    journal = Journal()
    with pytest.raises(LookupError) as empty:
        journal.last("GetUserStatus")
    assert str(empty.value) == "no GetUserStatus request in the journal (methods seen: none)"

    for method in ("StartCascade", STATUS, "StartCascade"):
        journal.append(_entry(-1, method=method))
    with pytest.raises(LookupError) as missing:
        journal.last("GetUserStatus")
    assert str(missing.value) == (
        "no GetUserStatus request in the journal (methods seen: ['GetCascadeTrajectory', 'StartCascade'])"
    )
    assert journal.last("StartCascade").seq == 2
