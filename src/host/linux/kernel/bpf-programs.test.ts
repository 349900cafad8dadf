// The hand-assembled BPF programs (bpf-programs.ts): 8-byte instructions, every forward jump to the
// one exit lands on it, the program ends `r0 = 0; exit`, and records are written by bpf_seq_write.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileProgram, taskProgram, vmaProgram, type Offsets } from "./bpf-programs.ts";

const f = (offset: number, size = 4) => ({ offset, size });
const offsets: Offsets = {
  ctxMeta: 0, ctxTask: 8, ctxFd: 16, ctxFile: 24, ctxVma: 16, metaSeq: 0, metaSeqNum: 8,
  fileInode: f(32, 8), fileFlags: f(64), inodeMode: f(0, 2), inodeRdev: f(20), taskTgid: f(100), taskPid: f(104),
  taskNsproxy: f(200, 8), nsproxyMntNs: f(24, 8), mntNsInum: f(8), vmaFile: f(160, 8),
};

const JUMPS = new Set([0x15, 0x55, 0x5d]);

for (const [name, program] of [["task", taskProgram], ["file", fileProgram], ["vma", vmaProgram]] as const) {
  test(`${name} program: well-formed, jumps inside the program, ends with r0 = 0; exit`, () => {
    const code = program(offsets);
    assert.equal(code.length % 8, 0);
    const n = code.length / 8;
    assert.equal(code.readUInt8((n - 1) * 8), 0x95, "last instruction is exit");
    assert.equal(code.readUInt8((n - 2) * 8), 0xb7, "r0 = 0 before exit");
    let calls = 0;
    for (let pc = 0; pc < n; pc++) {
      const op = code.readUInt8(pc * 8);
      if (op === 0x85) {
        calls++;
        assert.equal(code.readInt32LE(pc * 8 + 4), 127, "the only helper called is bpf_seq_write");
      }
      if (JUMPS.has(op)) {
        const target = pc + 1 + code.readInt16LE(pc * 8 + 2);
        assert.ok(target > pc && target < n, `jump at ${pc} lands inside the program (${target})`);
      }
      assert.ok(((code.readUInt8(pc * 8 + 1) & 0x0f) <= 10) && (code.readUInt8(pc * 8 + 1) >> 4) <= 10, `registers of ${pc} are r0–r10`);
    }
    assert.ok(calls >= 1, "writes a record");
  });
}
