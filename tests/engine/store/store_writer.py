"""A writer for the SIGKILL durability test: puts entries into a SQLite response store until it is killed.

    python -m tests.engine.store.store_writer PATH START

Writes ``resp_<index>`` for index = START, START + 1, ... (every fourth iteration also reads the previous
entry back, so touches are in flight too) and prints ``committed <index>``, flushed, after each put returned,
i.e. after its transaction committed. The expected content of an entry is :func:`messages_for`.
"""

from __future__ import annotations

import hashlib
import itertools
import sys
from typing import Any

from engine.store import StoreLimits, open_store

#: Large enough that nothing is trimmed or evicted: every reported write must be found as written.
LIMITS = StoreLimits(max_entries=100_000, max_bytes=1024**3, entry_bytes=64 * 1024**2)


def entry_id(index: int) -> str:
    return f"resp_{index:08d}"


def owner_for(index: int) -> str:
    return f"api:k{index % 3}:user:u{index % 5}"


def messages_for(index: int) -> list[dict[str, Any]]:
    """A deterministic conversation of 1 KB to ~300 KB, with a tool call, so a torn row cannot pass for whole."""
    digest = hashlib.sha256(str(index).encode()).hexdigest()
    body = digest * (16 + (index * 977) % 4096)
    return [
        {"role": "system", "content": f"entry {index}"},
        {"role": "user", "content": [{"type": "text", "text": body}, {"type": "text", "text": "\u00e9\u4e2d"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"call_{index}", "type": "function", "function": {"name": "f", "arguments": f'{{"i":{index}}}'}}
            ],
        },
        {"role": "tool", "tool_call_id": f"call_{index}", "content": digest[::-1]},
    ]


def main(argv: list[str]) -> None:
    path, start = argv[0], int(argv[1])
    store = open_store(f"sqlite:{path}", LIMITS)
    for index in itertools.count(start):
        store.put(entry_id(index), messages_for(index), owner_for(index), model="m", status="completed")
        if index % 4 == 3:
            store.get(entry_id(index - 1), owner_for(index - 1))
        print(f"committed {index}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
