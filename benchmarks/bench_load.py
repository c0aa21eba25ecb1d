"""Load with faults: concurrent chat turns through the gateway mixed with garbage, then what is left.

    python benchmarks/bench_load.py [--quick] [--requests N] [--seed N]

Serves the reference gateway in-process (uvicorn on 127.0.0.1, 2 ms polling, ``max_body_bytes`` of
64 KiB) in front of a fake LS answering every turn with its generated default turn. A round fires
``--requests`` valid chat completions at once (alternately streamed and not, each prompt carrying a
unique tag) and, interleaved with them, the faults of ``_load_faults.py``: invalid JSON, oversized
bodies (declared and chunked), not-HTTP bytes, cut bodies and streams left mid-answer (FIN, RST) at
the gateway; garbage gRPC frames straight at the fake LS. Rounds, all identical, each ending with
the clients closed, a settling wait, the checks, then a reset of the fake (its journal keeps every
poll and its state every cascade: their growth is the fake's, printed, not the gateway's):

- warm-up: grows the pools that persist (anyio workers, this script's executor, grpc's threads);
  what is open once it settled is the baseline;
- rounds 1 and 2: the figures, the leak checks against the baseline, RSS;
- traced 1..k: the same with tracemalloc on (1 frame), so slower; k = ceil(500 / N) + 1, so that
  the gateway's bounded per-turn state (conversation pool, response cache, ledger rows: 500 each)
  turned over before the last two rounds are compared (an entry allocated before tracing began
  and replaced since would otherwise not count as freed).

Checked (any failure: its reasons, FAIL, exit status 1):

- every valid turn got 200 and the answer the fake's default turn gives for the prompt the engine
  sent; its tag is in exactly one accepted SendUserCascadeMessage (so are the cut streams' tags);
- every fault got its expected outcome; each journaled gRPC garbage left exactly one entry with
  its expected status; the fake rejected no call of the gateway; the fake still serves;
- after every round, within SETTLE_S: Python threads by name (a pool of POOLS may grow to its
  bound), native threads, open fds, tasks on the gateway's and on the fake's loop are back to the
  baseline;
- RSS after round 2 at most RSS_TOLERANCE above round 1; the traced heap (this script's own
  objects left out) after the last traced round at most TRACED_SLACK + TRACED_TOLERANCE_PER_TURN
  per valid turn above the round before.

What uvicorn and the engine log at WARNING and above is counted and printed, not checked.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import os
import random
import re
import sys
import threading
import time
import tracemalloc
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import openai
from _load_faults import (
    GARBAGE_MARK,
    GRPC_KINDS,
    HTTP_KINDS,
    FaultResult,
    Progress,
    ServerLog,
    fake_still_serves,
    grpc_fault,
    http_fault,
)
from openai.types.chat import ChatCompletionMessageParam

from engine.cascade import PollSettings
from engine.chat import DEFAULT_CACHE_MAX_ENTRIES, DEFAULT_MAX_ROWS
from engine.http import DEFAULT_MAX_CONCURRENT_TURNS, Gateway, GatewayConfig, HttpSettings, ServedGateway
from engine.reuse import DEFAULT_MAX_ENTRIES as POOL_MAX_ENTRIES
from fakels.journal import JournalEntry
from fakels.scenario import default_answer
from fakels.server import FakeLSThread

CSRF, API_KEY, MODEL = "bench-load-csrf", "sk-bench-load", "claude-sonnet-4-6"
POLL = PollSettings(poll_interval_s=0.002)
MAX_BODY = 64 * 1024
SETTLE_S = 15.0
MIB = 1024 * 1024
RSS_TOLERANCE = 16 * MIB
# Traced growth over a round once the gateway's bounded state is full: a slack for the tables that
# saw-tooth (the pool's lazily pruned expiry heap holds up to 2 x 500 + 64 entries; dicts and sets
# of 500 entries resize), plus an allowance per turn.
TRACED_SLACK = 256 * 1024
TRACED_TOLERANCE_PER_TURN = 1024
# The gateway's per-turn state is bounded: conversation pool, response cache and ledger rows.
STORE_CAP = max(POOL_MAX_ENTRIES, DEFAULT_CACHE_MAX_ENTRIES, DEFAULT_MAX_ROWS)
# Thread pools that persist once grown, and their bound: the gateway runs turns on anyio workers (at
# most max_concurrent_turns at once), this script its gRPC garbage on its loop's default executor.
POOLS = {"AnyIO worker thread": DEFAULT_MAX_CONCURRENT_TURNS, "asyncio_#": min(32, (os.cpu_count() or 1) + 4)}
TAG_RE = re.compile(r"load-[0-9a-f]{32}")
ROOT = Path(__file__).resolve().parents[1]
NOISE = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, str(ROOT / "benchmarks" / "*"))]


@dataclass(frozen=True)
class Answer:
    tag: str
    seconds: float
    text: str = ""
    error: str | None = None


@dataclass(frozen=True)
class Gauges:
    rss: int
    traced: int
    threads: int
    names: Counter[str]
    native: int
    fds: int
    gateway_tasks: int
    fake_tasks: int

    @property
    def shape(self) -> tuple[int, ...]:
        return self.threads, self.native, self.fds, self.gateway_tasks, self.fake_tasks

    def leftovers(self, base: Gauges) -> list[str]:
        """What is above ``base`` (a pool of POOLS may grow to its bound)."""
        found = [
            f"thread {name!r} x{base.names[name]} -> x{count}"
            for name, count in self.names.items()
            if count > max(base.names[name], POOLS.get(name, 0))
        ]
        for name in ("native", "fds", "gateway_tasks", "fake_tasks"):
            if getattr(self, name) > getattr(base, name):
                found.append(f"{name} {getattr(base, name)} -> {getattr(self, name)}")
        return found


@dataclass
class Round:
    label: str
    answers: list[Answer]
    faults: list[FaultResult]
    wall: float
    after: Gauges
    journal: int
    failures: list[str] = field(default_factory=list)
    log: Counter[str] = field(default_factory=Counter)
    fake_held: int = 0  # traced bytes the fake's reset freed
    stores: str = ""  # the gateway's bounded per-turn state (each capped at 500 entries)
    total: float = 0.0  # seconds, with the settling and the checks
    snapshot: tracemalloc.Snapshot | None = None


class Rig:
    def __init__(self, fake: FakeLSThread, served: ServedGateway, per_round: int, seed: int) -> None:
        self.fake, self.served, self.n, self.seed = fake, served, per_round, seed
        self.log = ServerLog()
        self.gateway_loop = served._server.servers[0].get_loop()

    def gauges(self) -> Gauges:
        async def tasks() -> int:
            return len(asyncio.all_tasks()) - 1  # not this one

        gc.collect()
        with open("/proc/self/status", encoding="ascii") as status:
            rss = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))
        threads = threading.enumerate()
        return Gauges(
            rss=rss,
            traced=tracemalloc.get_traced_memory()[0],
            threads=len(threads),
            names=Counter(re.sub(r"\d+", "#", t.name) for t in threads),
            native=len(os.listdir("/proc/self/task")) - len(threads),
            fds=len(os.listdir("/proc/self/fd")),
            gateway_tasks=asyncio.run_coroutine_threadsafe(tasks(), self.gateway_loop).result(timeout=10),
            fake_tasks=self.fake.call(lambda: len(asyncio.all_tasks()) - 1),
        )

    async def settle(self, base: Gauges | None) -> Gauges:
        """The gauges once back to ``base`` (None: once unchanged for a second), or after SETTLE_S."""
        deadline, steady, last = time.monotonic() + SETTLE_S, 0, self.gauges()
        while time.monotonic() < deadline and (base is None or last.leftovers(base)) and steady < 10:
            await asyncio.sleep(0.1)
            now = self.gauges()
            steady = steady + 1 if base is None and now.shape == last.shape else 0
            last = now
        return last

    async def valid(self, client: openai.AsyncOpenAI, index: int, progress: Progress) -> Answer:
        tag = f"load-{uuid.uuid4().hex}"
        messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": _prompt(tag, index)}]
        started = time.perf_counter()
        try:
            if index % 2 == 0:
                chunks = await client.chat.completions.create(model=MODEL, messages=messages, stream=True)
                text = "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])
            else:
                reply = await client.chat.completions.create(model=MODEL, messages=messages)
                text = reply.choices[0].message.content or ""
        except openai.OpenAIError as exc:
            return Answer(tag, time.perf_counter() - started, error=f"{type(exc).__name__}: {exc}")
        finally:
            await progress.tick()
        return Answer(tag, time.perf_counter() - started, text)

    async def fault(self, kind: str, after: int, progress: Progress) -> FaultResult:
        await progress.reached(after)
        if kind in GRPC_KINDS:
            return await asyncio.to_thread(grpc_fault, kind, self.fake.ports.grpc, CSRF)
        tag = f"load-{uuid.uuid4().hex}"
        return await http_fault(
            kind, self.served.port, api_key=API_KEY, limit=MAX_BODY, model=MODEL, prompt=_prompt(tag, -1), tag=tag
        )

    async def round(self, label: str, number: int, base: Gauges | None) -> Round:
        rng, logged, progress = random.Random(self.seed * 10 + number), Counter(self.log.seen), Progress()
        client = openai.AsyncOpenAI(base_url=self.served.url + "/v1", api_key=API_KEY, max_retries=0, timeout=120)
        kinds = [kind for kind in (*HTTP_KINDS, *GRPC_KINDS) for _ in range(max(1, self.n // 20))]
        jobs = [self.valid(client, i, progress) for i in range(self.n)]
        faults = [self.fault(kind, rng.randrange(self.n), progress) for kind in kinds]
        started = time.perf_counter()
        try:
            results = await asyncio.gather(*jobs, *faults)
        finally:
            await client.close()
        wall = time.perf_counter() - started
        settled = await self.settle(base)
        entries = await _settled_journal(self.fake, sum(1 for k in kinds if GRPC_KINDS.get(k, ("", None))[1]))
        answers = [r for r in results if isinstance(r, Answer)]
        done = Round(label, answers, [r for r in results if isinstance(r, FaultResult)], wall, settled, len(entries))
        done.failures = _check(done, entries) + [f"left over: {x}" for x in settled.leftovers(base or settled)]
        if not fake_still_serves(self.fake.address, CSRF):
            done.failures.append("the fake LS no longer serves a StartCascade")
        done.log = self.log.seen - logged
        held = gc.collect() * 0 + tracemalloc.get_traced_memory()[0]
        self.fake.reset()  # its journal (every poll) and every cascade it started: not the gateway's growth
        done.after = self.gauges()
        done.fake_held = held - done.after.traced
        done.total = time.perf_counter() - started
        gateway = self.served.gateway
        rows = len(gateway.ledger.document()["rows"])
        done.stores = f"pool {len(gateway.pool)}, response cache {gateway.cache.stats()['entries']}, ledger rows {rows}"
        return done


def _prompt(tag: str, index: int) -> str:
    return f"Request {index} ({tag}): " + "please sum these numbers " * (1 + index % 7) + f"{index} and {index * 3}."


async def _settled_journal(fake: FakeLSThread, garbage: int) -> list[JournalEntry]:
    """The journal once the handlers that journal late (after a reset) have, or after SETTLE_S."""
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline and sum(1 for e in fake.journal.entries() if _is_garbage(e)) < garbage:
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.1)
    return fake.journal.entries()


def _is_garbage(entry: JournalEntry) -> bool:
    return entry.headers.get(GARBAGE_MARK[0]) == GARBAGE_MARK[1]


def _check(done: Round, entries: list[JournalEntry]) -> list[str]:
    failures: list[str] = []
    sends: dict[str, list[tuple[str, int]]] = {}
    for entry in entries:
        if entry.method == "SendUserCascadeMessage" and not entry.rejected and entry.request is not None:
            prompt = "".join(item.get("text", "") for item in entry.request.get("items", []))
            for tag in set(TAG_RE.findall(prompt)):
                sends.setdefault(tag, []).append((prompt, len(entry.request.get("images", []))))
    for answer in done.answers:
        carried = sends.get(answer.tag, [])
        if answer.error is not None:
            failures.append(f"{answer.tag}: failed: {answer.error}")
        elif len(carried) != 1:
            failures.append(f"journal: {answer.tag} is in {len(carried)} accepted Sends (expected 1)")
        elif answer.text != default_answer(*carried[0]):
            failures.append(f"{answer.tag}: answered {answer.text!r}, expected {default_answer(*carried[0])!r}")
    for fault in done.faults:
        if not fault.ok:
            failures.append(f"fault {fault.kind}: expected {fault.expected}, got {fault.got}")
        elif fault.tag is not None and len(sends.get(fault.tag, [])) != 1:
            failures.append(f"journal: {fault.kind} {fault.tag} is in {len(sends.get(fault.tag, []))} Sends")
    got = Counter(e.status for e in entries if _is_garbage(e))
    want = Counter(str(GRPC_KINDS[f.kind][1]) for f in done.faults if f.kind in GRPC_KINDS)
    resets, _ = want.pop("CANCELLED|INVALID_ARGUMENT", 0), want.pop("None", 0)
    cancelled = got["CANCELLED"]  # a reset is journaled CANCELLED or INVALID_ARGUMENT, depending on timing
    if cancelled > resets or got != want + Counter({"CANCELLED": cancelled, "INVALID_ARGUMENT": resets - cancelled}):
        failures.append(f"journal: garbage journaled {dict(got)}, expected {dict(want)} + {resets} resets")
    refused = Counter(f"{e.method} {e.status}" for e in entries if e.rejected and not _is_garbage(e))
    if refused:
        failures.append(f"journal: the fake rejected calls of the gateway: {dict(refused)}")
    return failures


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)] if ordered else float("nan")


def report(rounds: list[Round], base: Gauges, n: int) -> list[str]:
    print(f"{n} concurrent valid turns per round, half streamed, {len(rounds[0].faults)} faults interleaved;")
    print(
        f"the gateway runs {DEFAULT_MAX_CONCURRENT_TURNS} turns at once, max body {MAX_BODY // 1024} KiB, 2 ms polling"
    )
    print(f"{'round':<9}{'valid ok':>9}{'faults ok':>10}{'wall s':>7}{'turns/s':>8}{'p50 ms':>7}{'p99 ms':>7}", end="")
    print(f"{'total s':>8}  journal")
    for r in rounds:
        ms = [a.seconds * 1000 for a in r.answers if a.error is None]
        once = "FAILED" if any(f.startswith("journal:") for f in r.failures) else "once each"
        print(
            f"{r.label:<9}{f'{len(ms)}/{len(r.answers)}':>9}{f'{sum(f.ok for f in r.faults)}/{len(r.faults)}':>10}"
            f"{r.wall:>7.2f}{len(r.answers) / r.wall:>8.1f}{_percentile(ms, 50):>7.0f}{_percentile(ms, 99):>7.0f}"
            f"{r.total:>8.1f}  {once} ({r.journal} entries)"
        )
    print("faults by kind (all rounds): kind, expected, outcomes")
    by_kind: dict[str, Counter[str]] = {}
    for fault in (f for r in rounds for f in r.faults):
        by_kind.setdefault(f"  {fault.kind:<18}{fault.expected:<27}", Counter())[fault.got] += 1
    for head, got in by_kind.items():
        print(head + ", ".join(f"{k} x{v}" for k, v in got.items()))
    logged = sum((r.log for r in rounds), Counter[str]())
    print("gateway log (all rounds): " + (", ".join(f"{k} x{v}" for k, v in logged.items()) or "nothing"))
    print(f"{'':<16}{'RSS MiB':>8}{'traced MiB':>11}{'threads':>8}{'native':>7}{'fds':>5}", end="")
    print(f"{'gw tasks':>9}{'fake tasks':>11}   (traced: tracemalloc's current, in traced rounds only)")
    for label, g in [("baseline", base), *((f"after {r.label}", r.after) for r in rounds[1:])]:
        print(
            f"{label:<16}{g.rss / MIB:>8.1f}{g.traced / MIB:>11.2f}{g.threads:>8}{g.native:>7}{g.fds:>5}"
            f"{g.gateway_tasks:>9}{g.fake_tasks:>11}"
        )
    print("(traced rises until the gateway's 500-entry stores turned over: entries replaced were untraced)")
    print("baseline threads: " + ", ".join(f"{k} x{v}" for k, v in sorted(base.names.items())))
    failures = [f"{r.label}: {line}" for r in rounds for line in r.failures]
    rss = rounds[2].after.rss - rounds[1].after.rss
    print(f"RSS after round 2 over round 1: {rss / MIB:+.1f} MiB (tolerance {RSS_TOLERANCE / MIB:.0f} MiB)")
    if rss > RSS_TOLERANCE:
        failures.append(f"RSS grew {rss / MIB:.1f} MiB in round 2 (tolerance {RSS_TOLERANCE / MIB:.0f})")
    return failures + _traced(rounds[-2], rounds[-1], n)


def _traced(first: Round, second: Round, n: int) -> list[str]:
    """The traced heap's growth from the end of one traced round to the end of the next, this
    script's own objects (its frames, tracemalloc's) left out."""
    if first.snapshot is None or second.snapshot is None:
        return []
    stats = second.snapshot.compare_to(first.snapshot, "lineno")
    grew, limit = sum(stat.size_diff for stat in stats), TRACED_SLACK + TRACED_TOLERANCE_PER_TURN * n
    before = sum(stat.size for stat in first.snapshot.statistics("filename"))
    print(f"tracemalloc, {second.label} over {first.label} (each: clients closed, gc, the fake reset):")
    print(f"  {before / MIB:.2f} MiB, {grew / 1024:+.0f} KiB ({grew / n:+.0f} B/turn); tolerance {limit // 1024} KiB")
    print(f"  ({TRACED_SLACK // 1024} KiB + {TRACED_TOLERANCE_PER_TURN} B/turn); the biggest changes, by line:")
    for stat in stats[:6]:
        frame = stat.traceback[0]
        print(f"    {stat.size_diff / 1024:+7.1f} KiB {stat.count_diff:+6d} blocks  {frame.filename}:{frame.lineno}")
    print(f"  bounded gateway state, after {first.label}: {first.stores}; after {second.label}: {second.stores}")
    print(f"  the fake's journal and cascades of {second.label}: {second.fake_held / 1024:.0f} KiB, freed by its reset")
    return [f"traced memory grew {grew / 1024:.0f} KiB in {second.label} (tolerance {limit // 1024})"] * (grew > limit)


async def run(n: int, seed: int) -> int:
    http = HttpSettings(api_keys={API_KEY: "bench-load"}, max_body_bytes=MAX_BODY)
    with FakeLSThread(csrf_token=CSRF) as fake:
        config = GatewayConfig(ls_address=fake.address, csrf_token=CSRF, http=http, poll=POLL)
        with ServedGateway(Gateway(config)) as served:
            rig = Rig(fake, served, n, seed)
            rounds = [await rig.round("warm-up", 0, None)]
            base = rounds[0].after
            rounds += [await rig.round("round 1", 1, base), await rig.round("round 2", 2, base)]
            tracemalloc.start(1)
            traced = math.ceil(STORE_CAP / n) + 1  # the last two are compared, once the stores turned over
            for number in range(1, traced + 1):
                rounds.append(await rig.round(f"traced {number}", 2 + number, base))
                if number >= traced - 1:
                    rounds[-1].snapshot = tracemalloc.take_snapshot().filter_traces(NOISE)
            tracemalloc.stop()
    failures = report(rounds, base, n)
    for line in failures[:15]:
        print(f"  {line}")
    if len(failures) > 15:
        print(f"  ... and {len(failures) - 15} more")
    print(f"{'FAIL' if failures else 'PASS'}: {len(failures)} failed checks")
    return 1 if failures else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="50 turns per round instead of 200: a smoke run")
    parser.add_argument("--requests", type=int, default=None, help="valid turns per round (default 200)")
    parser.add_argument("--seed", type=int, default=12)
    args = parser.parse_args()
    n = args.requests or (50 if args.quick else 200)
    if n < 1:
        parser.error("--requests must be at least 1")
    sys.exit(asyncio.run(run(n, args.seed)))


if __name__ == "__main__":
    main()
