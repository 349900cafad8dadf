#!/usr/bin/env node
/**
 * csi-proxyctl: an operator's command line for a running csi-proxy.
 *
 *   csi-proxyctl [-socket-dir DIR] [-version V] <group> <Method> ['<request as proto3 JSON>']
 *   csi-proxyctl [-socket-dir DIR] status
 *   csi-proxyctl help | version
 *
 * Calls one RPC through the typed client (the group's stable version — v1, or the newest that is not
 * an alpha — unless -version is given) and prints the response as proto3 JSON, every field included
 * (`"exists": false`, not `{}`). `status` lists which endpoints answer; `help` (also -h, -help,
 * --help) prints the usage on stdout; `version` prints this tool's version, commit and Node.js. After the endpoints, `status` lists
 * the host steps that outlived their call (running or lately ended, per device; host/exec/late-steps-file.ts).
 * Exit codes: 0 success, 1 the RPC failed (its gRPC code and message on stderr) or an unsupported
 * Node.js, 2 usage errors.
 */
import "../boot/supported-node.ts"; // first: an unsupported Node.js gets one line and exit 1
import { fromJson, toJson, type DescService, type JsonValue } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { parseGoFlags, formatUsage, FlagError, type FlagSpec } from "./go-flags.ts";
import { catalog, groups, versionsOf, type Group } from "../api/catalog.ts";
import { connectGroup } from "../client/connect-group.ts";
import { defaultSocketDir, endpointPath } from "../api/endpoint.ts";
import { codeName } from "../errors.ts";
import { commit, version as toolVersion } from "../version.ts";
import { describeLateSteps } from "../host/exec/late-steps-file.ts";

const specs: FlagSpec[] = [
  { name: "socket-dir", kind: "string", default: defaultSocketDir(), usage: "Linux: the server's -socket-dir" },
  { name: "version", kind: "string", default: "", usage: "API version to use (default: the group's stable version: v1, or the newest that is not an alpha)" },
  { name: "timeout", kind: "int", default: 60, usage: "per-call timeout in seconds" },
];

const usageText = () =>
  `${formatUsage(specs, "csi-proxyctl")}\nUsage: csi-proxyctl [flags] <group> <Method> ['<json>'] | status | help | version\ngroups: ${groups.join(", ")}\n`;

/** A usage error: the message and the usage on stderr, exit 2. */
function usage(message: string): number {
  process.stderr.write(`${message}\n${usageText()}`);
  return 2;
}

/** A short usage error (the usage is not repeated): one line on stderr, exit 2. */
function refuse(message: string): number {
  process.stderr.write(`csi-proxyctl: ${message}\n`);
  return 2;
}

/** The version used when -version is not given: v1, or the newest version that is not an alpha. */
function stableVersion(group: Group): string {
  const versions = versionsOf(group) as string[];
  if (versions.includes("v1")) return "v1";
  const notAlpha = versions.filter((v) => !/alpha/.test(v));
  return (notAlpha.length ? notAlpha : versions)[(notAlpha.length ? notAlpha : versions).length - 1];
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseGoFlags(argv, specs);
  } catch (err) {
    if (err instanceof FlagError && err.help) return (process.stdout.write(usageText()), 0);
    if (err instanceof FlagError) return usage(err.message);
    throw err;
  }
  const socketDir = parsed.values["socket-dir"] as string;
  const [command, methodName, body, ...extra] = parsed.positionals;
  if (command === "help" && methodName === undefined) return (process.stdout.write(usageText()), 0);
  if (command === "version" && methodName === undefined) {
    process.stdout.write(`csi-proxyctl ${toolVersion} (commit ${commit}, Node.js ${process.version})\n`);
    return 0;
  }
  if (command === "status") return methodName === undefined ? status(socketDir) : refuse(`status takes no arguments, not ${JSON.stringify(methodName)}`);
  if (!command) return usage("missing <group> and <Method>");
  if (!(groups as string[]).includes(command)) return usage(`unknown group ${command}`);
  const group = command as Group;
  const version = parsed.values["version"] as string;
  if (version && !(versionsOf(group) as string[]).includes(version)) return refuse(`${group} has no version ${version}; it has ${versionsOf(group).join(", ")}`);
  if (!methodName) {
    const methods = (catalog as unknown as Record<string, Record<string, DescService>>)[group][version || stableVersion(group)].methods.map((m) => m.name);
    return refuse(`missing <Method> for ${group}; it has ${methods.join(", ")}`);
  }
  if (extra.length > 0) return refuse(`unexpected argument ${JSON.stringify(extra[0])} after the request (quote the JSON as one argument)`);
  // The group is only known at run time, so the client is used untyped here.
  const connect = connectGroup as (g: Group, o: object) => Promise<{ version: string; client: unknown; close(): void }>;
  const conn = await connect(group, { socketDir, versions: [version || stableVersion(group)], timeoutMs: (parsed.values["timeout"] as number) * 1000 });
  try {
    const service = (catalog as unknown as Record<string, Record<string, DescService>>)[group][conn.version];
    const method = service.methods.find((m) => m.name.toLowerCase() === methodName.toLowerCase());
    if (!method) return refuse(`${group} ${conn.version} has no method ${methodName}; it has ${service.methods.map((m) => m.name).join(", ")}`);
    let json: unknown;
    try {
      json = body ? JSON.parse(body) : {};
    } catch (err) {
      return refuse(`the request is not JSON: ${(err as Error).message}`);
    }
    let request;
    try {
      request = fromJson(method.input, json as JsonValue);
    } catch (err) {
      return refuse(`bad request for ${method.input.typeName}: ${(err as Error).message}`);
    }
    try {
      const response = await (conn.client as Record<string, (r: unknown) => Promise<never>>)[method.localName](request);
      process.stdout.write(`${JSON.stringify(toJson(method.output, response, { alwaysEmitImplicit: true }), null, 2)}\n`);
      return 0;
    } catch (err) {
      const e = ConnectError.from(err);
      process.stderr.write(`${group} ${conn.version} ${method.name}: ${codeName(e.code)}: ${e.rawMessage}\n`);
      return 1;
    }
  } finally {
    conn.close();
  }
}

async function status(socketDir: string): Promise<number> {
  let served = 0;
  for (const group of groups) {
    for (const version of versionsOf(group)) {
      const ok = await (connectGroup as (g: Group, o: object) => Promise<{ close(): void }>)(group, { socketDir, versions: [version] }).then(
        (c) => (c.close(), true),
        () => false,
      );
      if (ok) served++;
      process.stdout.write(`${ok ? "serving" : "absent "}  ${group.padEnd(10)} ${version.padEnd(9)} ${endpointPath(group, version, { socketDir })}\n`);
    }
  }
  // Host steps that outlived their call (a must-finish step past its deadline), per device.
  for (const line of await describeLateSteps(socketDir)) process.stdout.write(`${line}\n`);
  return served ? 0 : 1;
}

process.stdout.on("error", (err: NodeJS.ErrnoException) => process.exit(err.code === "EPIPE" ? 0 : 1));
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`csi-proxyctl: ${err instanceof Error ? err.message : err}\n`);
    process.exit(1);
  },
);
