"""Figures for the engine core: prompt build cost over history length, and the pool at scale.

    python benchmarks/bench_engine.py

Prints the time to build a Cascade prompt for 100, 1,000 and 10,000 turns (every tenth user turn
carries a small PNG; the 600 KB history budget applies) and the pool's check-in/check-out cost
with 10,000 entries, with the per-turn / per-entry cost so linear growth is visible.
"""

from __future__ import annotations

import base64
import io
import logging
import statistics
import time

from PIL import Image

from engine.config import HistoryImageLimits
from engine.images import ImageSettings
from engine.messages import Message
from engine.metrics import ImageHistoryMetrics
from engine.pool import ConversationPool, PoolEntry
from engine.prompt import build_cascade_prompt


def _png(seed: int) -> str:
    image = Image.new("RGB", (16, 16), ((seed * 37) % 256, (seed * 91) % 256, (seed * 13) % 256))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode("ascii")


def conversation(turns: int) -> list[Message]:
    messages = [Message("system", "You are a careful assistant.")]
    for i in range(turns):
        content: object = f"turn {i}: " + "lorem ipsum dolor sit amet " * 4
        if i % 10 == 0:
            content = [
                {"type": "text", "text": str(content)},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_png(i)}"}},
            ]
        messages.append(Message("user", content))  # type: ignore[arg-type]
        messages.append(Message("assistant", f"answer {i} " + "consectetur adipiscing " * 4))
    messages.append(Message("user", "and now?"))
    return messages


def bench_prompt(turns: int, rounds: int = 5) -> float:
    messages = conversation(turns)
    env = {"CASCADE_MAX_HISTORY_BYTES": "600000"}
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        build_cascade_prompt(
            messages,
            model_uid="claude-sonnet-4-6",
            limits=HistoryImageLimits.from_env(env),
            image_settings=ImageSettings.from_env(env),
            fetcher=None,
            env=env,
            metrics=ImageHistoryMetrics(),
        )
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bench_pool(entries: int) -> tuple[float, float]:
    pool = ConversationPool(max_entries=entries)
    started = time.perf_counter()
    for i in range(entries):
        pool.checkin(f"fp-{i}", PoolEntry(cascade_id=f"c{i}", step_offset=i, generator_offset=i))
    checkin = time.perf_counter() - started
    started = time.perf_counter()
    for i in range(entries):
        pool.checkout(f"fp-{i}")
    checkout = time.perf_counter() - started
    return checkin, checkout


def main() -> None:
    logging.getLogger("engine").setLevel(logging.ERROR)  # the per-request drop line would flood the figures
    print("prompt build (600 KB budget, a PNG every 10th user turn):")
    for turns in (100, 1_000, 10_000):
        seconds = bench_prompt(turns)
        print(f"  {turns:>6} turns: {seconds * 1000:8.1f} ms  ({seconds / turns * 1e6:6.1f} us per turn)")
    print("pool:")
    for entries in (1_000, 10_000):
        checkin, checkout = bench_pool(entries)
        print(
            f"  {entries:>6} entries: check-in {checkin * 1000:7.1f} ms ({checkin / entries * 1e6:5.1f} us each), "
            f"check-out {checkout * 1000:7.1f} ms ({checkout / entries * 1e6:5.1f} us each)"
        )


if __name__ == "__main__":
    main()
