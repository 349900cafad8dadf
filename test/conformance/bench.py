#!/usr/bin/python3
"""Unary-RPC benchmark client for csi-proxy (Python grpcio, grpc.aio).

  /usr/bin/python3 test/conformance/bench.py --socket PATH --stubs STUBS \
      --group filesystem --version v1 --method PathExists \
      --request '{"path": "/tmp"}' --calls 20000 --concurrency 16 \
      [--warmup 500] [--authority default|encoded|raw] [--timeout 10]

C worker coroutines share ONE channel (one HTTP/2 connection) and together
issue exactly N calls; the request is serialized once up front. Latency is
measured per call around the awaited RPC. Prints one JSON line:

  {"group", "version", "method", "calls", "concurrency", "seconds", "rps",
   "p50_us", "p99_us", "errors", "client": "python grpcio <version>"}

"errors" counts calls that did not end with status OK (their latencies are
still counted); the first error's code and message go to stderr. Warmup calls
(default 0) are not measured. Exit 0 when the run completed (errors or not),
non-zero for harness errors (bad arguments, unknown method, bad request).
"""

import argparse
import asyncio
import json
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grpc  # noqa: E402
import grpc.aio  # noqa: E402
from google.protobuf import json_format  # noqa: E402

import csiproxy_stubs as stubs  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--socket", required=True, help="unix socket path of the group/version")
    p.add_argument("--stubs", required=True, help="output dir of setup-python.sh")
    p.add_argument("--group", required=True)
    p.add_argument("--version", required=True)
    p.add_argument("--method", required=True)
    p.add_argument("--request", default="{}", help="request body as JSON (ParseDict)")
    p.add_argument("--calls", type=int, required=True)
    p.add_argument("--concurrency", type=int, required=True)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--authority", default="default", choices=stubs.AUTHORITY_MODES)
    p.add_argument("--timeout", type=float, default=10.0, help="per-call deadline, seconds")
    a = p.parse_args(argv)
    if a.calls < 1 or a.concurrency < 1 or a.warmup < 0:
        p.error("--calls and --concurrency must be >= 1, --warmup >= 0")
    return a


def percentile(sorted_vals, q):
    # nearest-rank percentile
    if not sorted_vals:
        return None
    k = max(0, min(len(sorted_vals) - 1, int(-(-q * len(sorted_vals) // 100)) - 1))
    return sorted_vals[k]


async def run(args, method, payload):
    opts = stubs.channel_options(stubs.authority_for(args.authority, args.group, args.version))
    async with grpc.aio.insecure_channel(stubs.unix_target(args.socket), options=opts) as channel:
        # identity (de)serializers: the request is pre-serialized, the reply is
        # kept as bytes (one is parsed below as a sanity check)
        call = channel.unary_unary(method.path, request_serializer=None, response_deserializer=None)
        first_error = []

        async def one():
            try:
                await call(payload, timeout=args.timeout)
                return True
            except grpc.aio.AioRpcError as e:
                if not first_error:
                    first_error.append(f"{e.code().name}: {e.details()}")
                return False

        async def phase(n):
            remaining = [n]
            latencies = []
            errors = [0]

            async def worker():
                while remaining[0] > 0:
                    remaining[0] -= 1
                    t0 = time.perf_counter_ns()
                    ok = await one()
                    latencies.append(time.perf_counter_ns() - t0)
                    if not ok:
                        errors[0] += 1

            t0 = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(min(args.concurrency, n))))
            return time.perf_counter() - t0, latencies, errors[0]

        # sanity check: one call whose reply must parse as the response type
        try:
            reply = await call(payload, timeout=args.timeout)
            method.response_class.FromString(reply)
        except grpc.aio.AioRpcError as e:
            first_error.append(f"{e.code().name}: {e.details()}")

        if args.warmup:
            await phase(args.warmup)
        seconds, latencies, errors = await phase(args.calls)
        if first_error:
            print(f"bench.py: first error: {first_error[0]}", file=sys.stderr)
        return seconds, latencies, errors


def main(argv):
    args = parse_args(argv)
    gv = stubs.load_one(args.stubs, args.group, args.version)
    by_name = {m.name: m for m in gv.methods}
    method = by_name.get(args.method)
    if method is None:
        raise stubs.HarnessError(
            f"{args.group}/{args.version} has no method {args.method!r}; have {sorted(by_name)}")
    try:
        req = json_format.ParseDict(json.loads(args.request), method.request_class())
    except (ValueError, json_format.ParseError) as e:
        raise stubs.HarnessError(f"bad --request for {method.key}: {e}") from e
    payload = req.SerializeToString()

    seconds, latencies, errors = asyncio.run(run(args, method, payload))
    latencies.sort()
    p50 = percentile(latencies, 50)
    p99 = percentile(latencies, 99)
    print(json.dumps({
        "group": args.group,
        "version": args.version,
        "method": args.method,
        "calls": args.calls,
        "concurrency": args.concurrency,
        "seconds": round(seconds, 6),
        "rps": round(args.calls / seconds, 1) if seconds > 0 else None,
        "p50_us": round(p50 / 1000, 1),
        "p99_us": round(p99 / 1000, 1),
        "errors": errors,
        "client": f"python grpcio {grpc.__version__}",
    }), flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except stubs.HarnessError as e:
        print(f"bench.py: {e}", file=sys.stderr)
        sys.exit(2)
