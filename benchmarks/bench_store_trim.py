"""Figures for the response store's trimming (engine/store/trim.py) under a 400 KB budget.

    python benchmarks/bench_store_trim.py [--runs N]

The budget is ``RESPONSE_STORE_MAX_BYTES=400k``: ``max_entry_bytes`` 102 400 and ``max_messages`` 400.
Each case builds its conversation once, then times ``trim_for_store`` (best of ``--runs``) and measures
its peak allocation with tracemalloc in one more run. Prints, per case, the time, the cost per MB of
payload (flat or falling per MB means linear growth or better), the peak memory, and what the trim did:

- JSON tool-call arguments of 1, 10 and 50 MB (replaced whole, one pass);
- 10 MB of non-ASCII JSON arguments, BMP-only and astral (the UTF-16 length has to be counted);
- a non-JSON string of 1, 10 and 50 MB, ASCII and non-ASCII (halved pass after pass);
- 10,000 messages: the count stage (400 cap) followed by the byte stage.

A check line fails (exit 1) when a trimmed conversation is still over the budget or a stored JSON
``arguments`` value does not parse.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.store import TrimOutcome, approx_bytes, trim_for_store

MB = 1024 * 1024
MAX_ENTRY_BYTES = max(64 * 1024, 400 * 1024 // 4)
MAX_MESSAGES = 400

Conversation = list[dict[str, Any]]


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], Conversation]


def _tool_call(arguments: str) -> Conversation:
    return [
        {"role": "system", "content": "You write files."},
        {"role": "user", "content": "write /tmp/a"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "write_file", "arguments": arguments}}
            ],
        },
    ]


def _json_arguments(chars: int, fill: str = "x") -> str:
    # Built by concatenation: json.dumps of a 50 MB string would dominate the setup, not the trim.
    return '{"path":"/tmp/a","content":"' + fill * (chars // len(fill)) + '"}'


def _plain(chars: int, fill: str = "x") -> Conversation:
    return [{"role": "user", "content": "read this"}, {"role": "assistant", "content": fill * (chars // len(fill))}]


def _many_messages(count: int) -> Conversation:
    messages: Conversation = [{"role": "system", "content": "You are a careful assistant."}]
    for i in range(count - 1):
        role = "user" if i % 2 else "assistant"
        messages.append({"role": role, "content": [{"type": "text", "text": f"turn {i} " + "lorem ipsum " * 40}]})
    return messages


CASES = (
    Case("JSON arguments, 1 MB", lambda: _tool_call(_json_arguments(MB))),
    Case("JSON arguments, 10 MB", lambda: _tool_call(_json_arguments(10 * MB))),
    Case("JSON arguments, 50 MB", lambda: _tool_call(_json_arguments(50 * MB))),
    Case("JSON arguments, 10 MB non-ASCII (é)", lambda: _tool_call(_json_arguments(10 * MB, "é"))),
    Case("JSON arguments, 10 MB astral (emoji)", lambda: _tool_call(_json_arguments(10 * MB, "😀"))),
    Case("plain string, 1 MB", lambda: _plain(MB)),
    Case("plain string, 10 MB", lambda: _plain(10 * MB)),
    Case("plain string, 50 MB", lambda: _plain(50 * MB)),
    Case("plain string, 10 MB non-ASCII (é)", lambda: _plain(10 * MB, "é")),
    Case("plain string, 10 MB astral (emoji)", lambda: _plain(10 * MB, "😀")),
    Case("10,000 messages (count + byte stage)", lambda: _many_messages(10_000)),
)


def _payload_mb(node: Any) -> float:
    """Millions of characters of text in ``node`` (MB as the case names count them)."""
    if isinstance(node, str):
        return len(node) / MB
    if isinstance(node, list):
        return sum(_payload_mb(item) for item in node)
    if isinstance(node, dict):
        return sum(_payload_mb(item) for item in node.values())
    return 0.0


def _trim(messages: Conversation) -> TrimOutcome:
    return trim_for_store(messages, max_messages=MAX_MESSAGES, max_entry_bytes=MAX_ENTRY_BYTES)


def _check(case: Case, outcome: TrimOutcome) -> list[str]:
    failures = []
    if approx_bytes(outcome.messages) > MAX_ENTRY_BYTES:
        failures.append(f"{case.name}: stored {approx_bytes(outcome.messages)} bytes, over {MAX_ENTRY_BYTES}")
    for message in outcome.messages:
        for call in message.get("tool_calls") or []:
            try:
                json.loads(call["function"]["arguments"])
            except ValueError:
                failures.append(f"{case.name}: stored arguments do not parse")
    return failures


def bench(case: Case, runs: int) -> tuple[float, float, int, TrimOutcome]:
    messages = case.build()
    payload = _payload_mb(messages)
    best = float("inf")
    outcome = _trim(messages)
    for _ in range(runs):
        started = time.perf_counter()
        outcome = _trim(messages)
        best = min(best, time.perf_counter() - started)
    tracemalloc.start()
    _trim(messages)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return best, payload, peak, outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="timed runs per case; the best is reported")
    args = parser.parse_args()
    logging.getLogger("engine").setLevel(logging.ERROR)  # the per-trim drop lines would flood the figures

    print(f"trim_for_store, max_entry_bytes={MAX_ENTRY_BYTES}, max_messages={MAX_MESSAGES}, best of {args.runs}:")
    print(f"  {'case':<40} {'time':>10} {'per MB':>11} {'peak mem':>10}  what it did")
    failures: list[str] = []
    for case in CASES:
        seconds, payload, peak, outcome = bench(case, args.runs)
        failures += _check(case, outcome)
        did = (
            f"dropped {outcome.dropped_by_count}+{outcome.dropped_by_bytes}, {outcome.rewritten_slots} pass(es), "
            f"{approx_bytes(outcome.messages)} B stored"
        )
        print(
            f"  {case.name:<40} {seconds * 1000:8.2f} ms {seconds * 1000 / payload:8.3f} ms {peak / MB:7.2f} MB  {did}"
        )
    if failures:
        for line in failures:
            print(f"check: FAILED {line}")
        return 1
    print("check: every trimmed conversation fits the budget and its stored arguments parse")
    return 0


if __name__ == "__main__":
    sys.exit(main())
