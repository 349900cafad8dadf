#!/usr/bin/python3
"""Calls EVERY RPC of every csi-proxy group/version with Python grpcio.

An independent client (Debian's python3-grpcio, not the project's Node code)
used to check wire compatibility of the server:

  /usr/bin/python3 test/conformance/call_all.py --socket-dir DIR --stubs STUBS \
      [--authority default|encoded|raw] [--requests FILE] [--timeout SECONDS]

STUBS is the directory produced by test/conformance/setup-python.sh. Methods
are discovered from the compiled descriptors (the total must be 139). Each RPC
is sent over unix://DIR/csi-proxy-<group>-<version>.sock and one JSON object
per line is printed on stdout:

  {"group": "disk", "version": "v1", "method": "ListDiskLocations",
   "code": "OK", "details": "", "response": {...} | null}

"code" is the grpc.StatusCode name (OK, UNKNOWN, INVALID_ARGUMENT,
UNAVAILABLE, ...), "details" the status message ("" on OK), "response" the
response as google.protobuf.json_format.MessageToDict (null unless OK).

--requests FILE: JSON object {"<group>/<version>/<Method>": {request body}};
bodies are parsed with json_format.ParseDict (JSON or proto field names).
Methods not listed get an empty request message. An unknown key is an error.

Exit status: 0 whatever the RPCs returned; non-zero only for harness errors
(bad arguments, missing stubs, wrong method count, bad request file).
"""

import argparse
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grpc  # noqa: E402
from google.protobuf import json_format  # noqa: E402

import csiproxy_stubs as stubs  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--socket-dir", required=True)
    p.add_argument("--stubs", required=True, help="output dir of setup-python.sh")
    p.add_argument("--authority", default="default", choices=stubs.AUTHORITY_MODES)
    p.add_argument("--requests", help="JSON file: {\"group/version/Method\": {request}}")
    p.add_argument("--timeout", type=float, default=10.0, help="per-call deadline, seconds")
    p.add_argument("--proto-field-names", action="store_true",
                   help="MessageToDict(preserving_proto_field_name=True)")
    p.add_argument("--include-defaults", action="store_true",
                   help="MessageToDict(including_default_value_fields=True)")
    return p.parse_args(argv)


def load_requests(path, methods):
    if not path:
        return {}
    try:
        with open(path) as f:
            raw = json.load(f)
    except (OSError, ValueError) as e:
        raise stubs.HarnessError(f"cannot read requests file {path}: {e}") from e
    if not isinstance(raw, dict):
        raise stubs.HarnessError(f"{path}: expected a JSON object")
    by_key = {m.key: m for m in methods}
    out = {}
    for key, body in raw.items():
        m = by_key.get(key)
        if m is None:
            raise stubs.HarnessError(f"{path}: unknown method key {key!r} (want group/version/Method)")
        try:
            out[key] = json_format.ParseDict(body, m.request_class())
        except json_format.ParseError as e:
            raise stubs.HarnessError(f"{path}: bad request for {key}: {e}") from e
    return out


def main(argv):
    args = parse_args(argv)
    gvs = stubs.load_all(args.stubs)
    methods = [m for gv in gvs for m in gv.methods]
    if len(gvs) != stubs.EXPECTED_GROUP_VERSIONS or len(methods) != stubs.EXPECTED_METHODS:
        raise stubs.HarnessError(
            f"found {len(gvs)} group/versions and {len(methods)} methods in {args.stubs}; "
            f"expected {stubs.EXPECTED_GROUP_VERSIONS} and {stubs.EXPECTED_METHODS}")
    requests = load_requests(args.requests, methods)
    dict_opts = dict(preserving_proto_field_name=args.proto_field_names,
                     including_default_value_fields=args.include_defaults)

    for gv in gvs:
        target = stubs.unix_target(os.path.join(args.socket_dir, gv.socket_name))
        opts = stubs.channel_options(stubs.authority_for(args.authority, gv.group, gv.version))
        with grpc.insecure_channel(target, options=opts) as channel:
            for m in gv.methods:
                call = channel.unary_unary(
                    m.path,
                    request_serializer=lambda msg: msg.SerializeToString(),
                    response_deserializer=m.response_class.FromString,
                )
                req = requests.get(m.key)
                if req is None:
                    req = m.request_class()
                rec = {"group": m.group, "version": m.version, "method": m.name}
                try:
                    resp = call(req, timeout=args.timeout)
                    rec.update(code=grpc.StatusCode.OK.name, details="",
                               response=json_format.MessageToDict(resp, **dict_opts))
                except grpc.RpcError as e:
                    code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
                    details = e.details() if hasattr(e, "details") else str(e)
                    rec.update(code=code.name, details=details or "", response=None)
                print(json.dumps(rec, sort_keys=False), flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except stubs.HarnessError as e:
        print(f"call_all.py: {e}", file=sys.stderr)
        sys.exit(2)
