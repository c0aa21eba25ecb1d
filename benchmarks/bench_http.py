"""Figures for the engine's HTTP front under concurrency, with a cross-talk check.

    python benchmarks/bench_http.py [--concurrency N] [--rounds N]

Serves the reference gateway in-process (uvicorn on 127.0.0.1, 2 ms polling) in front of a fake LS
and drives ``--concurrency`` streaming chat completions at once with the official
``openai.AsyncOpenAI`` client, ``--rounds`` times. Every request has its own prompt carrying a
unique token, and the fake answers with its default (unscripted) turn, a pure function of the
prompt it received. Prints:

- total wall time of the concurrent rounds, throughput (turns/s), p50/p99 latency per turn;
- the engine's own overhead per turn: sequential turns through the HTTP front against the same
  turns (the very prompt texts the engine sent) driven directly with ``CascadeClient.run_turn``;
- the cross-talk check: each streamed answer must equal ``default_answer`` of the one
  SendUserCascadeMessage that carried its token. A mismatch prints a failure line and exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import re
import statistics
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any

import openai

from engine.cascade import CascadeClient, CascadeTurnRequest, LsEndpoint, ModelRef, PollSettings
from engine.http import DEFAULT_MAX_CONCURRENT_TURNS, Gateway, GatewayConfig, HttpSettings, ServedGateway
from fakels.scenario import default_answer
from fakels.server import FakeLSThread

CSRF = "bench-http-csrf"
API_KEY = "sk-bench-http"
UPSTREAM_KEY = "bench-upstream-key"
MODEL = "claude-sonnet-4-6"
POLL = PollSettings(poll_interval_s=0.002)
SEQUENTIAL_TURNS = 10
TOKEN_RE = re.compile(r"xtalk-[0-9a-f]{32}")


@dataclass(frozen=True)
class Answer:
    token: str
    text: str
    seconds: float
    error: str | None = None


def _prompt(token: str, index: int) -> str:
    # Distinct in content and length, so two answers can never be equal by accident.
    return f"Request {index} ({token}): " + "please sum these numbers " * (1 + index % 7) + f"{index} and {index * 3}."


async def _stream_turn(client: openai.AsyncOpenAI, index: int) -> Answer:
    token = f"xtalk-{uuid.uuid4().hex}"
    started = time.perf_counter()
    try:
        stream = await client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": _prompt(token, index)}], stream=True
        )
        parts = [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
    except openai.OpenAIError as exc:
        return Answer(token, "", time.perf_counter() - started, error=f"{type(exc).__name__}: {exc}")
    return Answer(token, "".join(parts), time.perf_counter() - started)


def _send_requests(fake: FakeLSThread) -> list[dict[str, Any]]:
    return fake.journal.requests("SendUserCascadeMessage")


def _sends_by_token(requests: list[dict[str, Any]]) -> dict[str, list[tuple[str, int]]]:
    """The (prompt, image count) of every Send in ``requests``, under each token its prompt carries."""
    found: dict[str, list[tuple[str, int]]] = {}
    for request in requests:
        prompt = "".join(item.get("text", "") for item in request.get("items", []))
        for token in set(TOKEN_RE.findall(prompt)):
            found.setdefault(token, []).append((prompt, len(request.get("images", []))))
    return found


def cross_talk_failures(requests: list[dict[str, Any]], answers: list[Answer]) -> list[str]:
    """Why each answer does not match the default answer of the one Send among ``requests`` that
    carried its token (empty: every answer matches its own prompt)."""
    sends = _sends_by_token(requests)
    failures = []
    for answer in answers:
        carried = sends.get(answer.token, [])
        if answer.error is not None:
            failures.append(f"{answer.token}: request failed: {answer.error}")
        elif len(carried) != 1:
            failures.append(f"{answer.token}: {len(carried)} Sends carried this token (expected 1)")
        elif answer.text != default_answer(*carried[0]):
            failures.append(
                f"{answer.token}: got {answer.text!r}, its prompt's answer is {default_answer(*carried[0])!r}"
            )
    return failures


def _percentile(values: list[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def bench_direct(fake: FakeLSThread, prompts: list[str]) -> list[float]:
    """The same turns (the engine's own prompt texts) driven with CascadeClient.run_turn, one at a time."""
    times = []
    with CascadeClient(LsEndpoint(fake.address, CSRF), poll=POLL) as client:
        client.warm_up(UPSTREAM_KEY)
        for prompt in prompts:
            request = CascadeTurnRequest(api_key=UPSTREAM_KEY, model=ModelRef(uid=MODEL), text=prompt)
            started = time.perf_counter()
            result = client.run_turn(request)
            times.append(time.perf_counter() - started)
            if result.text != default_answer(prompt):
                raise SystemExit(f"direct turn answered {result.text!r}, expected {default_answer(prompt)!r}")
    return times


async def run(concurrency: int, rounds: int) -> int:
    with FakeLSThread(csrf_token=CSRF) as fake:
        http = HttpSettings(
            api_keys={API_KEY: "bench-caller"}, max_concurrent_turns=max(DEFAULT_MAX_CONCURRENT_TURNS, concurrency)
        )
        config = GatewayConfig(
            ls_address=fake.address, csrf_token=CSRF, http=http, upstream_api_key=UPSTREAM_KEY, poll=POLL
        )
        with ServedGateway(Gateway(config)) as served:
            client = openai.AsyncOpenAI(base_url=served.url + "/v1", api_key=API_KEY, max_retries=0, timeout=60)
            try:
                await _stream_turn(client, -1)  # warm-up: LS session, connections, imports

                mark = len(_send_requests(fake))
                sequential = [await _stream_turn(client, i) for i in range(SEQUENTIAL_TURNS)]
                sequential_sends = _send_requests(fake)[mark:]
                # Checked now: the direct turns below replay these very prompts.
                failures = cross_talk_failures(sequential_sends, sequential)
                engine_prompts = [
                    "".join(item.get("text", "") for item in r.get("items", [])) for r in sequential_sends
                ]
                direct = bench_direct(fake, engine_prompts)

                mark = len(_send_requests(fake))
                answers: list[Answer] = []
                walls: list[float] = []
                for _ in range(rounds):
                    started = time.perf_counter()
                    answers += await asyncio.gather(*(_stream_turn(client, i) for i in range(concurrency)))
                    walls.append(time.perf_counter() - started)
            finally:
                await client.close()
        failures += cross_talk_failures(_send_requests(fake)[mark:], answers)

    turns = concurrency * rounds
    wall = sum(walls)
    latencies = [a.seconds * 1000 for a in answers]
    http_ms = statistics.median(a.seconds for a in sequential) * 1000
    direct_ms = statistics.median(direct) * 1000
    print(f"{rounds} rounds x {concurrency} concurrent streaming turns (AsyncOpenAI, 2 ms polling):")
    print(f"  total wall time: {wall:.2f} s  (rounds: {', '.join(f'{w:.2f}' for w in walls)} s)")
    print(f"  throughput: {turns / wall:.1f} turns/s")
    print(f"  latency per turn: p50 {_percentile(latencies, 50):.1f} ms, p99 {_percentile(latencies, 99):.1f} ms")
    print(f"engine overhead per turn, sequential medians over {SEQUENTIAL_TURNS} turns:")
    print(f"  HTTP front {http_ms:.1f} ms vs direct CascadeClient.run_turn {direct_ms:.1f} ms")
    print(f"  overhead {http_ms - direct_ms:+.1f} ms per turn, ratio {http_ms / direct_ms:.2f}x")
    checked = len(answers) + len(sequential)
    if failures:
        print(f"cross-talk: FAILED ({len(failures)} of {checked} answers do not match their prompt)")
        for line in failures[:10]:
            print(f"  {line}")
        return 1
    split = f"{len(answers)} concurrent, {len(sequential)} sequential"
    print(f"cross-talk: none ({checked}/{checked} answers match their prompt; {split})")
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.concurrency < 1 or args.rounds < 1:
        parser.error("--concurrency and --rounds must be at least 1")
    logging.getLogger("engine").setLevel(logging.ERROR)  # the per-turn usage lines would flood the figures
    sys.exit(asyncio.run(run(args.concurrency, args.rounds)))


if __name__ == "__main__":
    main()
