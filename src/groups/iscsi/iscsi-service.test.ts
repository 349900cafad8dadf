import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Code, CsiProxyError, internal } from "../../errors.ts";
import { FakeIscsiHost } from "../../../test/doubles/fake-iscsi-host.ts";
import { createIscsiService } from "./iscsi-service.ts";
import type { AuthenticationType, TargetPortal } from "./types.ts";
import { rejectsWithCsiProxyError } from "../../../test/helpers/assert-coded.ts";
import { holdPoint } from "../../../test/helpers/hold-point.ts";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createKeyedMutex, type KeyedMutex } from "../../util/keyed-mutex.ts";
import { createNodeLocks } from "../../state/node-locks.ts";

const P: TargetPortal = { targetAddress: "10.0.0.5", targetPort: 3260 };
const IQN = "iqn.2024-01.com.example:storage.lun1";
const OTHER = "iqn.2024-01.com.example:storage.lun2";
const setup = () => {
  const host = new FakeIscsiHost();
  return { host, iscsi: createIscsiService({ host }) };
};

const connectReq = (authType: AuthenticationType = "NONE", chapUsername = "", chapSecret = "", targetPortal: TargetPortal | undefined = P, iqn = IQN) => ({
  targetPortal,
  iqn,
  authType,
  chapUsername,
  chapSecret,
});

describe("portals", () => {
  it("port 0 means 3260, for every RPC", async () => {
    const { host, iscsi } = setup();
    const zero = { targetAddress: "10.0.0.5", targetPort: 0 };
    await iscsi.addTargetPortal({ targetPortal: zero });
    assert.deepEqual(host.portals, [P]);
    host.offer(P, IQN);
    assert.deepEqual(await iscsi.discoverTargetPortal({ targetPortal: zero }), { iqns: [IQN] });
    await iscsi.connectTarget(connectReq("NONE", "", "", zero));
    assert.deepEqual(await iscsi.getTargetDisks({ targetPortal: zero, iqn: IQN }), { diskIds: [] });
    await iscsi.disconnectTarget({ targetPortal: zero, iqn: IQN });
    await iscsi.removeTargetPortal({ targetPortal: zero });
    assert.deepEqual(host.portals, []);
  });

  it("add is idempotent; list shows what is registered; remove and discover need a registered portal", async () => {
    const { host, iscsi } = setup();
    await iscsi.addTargetPortal({ targetPortal: P });
    await iscsi.addTargetPortal({ targetPortal: P });
    assert.equal(host.calls.filter((c) => c.startsWith("addTargetPortal")).length, 1);
    assert.deepEqual(await iscsi.listTargetPortals(), { targetPortals: [P] });
    const other = { targetAddress: "san.example", targetPort: 3261 };
    await rejectsWithCsiProxyError(iscsi.discoverTargetPortal({ targetPortal: other }), Code.NotFound, /target portal san.example:3261 not found/);
    await rejectsWithCsiProxyError(iscsi.removeTargetPortal({ targetPortal: other }), Code.NotFound);
    await iscsi.removeTargetPortal({ targetPortal: P });
    await rejectsWithCsiProxyError(iscsi.removeTargetPortal({ targetPortal: P }), Code.NotFound);
    assert.deepEqual(await iscsi.listTargetPortals(), { targetPortals: [] });
  });

  it("host names compare case-insensitively; IPv6 brackets are dropped", async () => {
    const { host, iscsi } = setup();
    await iscsi.addTargetPortal({ targetPortal: { targetAddress: "SAN.example", targetPort: 3260 } });
    await iscsi.addTargetPortal({ targetPortal: { targetAddress: "san.EXAMPLE", targetPort: 3260 } });
    await iscsi.addTargetPortal({ targetPortal: { targetAddress: "[fd00::5]", targetPort: 0 } });
    assert.deepEqual(host.portals, [
      { targetAddress: "SAN.example", targetPort: 3260 },
      { targetAddress: "fd00::5", targetPort: 3260 },
    ]);
  });
});

describe("input validation (InvalidArgument, nothing reaches the host)", () => {
  const badPortals: [string, TargetPortal | undefined, RegExp][] = [
    ["missing portal (upstream crashes)", undefined, /target_portal is required/],
    ["empty address", { targetAddress: "", targetPort: 3260 }, /target_address is required/],
    ["shell syntax", { targetAddress: "10.0.0.1;reboot", targetPort: 3260 }, /not a host name or IP address/],
    ["$()", { targetAddress: "$(id)", targetPort: 3260 }, /not a host name/],
    ["option-like", { targetAddress: "-o", targetPort: 3260 }, /not a host name/],
    ["newline", { targetAddress: "a\nb", targetPort: 3260 }, /not a host name/],
    ["unicode look-alike dot", { targetAddress: "10\u30020\u30020\u30021", targetPort: 3260 }, /not a host name/],
    ["huge", { targetAddress: "a".repeat(100_000), targetPort: 3260 }, /not a host name/],
    ["port too big", { targetAddress: "10.0.0.1", targetPort: 70000 }, /not a TCP port/],
    ["negative port", { targetAddress: "10.0.0.1", targetPort: -1 }, /not a TCP port/],
  ];
  for (const [name, targetPortal, message] of badPortals) {
    it(`portal: ${name}`, async () => {
      const { host, iscsi } = setup();
      for (const call of [
        () => iscsi.addTargetPortal({ targetPortal }),
        () => iscsi.discoverTargetPortal({ targetPortal }),
        () => iscsi.removeTargetPortal({ targetPortal }),
        () => iscsi.connectTarget({ ...connectReq(), targetPortal }),
        () => iscsi.disconnectTarget({ targetPortal, iqn: IQN }),
        () => iscsi.getTargetDisks({ targetPortal, iqn: IQN }),
      ]) {
        await rejectsWithCsiProxyError(call(), Code.InvalidArgument, message);
      }
      assert.deepEqual(host.calls, []);
    });
  }

  const badIqns = ["", "iqn", "iqn.2024-01.com.example:../../etc", "iqn.2024-01.com.example:a/b", "iqn.2024-01.com.example:a,b", "iqn.2024-01.x:a b",
    "iqn.2024-01.x:`id`", "iqn.2024-01.x:$(id)", "iqn.2024-01.x:a\nnode.startup = automatic", "eui.123", `iqn.2024-01.x:${"a".repeat(300)}`];
  it("IQNs that are no iSCSI names (traversal, separators, shell syntax, newlines, too long)", async () => {
    const { host, iscsi } = setup();
    for (const iqn of badIqns) {
      await rejectsWithCsiProxyError(iscsi.connectTarget(connectReq("NONE", "", "", P, iqn)), Code.InvalidArgument, /iqn/);
      await rejectsWithCsiProxyError(iscsi.disconnectTarget({ targetPortal: P, iqn }), Code.InvalidArgument);
      await rejectsWithCsiProxyError(iscsi.getTargetDisks({ targetPortal: P, iqn }), Code.InvalidArgument);
    }
    assert.deepEqual(host.calls, []);
  });

  it("CHAP fields: control characters, blanks, length, missing secret; secrets never quoted", async () => {
    const { host, iscsi } = setup();
    const secret = "s3cret\nnode.session.auth.password_in = x";
    const e = await rejectsWithCsiProxyError(iscsi.connectTarget(connectReq("ONE_WAY_CHAP", "user", secret)), Code.InvalidArgument, /chap_secret contains control/);
    assert.ok(!e.message.includes("s3cret"));
    await rejectsWithCsiProxyError(iscsi.connectTarget(connectReq("ONE_WAY_CHAP", "user", " padded ")), Code.InvalidArgument);
    await rejectsWithCsiProxyError(iscsi.connectTarget(connectReq("ONE_WAY_CHAP", "us\0er", "secret-123456")), Code.InvalidArgument, /chap_username/);
    await rejectsWithCsiProxyError(iscsi.connectTarget(connectReq("MUTUAL_CHAP", "user", "x".repeat(256))), Code.InvalidArgument, /longer than 255/);
    await rejectsWithCsiProxyError(iscsi.connectTarget(connectReq("ONE_WAY_CHAP", "user", "")), Code.InvalidArgument, /chap_secret is required/);
    await rejectsWithCsiProxyError(iscsi.connectTarget({ ...connectReq(), authType: "KERBEROS" as AuthenticationType }), Code.InvalidArgument, /invalid authentication type/);
    const m = await rejectsWithCsiProxyError(iscsi.setMutualChapSecret({ mutualChapSecret: "abc\r\ndef-SECRET" }), Code.InvalidArgument);
    assert.ok(!m.message.includes("SECRET"));
    await rejectsWithCsiProxyError(iscsi.setMutualChapSecret({ mutualChapSecret: "y".repeat(100_000) }), Code.InvalidArgument);
    assert.deepEqual(host.calls, []);
  });

  it("NONE ignores the CHAP fields", async () => {
    const { host, iscsi } = setup();
    host.portals.push(P);
    host.offer(P, IQN);
    await iscsi.discoverTargetPortal({ targetPortal: P });
    await iscsi.connectTarget(connectReq("NONE", "ignored\n", "ignored\0"));
    assert.ok(host.calls.includes(`connectTarget 10.0.0.5:3260 ${IQN} NONE user=`));
  });
});

describe("targets", () => {
  async function discovered(options: Parameters<FakeIscsiHost["offer"]>[2] = {}) {
    const { host, iscsi } = setup();
    host.offer(P, IQN, { disks: ["3", "4"], ...options });
    await iscsi.addTargetPortal({ targetPortal: P });
    await iscsi.discoverTargetPortal({ targetPortal: P });
    return { host, iscsi };
  }

  it("unknown targets are NotFound for connect, disconnect and disks", async () => {
    const { iscsi } = await discovered();
    const other = "iqn.2024-01.com.example:other";
    await rejectsWithCsiProxyError(iscsi.connectTarget(connectReq("NONE", "", "", P, other)), Code.NotFound, /discover the portal first/);
    await rejectsWithCsiProxyError(iscsi.disconnectTarget({ targetPortal: P, iqn: other }), Code.NotFound);
    await rejectsWithCsiProxyError(iscsi.getTargetDisks({ targetPortal: P, iqn: other }), Code.NotFound);
  });

  it("connect and disconnect are idempotent; disks only while connected", async () => {
    const { host, iscsi } = await discovered();
    assert.deepEqual(await iscsi.getTargetDisks({ targetPortal: P, iqn: IQN }), { diskIds: [] });
    await iscsi.disconnectTarget({ targetPortal: P, iqn: IQN });
    await iscsi.connectTarget(connectReq());
    await iscsi.connectTarget(connectReq("ONE_WAY_CHAP", "other", "different-secret")); // already connected: no-op
    assert.equal(host.calls.filter((c) => c.startsWith("connectTarget")).length, 1);
    assert.deepEqual(await iscsi.getTargetDisks({ targetPortal: P, iqn: IQN }), { diskIds: ["3", "4"] });
    await iscsi.disconnectTarget({ targetPortal: P, iqn: IQN });
    await iscsi.disconnectTarget({ targetPortal: P, iqn: IQN });
    assert.equal(host.calls.filter((c) => c.startsWith("disconnectTarget")).length, 1);
    assert.deepEqual(await iscsi.getTargetDisks({ targetPortal: P, iqn: IQN }), { diskIds: [] });
  });

  it("one-way CHAP: wrong secret fails with the host's code, right secret connects", async () => {
    const { host, iscsi } = await discovered({ chap: { username: "chapuser", secret: "right-secret-1" } });
    await rejectsWithCsiProxyError(iscsi.connectTarget(connectReq("ONE_WAY_CHAP", "chapuser", "wrong-secret-1")), Code.PermissionDenied);
    await iscsi.connectTarget(connectReq("ONE_WAY_CHAP", "chapuser", "right-secret-1"));
    assert.equal((await host.getTarget(P, IQN))?.connected, true);
  });

  it("mutual CHAP needs SetMutualChapSecret first", async () => {
    const { host, iscsi } = await discovered({ chap: { username: "u", secret: "right-secret-1" }, mutual: true });
    await rejectsWithCsiProxyError(iscsi.connectTarget(connectReq("MUTUAL_CHAP", "u", "right-secret-1")), Code.PermissionDenied);
    await iscsi.setMutualChapSecret({ mutualChapSecret: "mutual-secret-9" });
    await iscsi.connectTarget(connectReq("MUTUAL_CHAP", "u", "right-secret-1"));
    assert.equal(host.mutualSecret, "mutual-secret-9");
    await iscsi.setMutualChapSecret({ mutualChapSecret: "" });
    assert.equal(host.mutualSecret, "");
  });

  it("host failures keep their code", async () => {
    const { host, iscsi } = await discovered();
    host.failures.set("connectTarget", new CsiProxyError(Code.FailedPrecondition, "iscsi_tcp not loaded"));
    await rejectsWithCsiProxyError(iscsi.connectTarget(connectReq()), Code.FailedPrecondition, /iscsi_tcp/);
    host.failures.set("listTargetPortals", internal("boom"));
    await rejectsWithCsiProxyError(iscsi.listTargetPortals(), Code.Internal);
  });

  it("serialises calls per portal", async () => {
    const { host, iscsi } = setup();
    await Promise.all(Array.from({ length: 10 }, () => iscsi.addTargetPortal({ targetPortal: P })));
    assert.equal(host.calls.filter((c) => c.startsWith("addTargetPortal")).length, 1);
  });
});

describe("a call whose caller went away while it waited for its portal", () => {
  /** An initiator whose connectTarget waits at `held` until the test lets it pass. */
  class HeldIscsiHost extends FakeIscsiHost {
    readonly held = holdPoint();
    override async connectTarget(portal: TargetPortal, iqn: string, auth: { type: AuthenticationType; chapUsername: string; chapSecret: string }) {
      await this.held.arrive();
      return super.connectTarget(portal, iqn, auth);
    }
  }

  async function queuedBehind(locks: () => KeyedMutex) {
    const host = new HeldIscsiHost();
    host.offer(P, IQN).offer(P, OTHER);
    const first = createIscsiService({ host, locks: locks() });
    const second = createIscsiService({ host, locks: locks() });
    await first.addTargetPortal({ targetPortal: P });
    await first.discoverTargetPortal({ targetPortal: P });
    const holding = first.connectTarget(connectReq());
    await host.held.entered;
    const waiting = second.connectTarget(connectReq("NONE", "", "", P, OTHER), { signal: AbortSignal.timeout(100) });
    waiting.catch(() => {});
    await sleep(400); // the deadline has passed while the first call holds the portal
    host.held.pass();
    await holding;
    const err = await rejectsWithCsiProxyError(waiting, Code.DeadlineExceeded, /was not started .*nothing was done/);
    assert.deepEqual(host.calls.filter((c) => c.startsWith("connectTarget") || c.includes(OTHER)), [`connectTarget 10.0.0.5:3260 ${IQN} NONE user=`], "the dropped call never reached the host");
    return err;
  }

  it("in-process locks: it leaves the queue with DeadlineExceeded and never runs", async () => {
    const shared = createKeyedMutex();
    await queuedBehind(() => shared);
  });

  it("node-wide locks, held by another process: it stops polling the lock file and never runs", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "iscsi-node-locks-"));
    try {
      // Two lock sets on one directory are two processes' worth of flock(2) descriptors.
      const err = await queuedBehind(() => createNodeLocks({ dir, platform: "linux" }));
      assert.match(err.message, /node-wide lock .* held by another csi-proxy process/);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
