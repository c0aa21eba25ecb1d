"""Cascade ids are never handed out twice, as the real LS's UUID-like ids: not after a reset, not
after a scenario load, not by another server; a Send to an id from before a reset is not-found."""

from __future__ import annotations

import re

import grpc
import pytest

from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.scenario import Scenario
from fakels.server import FakeLSThread

Metadata = list[tuple[str, str]]
_META = common.Metadata(session_id="session-1", ide_name="windsurf")


def _start(stub: ls_grpc.LanguageServerServiceStub, csrf: Metadata) -> str:
    cascade_id: str = stub.StartCascade(ls.StartCascadeRequest(metadata=_META), metadata=csrf).cascade_id
    return cascade_id


def test_ids_survive_resets_and_scenario_loads(
    fake_ls: FakeLSThread, stub: ls_grpc.LanguageServerServiceStub, csrf: Metadata
) -> None:
    first = _start(stub, csrf)
    fake_ls.reset()
    second = _start(stub, csrf)
    fake_ls.load_scenario(Scenario())
    third = _start(stub, csrf)
    assert len({first, second, third}) == 3
    prefix = first.rsplit("-", 1)[0]
    assert [first, second, third] == [f"{prefix}-0001", f"{prefix}-0002", f"{prefix}-0003"]
    assert re.fullmatch(r"fakels-cascade-[0-9a-f]{8}", prefix), prefix


def test_a_send_to_an_id_from_before_a_reset_is_not_found(
    fake_ls: FakeLSThread, stub: ls_grpc.LanguageServerServiceStub, csrf: Metadata
) -> None:
    stale = _start(stub, csrf)
    fake_ls.reset()
    stub.InitializeCascadePanelState(ls.InitializeCascadePanelStateRequest(metadata=_META), metadata=csrf)
    send = ls.SendUserCascadeMessageRequest(cascade_id=stale, items=[common.TextOrScopeItem(text="hi")], metadata=_META)
    with pytest.raises(grpc.RpcError) as caught:
        stub.SendUserCascadeMessage(send, metadata=csrf)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    # The text real clients classify as an expired cascade (wire.md section 4): a fresh restart.
    assert caught.value.details() == f"not_found: cascade {stale!r} not found"


def test_two_servers_hand_out_distinct_ids(csrf: Metadata) -> None:
    token = dict(csrf)["x-codeium-csrf-token"]
    ids = []
    for _ in range(2):
        with FakeLSThread(csrf_token=token) as fake, grpc.insecure_channel(fake.address) as channel:
            ids.append(_start(ls_grpc.LanguageServerServiceStub(channel), csrf))
    assert ids[0] != ids[1]


def test_a_given_prefix_makes_ids_predictable(csrf: Metadata) -> None:
    token = dict(csrf)["x-codeium-csrf-token"]
    with FakeLSThread(csrf_token=token, cascade_id_prefix="run1") as fake, grpc.insecure_channel(fake.address) as ch:
        stub = ls_grpc.LanguageServerServiceStub(ch)
        assert [_start(stub, csrf), _start(stub, csrf)] == ["fakels-cascade-run1-0001", "fakels-cascade-run1-0002"]
