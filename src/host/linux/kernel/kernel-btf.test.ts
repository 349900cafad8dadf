// kernel-btf.ts against this machine's own kernel BTF: known structs and members are found, with
// sizes that the kernel's ABI fixes; a file that is not BTF is refused.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { BTF_PATH, KIND_FUNC, readKernelBtf } from "./kernel-btf.ts";

const skip = existsSync(BTF_PATH) ? false : `${BTF_PATH} is absent (kernel built without CONFIG_DEBUG_INFO_BTF)`;

describe("readKernelBtf", () => {
  it("finds task_struct, its pid (4 bytes) and tgid after it, and a kernel function", { skip }, () => {
    const btf = readKernelBtf();
    assert.ok(btf.typeId("task_struct", 4) !== undefined, "struct task_struct");
    const pid = btf.memberOffset("task_struct", "pid"), tgid = btf.memberOffset("task_struct", "tgid");
    assert.equal(pid?.size, 4);
    assert.equal(tgid?.size, 4);
    assert.equal(tgid!.offset, pid!.offset + 4, "tgid follows pid in task_struct");
    assert.equal(btf.memberOffset("task_struct", "no_such_member_here"), undefined);
    assert.equal(btf.typeId("no_such_struct_here", 4), undefined);
    assert.ok(btf.typeId("do_sys_open", KIND_FUNC) !== undefined || btf.typeId("do_sys_openat2", KIND_FUNC) !== undefined, "an open syscall function");
  });

  it("refuses a file that is not BTF", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "btf-"));
    try {
      const file = path.join(dir, "not-btf");
      writeFileSync(file, Buffer.alloc(64, 1));
      assert.throws(() => readKernelBtf(file), /is not little-endian BTF/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
