"""``--store sqlite:PATH`` under SIGKILL (issue 10 §3): the serve process is killed in the middle
of a burst of Responses writes; the file then opens, and every response a client got an answer for
is in it, intact. A kill loses at most the writes in flight, never the store."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.store import StoreLimits, open_store
from fakels.server import FakeLSThread
from tests.engine.http.conftest import CSRF, KEY_A, MODEL, start_serve

_WRITERS = 4
_OWNER = "caller-a"


def _burst(url: str, answered: list[dict[str, Any]], stop: threading.Event, lock: threading.Lock) -> None:
    """POST /v1/responses until ``stop`` (or the server dies), keeping every answered response."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY_A}"}, timeout=30) as client:
        index = 0
        while not stop.is_set():
            index += 1
            body = {"model": MODEL, "input": f"write {threading.get_ident()}-{index} " + "é" * 2000}
            try:
                response = client.post("/v1/responses", json=body)
            except httpx.HTTPError:
                return  # killed mid-request: that write may or may not be in the file
            if response.status_code == 200:
                with lock:
                    answered.append(response.json())


@pytest.mark.parametrize("kill_after", [1, 6, 15])
def test_a_killed_server_loses_at_most_the_writes_in_flight(
    fake: FakeLSThread, tmp_path: Path, kill_after: int
) -> None:
    path = tmp_path / "responses.db"
    args = ["--port", "0", "--ls-address", fake.address, "--csrf-token", CSRF, "--api-key", f"{KEY_A}={_OWNER}"]
    proc, url = start_serve([*args, "--store", f"sqlite:{path}", "--poll-interval-s", "0.005"])
    answered: list[dict[str, Any]] = []
    stop, lock = threading.Event(), threading.Lock()
    writers = [threading.Thread(target=_burst, args=(url, answered, stop, lock)) for _ in range(_WRITERS)]
    try:
        for writer in writers:
            writer.start()
        while True:
            with lock:
                if len(answered) >= kill_after:
                    break
            assert proc.poll() is None, "the server died on its own"
            stop.wait(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
        for writer in writers:
            writer.join(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    with lock:
        kept = list(answered)
    store = open_store(f"sqlite:{path}", StoreLimits())
    try:
        for response in kept:
            lookup = store.get(response["id"], _OWNER)
            assert lookup.entry is not None, f"{response['id']} was answered but is not in the file"
            output = [item for item in response["output"] if item["type"] != "reasoning"]  # never stored
            assert lookup.entry.messages[-len(output) :] == output
        assert store.stats()["size"] >= len(kept)
    finally:
        store.close()
