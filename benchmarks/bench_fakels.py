"""Figures for the fake LS: request decode throughput and full-turn latency.

    python benchmarks/bench_fakels.py [--rounds N]

Prints:
- decode throughput (MB/s) of a SendUserCascadeMessageRequest carrying four 400 KB images
  (base64 in field 6), through the same decoder the journal uses;
- the same request through the whole gRPC pipeline (client encode, h2c, decode, journal);
- latency of a full turn (warm-up, StartCascade .. final GeneratorMetadata) with 1 ms polling.
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import time

import grpc

from fakels.decoder import decode
from fakels.demo import play_turn
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls
from fakels.proto.exa.language_server_pb import language_server_pb2_grpc as ls_grpc
from fakels.server import FakeLSThread

TOKEN = "bench-token"


def four_image_send() -> ls.SendUserCascadeMessageRequest:
    images = [
        common.ImageData(base64_data=base64.b64encode(os.urandom(400_000)).decode("ascii"), mime_type="image/jpeg")
        for _ in range(4)
    ]
    return ls.SendUserCascadeMessageRequest(
        cascade_id="bench-cascade",
        items=[common.TextOrScopeItem(text="describe these images " * 200)],
        metadata=common.Metadata(ide_name="windsurf", api_key="k", session_id="s"),
        cascade_config=cortex.CascadeConfig(
            planner_config=cortex.CascadePlannerConfig(requested_model_uid="claude-sonnet-4-6", max_output_tokens=32768)
        ),
        images=images,
    )


def bench_decode(raw: bytes, rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        decode(ls.SendUserCascadeMessageRequest, raw)
        times.append(time.perf_counter() - start)
    return times


def bench_pipeline(request: ls.SendUserCascadeMessageRequest, rounds: int) -> list[float]:
    times = []
    with FakeLSThread(csrf_token=TOKEN) as fake, grpc.insecure_channel(fake.address) as channel:
        stub = ls_grpc.LanguageServerServiceStub(channel)
        md = [("x-codeium-csrf-token", TOKEN)]
        cascade_id = stub.StartCascade(ls.StartCascadeRequest(), metadata=md).cascade_id
        request.cascade_id = cascade_id
        for _ in range(rounds):
            start = time.perf_counter()
            stub.SendUserCascadeMessage(request, metadata=md)
            times.append(time.perf_counter() - start)
    return times


def bench_turns(rounds: int) -> list[float]:
    with FakeLSThread(csrf_token=TOKEN) as fake:
        return [play_turn(fake.address, TOKEN, f"turn {i}", poll_interval_s=0.001).seconds for i in range(rounds)]


def _summary(times: list[float]) -> str:
    ms = [t * 1000 for t in times]
    return f"median {statistics.median(ms):.2f} ms, min {min(ms):.2f} ms, max {max(ms):.2f} ms over {len(ms)} runs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    request = four_image_send()
    raw = request.SerializeToString()
    mb = len(raw) / 1e6
    decode_times = bench_decode(raw, args.rounds)
    print(f"request size: {mb:.2f} MB (four 400 KB images, base64)")
    print(f"decode (journal decoder): {mb / statistics.median(decode_times):.0f} MB/s; {_summary(decode_times)}")
    pipeline_times = bench_pipeline(request, args.rounds)
    rate = mb / statistics.median(pipeline_times)
    print(f"gRPC round trip incl. decode+journal: {rate:.0f} MB/s; {_summary(pipeline_times)}")
    print(f"full turn, 1 ms polling: {_summary(bench_turns(args.rounds))}")


if __name__ == "__main__":
    main()
