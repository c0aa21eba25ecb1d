"""``/v1/responses``: ``POST`` plays one turn (non-stream only), continuing a stored conversation with
``previous_response_id`` (replayed as history on a fresh cascade, with the current request's
``instructions`` only; a function call the client sends again that the chain already has, by its
``call_id``, is not added twice); ``GET`` and ``DELETE`` of a stored response (full personality,
owner only). ``GET .../input_items`` is not served."""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import Any

from tests.support.foreigngw.entries import input_items, responses_conversation
from tests.support.foreigngw.http_io import Reply, bad_request, not_implemented, response_not_found
from tests.support.foreigngw.knobs import responses_knobs
from tests.support.foreigngw.markup import parse_tools
from tests.support.foreigngw.runner import Answer, Runner, TurnRequest
from tests.support.foreigngw.settings import Settings
from tests.support.foreigngw.store import ResponseStore
from tests.support.foreigngw.structured import responses_schema

_FALSE_WORDS = frozenset({"false", "0", "no", "off", ""})


def wants_store(value: Any) -> bool:
    """``store``: absent or true keeps the response; false, null, 0 and "false"-like words do not."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str):
        return value.strip().lower() not in _FALSE_WORDS
    return True


def _call_id(item: Mapping[str, Any]) -> str:
    return str(item.get("call_id") or "") if item.get("type") == "function_call" else ""


def new_items(chain: list[dict[str, Any]], received: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``received`` without the function calls the chain already has (same ``call_id``): clients send
    back the calls they answer, which the stored chain holds from its output."""
    known = {call_id for call_id in map(_call_id, chain) if call_id}
    return [item for item in received if _call_id(item) not in known]


def output_items(answer: Answer) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if answer.content or not answer.calls:
        items.append(
            {
                "type": "message",
                "id": f"msg_{secrets.token_hex(12)}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": answer.content, "annotations": []}],
            }
        )
    for call in answer.calls:
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{secrets.token_hex(12)}",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
                "status": "completed",
            }
        )
    return items


def handle_post(
    settings: Settings, runner: Runner, store: ResponseStore | None, caller: str | None, body: Any, reply: Reply
) -> None:
    """``caller`` None: an anonymous caller of the scoped personality, whose turns are never stored."""
    if not isinstance(body, Mapping):
        raise bad_request("the request body must be a JSON object")
    if body.get("stream") is True:
        raise bad_request(
            "stream: true is not supported on /v1/responses by this gateway; send stream: false",
            "unsupported_parameter",
            param="stream",
        )
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("model is required", param="model")
    previous = body.get("previous_response_id")
    chain: list[dict[str, Any]] = []
    # The defect previous-response-id-ignored: accepted, echoed, never looked up; the input is the conversation.
    if previous is not None and not settings.defect("previous-response-id-ignored"):
        stored = store.items(str(previous), caller) if store is not None and caller is not None else None
        if stored is None:
            raise response_not_found("previous_response_id")
        chain = stored
    received = new_items(chain, input_items(body.get("input")))
    tools = parse_tools(body.get("tools"))
    conversation = responses_conversation([*chain, *received], body.get("instructions"))
    if not settings.full and (tools or conversation.has_tool_traffic()):
        raise not_implemented()
    if conversation.current_index() < 0:
        raise bad_request("the conversation has no user message", param="input")
    schema = responses_schema(body.get("text"))
    knobs = responses_knobs(body)
    request = TurnRequest(caller, model, conversation, tools, schema, resumable=previous is None, knobs=knobs)
    answer = runner.run(request)
    output = output_items(answer)
    keep = store is not None and caller is not None and wants_store(body.get("store", True))
    # A turn the wait cap ended is incomplete (as chat's finish_reason length), here and when read back.
    cut = answer.cut
    response = {
        "id": f"resp_{secrets.token_hex(16)}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if cut else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
        "model": model,
        "output": output,
        "previous_response_id": previous,
        "store": keep,
        "usage": {
            "input_tokens": answer.prompt_tokens,
            "input_tokens_details": {"cached_tokens": answer.cached_tokens},
            "output_tokens": answer.completion_tokens,
            "total_tokens": answer.prompt_tokens + answer.completion_tokens,
        },
    }
    if keep and store is not None and caller is not None:
        kept = response
        if settings.defect("read-says-completed"):  # the stored body hard-codes its status
            kept = {**response, "status": "completed", "incomplete_details": None}
        store.put(str(response["id"]), caller, [*chain, *received, *output], kept)
    reply.json(200, response)


def handle_get(store: ResponseStore, caller: str | None, response_id: str, reply: Reply) -> None:
    response = store.response(response_id, caller) if caller is not None else None
    if response is None:
        raise response_not_found("response_id")
    reply.json(200, response)


def handle_delete(store: ResponseStore, caller: str | None, response_id: str, reply: Reply) -> None:
    if caller is None or not store.delete(response_id, caller):
        raise response_not_found("response_id")
    reply.json(200, {"id": response_id, "object": "response.deleted", "deleted": True})
