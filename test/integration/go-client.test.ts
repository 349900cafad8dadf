/**
 * A real Go client against the real daemon: test/conformance/go/main.go built with the Go and grpc-go
 * the machine's Debian ships (`golang-go`, `golang-google-grpc-dev`; GOPATH mode, offline, against
 * /usr/share/gocode): Debian 12 has Go 1.19 and grpc-go 1.33.3, Debian 13 grpc-go 1.64. It dials like
 * csi-proxy's generated Go clients: grpc.Dial(<raw pipe path>, grpc.WithContextDialer,
 * grpc.WithInsecure), so grpc-go < 1.57 sends `\\.\pipe\csi-proxy-<group>-<version>` as `:authority`
 * — which nghttp2 rejects; src/rpc/grpc-connection.ts accepts it — and grpc-go >= 1.57 sends it
 * percent-encoded (what its encodeAuthority makes of the target; checked against that). Its context
 * dialer opens the group/version's Unix socket. It sends request bytes prepared here (a pass-through
 * codec) and prints the status and the response bytes, plus the dial address and the `:authority`
 * it actually wrote (decoded back from its own bytes), which the tests check too.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { startDaemonProcess, repoRoot, type DaemonProcess } from "../helpers/daemon-process.ts";
import * as fsV1 from "../../src/gen/filesystem/v1/api_pb.ts";
import * as diskV1beta1 from "../../src/gen/disk/v1beta1/api_pb.ts";

const run = promisify(execFile);
const grpcGoSrc = "/usr/share/gocode/src/google.golang.org/grpc";

async function goAvailable(): Promise<string | undefined> {
  const have = async () => existsSync(grpcGoSrc) && (await run("go", ["version"]).then(() => true, () => false));
  if (await have()) return undefined;
  // Installs them when root (quiet, idempotent); otherwise only reports what is missing.
  await run("bash", [path.join(repoRoot, "scripts/apt-install.sh"), "go-client-test", "golang-go", "golang-google-grpc-dev"]).catch(() => {});
  if (await have()) return undefined;
  return "needs Go and grpc-go from Debian (golang-go, golang-google-grpc-dev; scripts/install-test-tools.sh installs them as root)";
}
const skipReason = await goAvailable();

/** Debian's grpc-go version, from its source ("1.33.3"), and whether it sends the target raw as :authority (< 1.57). */
const grpcGoVersion = skipReason ? "" : (/Version = "([\d.]+)/.exec(readFileSync(path.join(grpcGoSrc, "version.go"), "utf8"))?.[1] ?? "");
const [goMajor, goMinor] = grpcGoVersion.split(".").map(Number);
const rawAuthority = goMajor === 1 && goMinor < 57;

/** grpc-go >= 1.57's encodeAuthority: everything but RFC 3986 unreserved, sub-delims, ':', '[', ']', '@' percent-encoded. */
const encodeAuthority = (s: string) => s.replace(/[^A-Za-z0-9\-_.~!$&'()*+,;=:[\]@]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);

interface GoResult {
  code: number;
  message: string;
  response: string;
  dialAddr: string;
  authority: string;
  error?: string;
}

const rawTarget = (group: string, version: string) => `\\\\.\\pipe\\csi-proxy-${group}-${version}`;

describe("Debian's Go client (grpc-go 1.33 sends the raw pipe path as :authority; >= 1.57 percent-encodes it)", { skip: skipReason }, () => {
  let daemon: DaemonProcess;
  let binary: string;
  let buildDir: string;

  before(async () => {
    // GOPATH mode, no module downloads: grpc-go and x/net come from /usr/share/gocode. The build
    // cache lives in .cache/ (gitignored) so reruns are quick; the binary in a temp dir.
    const cacheRoot = path.join(repoRoot, ".cache", "go-client");
    mkdirSync(cacheRoot, { recursive: true });
    buildDir = mkdtempSync(path.join(cacheRoot, "build-"));
    binary = path.join(buildDir, "csi-proxy-go-client");
    await run("go", ["build", "-o", binary, "."], {
      cwd: path.join(repoRoot, "test/conformance/go"),
      env: {
        ...process.env,
        GO111MODULE: "off",
        GOPATH: `${buildDir}/gopath:/usr/share/gocode`,
        GOCACHE: path.join(cacheRoot, "gocache"),
        GOFLAGS: "",
        GOPROXY: "off",
        CGO_ENABLED: "0",
      },
    });
    daemon = await startDaemonProcess();
  });
  after(async () => {
    await daemon?.stop();
    if (buildDir) rmSync(buildDir, { recursive: true, force: true });
  });

  async function call<I extends DescMessage>(
    group: string, version: string, method: string, schema: I, request: MessageInitShape<I>, target = rawTarget(group, version),
  ): Promise<GoResult> {
    const bytes = toBinary(schema, create(schema, request));
    const { stdout } = await run(binary, [
      "-socket", path.join(daemon.socketDir, `csi-proxy-${group}-${version}.sock`),
      "-target", target,
      "-method", method,
      "-request", Buffer.from(bytes).toString("hex"),
    ]);
    const result = JSON.parse(stdout) as GoResult;
    assert.equal(result.error, undefined);
    // grpc-go < 1.57 passes the target to the dialer and sends it as :authority as is; >= 1.57 parses it
    // as a URL (passthrough), dials its decoded path and sends that path percent-encoded.
    const dialled = rawAuthority ? target : decodeURIComponent(target);
    assert.equal(result.dialAddr, dialled, `grpc-go ${grpcGoVersion}: dial address`);
    assert.equal(result.authority, rawAuthority ? target : encodeAuthority(dialled), `grpc-go ${grpcGoVersion}: :authority`);
    return result;
  }
  const decode = <O extends DescMessage>(schema: O, hex: string) => fromBinary(schema, Buffer.from(hex, "hex"));

  it("sends the raw pipe path as :authority and PathExists answers exists=true", async () => {
    const r = await call("filesystem", "v1", "/v1.Filesystem/PathExists", fsV1.PathExistsRequestSchema, { path: daemon.kubeletDir });
    assert.equal(rawTarget("filesystem", "v1"), String.raw`\\.\pipe\csi-proxy-filesystem-v1`);
    assert.ok(grpcGoVersion !== "", "grpc-go's version read from its source");
    assert.equal(r.code, 0, r.message);
    assert.equal(decode(fsV1.PathExistsResponseSchema, r.response).exists, true);
  });

  it("Mkdir then PathExists", async () => {
    const dir = path.join(daemon.kubeletDir, "made-by-go");
    const before = await call("filesystem", "v1", "/v1.Filesystem/PathExists", fsV1.PathExistsRequestSchema, { path: dir });
    assert.equal(before.code, 0, before.message);
    assert.equal(decode(fsV1.PathExistsResponseSchema, before.response).exists, false);
    const mk = await call("filesystem", "v1", "/v1.Filesystem/Mkdir", fsV1.MkdirRequestSchema, { path: dir });
    assert.equal(mk.code, 0, mk.message);
    decode(fsV1.MkdirResponseSchema, mk.response);
    assert.ok(statSync(dir).isDirectory());
    const after = await call("filesystem", "v1", "/v1.Filesystem/PathExists", fsV1.PathExistsRequestSchema, { path: dir });
    assert.equal(after.code, 0, after.message);
    assert.equal(decode(fsV1.PathExistsResponseSchema, after.response).exists, true);
  });

  it("disk v1beta1 DiskStats with diskID \"x\" is InvalidArgument with upstream's message", async () => {
    const r = await call("disk", "v1beta1", "/v1beta1.Disk/DiskStats", diskV1beta1.DiskStatsRequestSchema, { diskID: "x" });
    assert.equal(r.code, 3);
    assert.equal(r.message, 'Failed to format DiskStatsRequest.DiskID with err: strconv.ParseUint: parsing "x": invalid syntax');
    assert.equal(r.response, "");
  });

  it("the percent-encoded target (what grpc-go >= 1.57 sends as :authority) works too", async () => {
    const encoded = "%5C%5C.%5Cpipe%5Ccsi-proxy-filesystem-v1";
    const r = await call("filesystem", "v1", "/v1.Filesystem/PathExists", fsV1.PathExistsRequestSchema, { path: daemon.kubeletDir }, encoded);
    assert.equal(r.code, 0, r.message);
    assert.equal(decode(fsV1.PathExistsResponseSchema, r.response).exists, true);
  });
});
