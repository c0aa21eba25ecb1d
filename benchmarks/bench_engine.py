"""Figures for the engine core: prompt build cost over history length, the pool at scale, and tool markup.

    python benchmarks/bench_engine.py

Prints the time to build a Cascade prompt for 100, 1,000 and 10,000 turns (every tenth user turn
carries a small PNG; the 600 KB history budget applies) and the pool's check-in/check-out cost
with 10,000 entries (and with a TTL that expires entries as check-ins go on), and the tool-markup
parser over many blocks in one text and over megabytes of arguments fed in 1,000-character
deltas, each with the cost per unit so linear growth is visible.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import statistics
import time

from PIL import Image

from engine.chat import ToolMarkupParser, parse_tool_markup
from engine.config import HistoryImageLimits
from engine.media import ImageSettings
from engine.prompt import ImageHistoryMetrics, Message, build_cascade_prompt
from engine.reuse import ConversationPool, PoolEntry


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


def bench_pool_expiring(entries: int) -> float:
    now = [0.0]
    pool = ConversationPool(ttl_s=10, max_entries=entries * 10, clock=lambda: now[0])
    started = time.perf_counter()
    for i in range(entries):
        now[0] += 0.002  # one check-in per 2 ms: the 10 s TTL keeps 5,000 and expires the rest
        pool.checkin(f"fp-{i}", PoolEntry(cascade_id=f"c{i}", step_offset=i, generator_offset=i))
    return time.perf_counter() - started


def bench_markup_blocks(blocks: int) -> float:
    text = "<tool_call>bad</tool_call>" * blocks
    started = time.perf_counter()
    parse_tool_markup(text)
    return time.perf_counter() - started


def bench_markup_stream(megabytes: int) -> float:
    arguments = {"blob": "x" * (megabytes * 1_000_000)}
    text = "<tool_call>" + json.dumps({"name": "upload", "arguments": arguments}) + "</tool_call>"
    parser = ToolMarkupParser("bench")
    started = time.perf_counter()
    for i in range(0, len(text), 1000):
        parser.feed(text[i : i + 1000])
    parser.finish()
    return time.perf_counter() - started


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
    for entries in (10_000, 100_000):
        seconds = bench_pool_expiring(entries)
        print(f"  {entries:>6} check-ins, 10 s TTL: {seconds * 1000:7.1f} ms ({seconds / entries * 1e6:5.1f} us each)")
    print("tool markup:")
    for blocks in (10_000, 100_000):
        seconds = bench_markup_blocks(blocks)
        print(
            f"  {blocks:>6} blocks in one text: {seconds * 1000:7.1f} ms ({seconds / blocks * 1e6:5.2f} us per block)"
        )
    for megabytes in (1, 5):
        seconds = bench_markup_stream(megabytes)
        per_mb = seconds / megabytes * 1000
        print(
            f"  {megabytes} MB of arguments, 1,000-character feeds: {seconds * 1000:7.1f} ms ({per_mb:6.1f} ms per MB)"
        )


if __name__ == "__main__":
    main()
