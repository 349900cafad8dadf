"""Loads the protos compiled by setup-python.sh (shared by call_all.py and bench.py).

Every group/version lives in STUBS/<group>_<version>/api.desc (a
FileDescriptorSet of proto/<group>/<version>/api.proto). All of those files are
named "api.proto" and several share a proto package (v1, v1alpha1, ...), so
each one is loaded into its OWN private DescriptorPool; message classes come
from a message factory bound to that pool. Nothing touches the process-wide
default pool, so group/versions can never clash with each other.

Only Debian's /usr/bin/python3 with python3-grpcio / python3-protobuf is
expected; no Node code and no project source is used.
"""

import os
import urllib.parse
from dataclasses import dataclass, field

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

EXPECTED_GROUP_VERSIONS = 23
EXPECTED_METHODS = 139
AUTHORITY_MODES = ("default", "encoded", "raw")


class HarnessError(Exception):
    """A problem of the harness itself (bad stubs dir, bad request file...)."""


@dataclass
class Method:
    group: str
    version: str
    service: str          # fully-qualified, e.g. "v1.Disk"
    name: str             # e.g. "ListDiskLocations"
    path: str             # e.g. "/v1.Disk/ListDiskLocations"
    request_class: type
    response_class: type

    @property
    def key(self):
        return f"{self.group}/{self.version}/{self.name}"


@dataclass
class GroupVersion:
    group: str
    version: str
    pool: object
    methods: list = field(default_factory=list)

    @property
    def socket_name(self):
        return f"csi-proxy-{self.group}-{self.version}.sock"

    @property
    def pipe_name(self):
        return f"\\\\.\\pipe\\csi-proxy-{self.group}-{self.version}"


def _message_class(factory, desc):
    # protobuf >= 4.22 has message_factory.GetMessageClass; Debian 12 ships 4.21
    get = getattr(message_factory, "GetMessageClass", None)
    if get is not None:
        return get(desc)
    return factory.GetPrototype(desc)


def load_group_version(subdir):
    name = os.path.basename(os.path.normpath(subdir))
    if "_" not in name:
        raise HarnessError(f"{subdir}: expected a directory named <group>_<version>")
    group, version = name.split("_", 1)
    desc_path = os.path.join(subdir, "api.desc")
    try:
        with open(desc_path, "rb") as f:
            fds = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    except OSError as e:
        raise HarnessError(f"cannot read {desc_path}: {e}") from e

    pool = descriptor_pool.DescriptorPool()
    for fdp in fds.file:
        pool.Add(fdp)
    factory = message_factory.MessageFactory(pool)

    main = [fdp for fdp in fds.file if fdp.name == "api.proto"]
    if len(main) != 1:
        raise HarnessError(f"{desc_path}: no api.proto in descriptor set")
    fd = pool.FindFileByName("api.proto")
    if fd.package != version:
        raise HarnessError(
            f"{desc_path}: proto package {fd.package!r} != directory version {version!r}")

    gv = GroupVersion(group=group, version=version, pool=pool)
    # declaration order of services and of methods within a service
    for svc_proto in main[0].service:
        svc = fd.services_by_name[svc_proto.name]
        for m_proto in svc_proto.method:
            m = svc.methods_by_name[m_proto.name]
            if m_proto.client_streaming or m_proto.server_streaming:
                raise HarnessError(f"{svc.full_name}/{m.name}: streaming RPC not expected")
            gv.methods.append(Method(
                group=group,
                version=version,
                service=svc.full_name,
                name=m.name,
                path=f"/{svc.full_name}/{m.name}",
                request_class=_message_class(factory, m.input_type),
                response_class=_message_class(factory, m.output_type),
            ))
    return gv


def load_all(stubs_dir):
    if not os.path.isdir(stubs_dir):
        raise HarnessError(f"stubs dir {stubs_dir} does not exist (run setup-python.sh)")
    gvs = []
    for name in sorted(os.listdir(stubs_dir)):
        sub = os.path.join(stubs_dir, name)
        if os.path.isfile(os.path.join(sub, "api.desc")):
            gvs.append(load_group_version(sub))
    if not gvs:
        raise HarnessError(f"no <group>_<version>/api.desc under {stubs_dir} (run setup-python.sh)")
    return gvs


def load_one(stubs_dir, group, version):
    sub = os.path.join(stubs_dir, f"{group}_{version}")
    if not os.path.isfile(os.path.join(sub, "api.desc")):
        raise HarnessError(f"no stubs for {group}/{version} in {stubs_dir} (run setup-python.sh)")
    return load_group_version(sub)


def authority_for(mode, group, version):
    """Value for the grpc.default_authority channel option, or None for grpc's default."""
    pipe = f"\\\\.\\pipe\\csi-proxy-{group}-{version}"
    if mode == "default":
        return None
    if mode == "raw":       # what grpc-go < 1.57 sends for a named-pipe dial target
        return pipe
    if mode == "encoded":   # what grpc-go >= 1.57 sends: path-escaped, '.' kept
        return urllib.parse.quote(pipe, safe=".")
    raise HarnessError(f"unknown authority mode {mode!r} (want one of {AUTHORITY_MODES})")


def unix_target(socket_path):
    return "unix://" + os.path.abspath(socket_path)


def channel_options(authority):
    opts = []
    if authority is not None:
        opts.append(("grpc.default_authority", authority))
    return opts
