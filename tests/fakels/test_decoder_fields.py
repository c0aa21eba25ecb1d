"""Decoder corners the fakels protocol does not reach on its own: bytes fields (no language-server
message has one, but decode() and message_to_dict() are generic over message types) and unknown
fields sent group-encoded, which the journal must report with their inner fields."""

from __future__ import annotations

from google.protobuf import any_pb2, wrappers_pb2

from fakels.decoder import UnknownField, decode, message_to_dict
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.rpcs import SERVICE_NAME
from tests.fakels.core_support import SESSION, CoreCalls

# Field 50 as a group (start-group tag 50<<3|3, end-group tag 50<<3|4) holding a varint and a string.
GROUP_50 = b"\x93\x03" + b"\x08\x05" + b"\x12\x02ab" + b"\x94\x03"


def test_bytes_fields_decode_as_base64() -> None:
    raw = any_pb2.Any(type_url="type.example/x", value=b"\x00\xff\x10").SerializeToString()
    decoded = decode(any_pb2.Any, raw)
    assert decoded.fields == {"type_url": "type.example/x", "value": "AP8Q"}
    assert decoded.unknown == ()
    assert message_to_dict(wrappers_pb2.BytesValue(value=bytes(range(250, 256)))) == {"value": "+vv8/f7/"}


def test_group_encoded_unknown_field_keeps_its_inner_fields() -> None:
    decoded = decode(ls.GetCascadeTrajectoryRequest, b"\x0a\x03abc" + GROUP_50)
    assert decoded.fields == {"cascade_id": "abc"}
    assert decoded.unknown == (
        UnknownField(
            path="<root>",
            number=50,
            wire_type=3,
            value=[{"number": 1, "wire_type": 0, "value": 5}, {"number": 2, "wire_type": 2, "value": {"hex": "6162"}}],
        ),
    )


def test_journal_reports_a_nested_group_unknown_field() -> None:
    raw = ls.StartCascadeRequest(metadata=common.Metadata(session_id=SESSION)).SerializeToString()
    # The same group inside metadata (field 1): a second length-delimited metadata merges into the first.
    nested = b"\x0a" + bytes([len(GROUP_50)]) + GROUP_50
    with CoreCalls() as lsc:
        reply = lsc.raw(f"/{SERVICE_NAME}/StartCascade", [raw + nested])
        entry = lsc.journal.last("StartCascade")
    assert reply.ok
    assert entry.request == {"metadata": {"session_id": SESSION}}
    assert [u.to_json() for u in entry.unknown_fields] == [
        {
            "path": "metadata",
            "number": 50,
            "wire_type": "start-group",
            "value": [
                {"number": 1, "wire_type": 0, "value": 5},
                {"number": 2, "wire_type": 2, "value": {"hex": "6162"}},
            ],
        }
    ]
