/**
 * The BPF iterator programs of the kernel task listing (kernel-task-listing.ts), assembled by hand:
 * a tiny assembler (the instructions used, jumps only forward to the one exit) and the three
 * programs — open files (task_file), mappings (task_vma), mount namespaces (task) — each writing
 * {@link RECORD_BYTES}-byte records (pid, descriptor, value, flags) with bpf_seq_write, plus a
 * {@link TICK} record every {@link TICK_EVERY} objects so a reader's read(2) returns between them.
 * The structure offsets come from the kernel's BTF (kernel-btf.ts), never from headers.
 */

const BPF_FUNC_SEQ_WRITE = 127;
/** Bytes of one record: pid (tgid), descriptor (-1 a mapping, {@link TICK} a tick), value, flags — 4 each. */
export const RECORD_BYTES = 16;

/** One BPF instruction. */
const insn = (code: number, dst: number, src: number, off: number, imm: number) => ({ code, dst, src, off, imm });
type Insn = ReturnType<typeof insn>;
const LDX = { 1: 0x71, 2: 0x69, 4: 0x61, 8: 0x79 } as Record<number, number>;
const ldx = (dst: number, src: number, off: number, size: number) => {
  const code = LDX[size];
  if (code === undefined) throw new Error(`no load of ${size} bytes`);
  return insn(code, dst, src, off, 0);
};
const stxW = (dst: number, off: number, src: number) => insn(0x63, dst, src, off, 0);
const stW = (dst: number, off: number, imm: number) => insn(0x62, dst, 0, off, imm);
const movReg = (dst: number, src: number) => insn(0xbf, dst, src, 0, 0);
const movImm = (dst: number, imm: number) => insn(0xb7, dst, 0, 0, imm);
const addImm = (dst: number, imm: number) => insn(0x07, dst, 0, 0, imm);
const andImm = (dst: number, imm: number) => insn(0x57, dst, 0, 0, imm);
const EXIT_LABEL = 0x7fff;
const jeqImm = (dst: number, imm: number) => insn(0x15, dst, 0, EXIT_LABEL, imm);
const jneImm = (dst: number, imm: number) => insn(0x55, dst, 0, EXIT_LABEL, imm);
const jneReg = (dst: number, src: number) => insn(0x5d, dst, src, EXIT_LABEL, 0);
const call = (helper: number) => insn(0x85, 0, 0, 0, helper);

export interface Offsets {
  ctxMeta: number;
  ctxTask: number;
  ctxFd: number;
  ctxFile: number;
  ctxVma: number;
  metaSeq: number;
  metaSeqNum: number;
  fileInode: { offset: number; size: number };
  fileFlags: { offset: number; size: number };
  inodeMode: { offset: number; size: number };
  inodeRdev: { offset: number; size: number };
  taskTgid: { offset: number; size: number };
  taskPid: { offset: number; size: number };
  taskNsproxy: { offset: number; size: number };
  nsproxyMntNs: { offset: number; size: number };
  /** Of `struct mnt_namespace`'s `ns.inum`. */
  mntNsInum: { offset: number; size: number };
  vmaFile: { offset: number; size: number };
}

/**
 * The program's body once r7 holds a `struct file *` (not null) and r6 the context: a record on the
 * stack (tgid, fd, rdev, flags) written to the iterator's output when the file's inode is a block device.
 */
function emitBlockFile(o: Offsets, fd: "ctx" | "mapping"): Insn[] {
  return [
    ldx(8, 7, o.fileInode.offset, 8),
    jeqImm(8, 0),
    ldx(2, 8, o.inodeMode.offset, o.inodeMode.size),
    andImm(2, 0xf000),
    jneImm(2, 0x6000), // S_IFBLK
    ldx(2, 8, o.inodeRdev.offset, o.inodeRdev.size),
    stxW(10, -8, 2),
    ...(fd === "ctx" ? [ldx(2, 7, o.fileFlags.offset, o.fileFlags.size), stxW(10, -4, 2), ldx(2, 6, o.ctxFd, 4), stxW(10, -12, 2)] : [stW(10, -4, 0), stW(10, -12, -1)]),
    ldx(2, 6, o.ctxTask, 8),
    jeqImm(2, 0),
    ldx(2, 2, o.taskTgid.offset, o.taskTgid.size),
    stxW(10, -16, 2),
    ...writeRecord(o),
  ];
}

/** bpf_seq_write(ctx->meta->seq, the RECORD_BYTES below r10, RECORD_BYTES): the record out to the reader (r6 holds ctx). */
function writeRecord(o: Offsets): Insn[] {
  return [ldx(1, 6, o.ctxMeta, 8), ldx(1, 1, o.metaSeq, 8), movReg(2, 10), addImm(2, -RECORD_BYTES), movImm(3, RECORD_BYTES), call(BPF_FUNC_SEQ_WRITE)];
}

/** The record: tgid, 0, the mount namespace's inode number, 0 — for thread group leaders with a namespace. */
export function taskProgram(o: Offsets): Buffer {
  return assemble([
    movReg(6, 1),
    ldx(7, 6, o.ctxTask, 8),
    jeqImm(7, 0),
    ldx(2, 7, o.taskPid.offset, o.taskPid.size),
    ldx(3, 7, o.taskTgid.offset, o.taskTgid.size),
    jneReg(2, 3),
    ldx(8, 7, o.taskNsproxy.offset, 8),
    jeqImm(8, 0),
    ldx(8, 8, o.nsproxyMntNs.offset, 8),
    jeqImm(8, 0),
    ldx(2, 8, o.mntNsInum.offset, o.mntNsInum.size),
    stxW(10, -8, 2),
    stxW(10, -16, 3),
    stW(10, -12, 0),
    stW(10, -4, 0),
    ...writeRecord(o),
  ]);
}

function assemble(body: Insn[]): Buffer {
  const all = [...body, movImm(0, 0), insn(0x95, 0, 0, 0, 0)];
  const exitAt = all.length - 2;
  const out = Buffer.alloc(all.length * 8);
  all.forEach((i, pc) => {
    out.writeUInt8(i.code, pc * 8);
    out.writeUInt8((i.src << 4) | i.dst, pc * 8 + 1);
    out.writeInt16LE(i.off === EXIT_LABEL ? exitAt - (pc + 1) : i.off, pc * 8 + 2);
    out.writeInt32LE(i.imm, pc * 8 + 4);
  });
  return out;
}

/** Objects (files, mappings) the kernel walks between two {@link TICK} records. */
const TICK_EVERY = 4096;
/** The descriptor field of a tick record (pid 0): no file, only a point where a read(2) returns. */
export const TICK = -2;

/**
 * With r6 the context: a tick record every {@link TICK_EVERY} objects (the iterator's seq_num), so
 * that a read(2) of one record's size returns after at most that many objects and the event loop
 * gets a turn between reads.
 */
function emitTick(o: Offsets): Insn[] {
  const write = [stW(10, -16, 0), stW(10, -12, TICK), stW(10, -8, 0), stW(10, -4, 0), ldx(1, 1, o.metaSeq, 8), movReg(2, 10), addImm(2, -RECORD_BYTES), movImm(3, RECORD_BYTES), call(BPF_FUNC_SEQ_WRITE)];
  return [ldx(1, 6, o.ctxMeta, 8), ldx(2, 1, o.metaSeqNum, 8), andImm(2, TICK_EVERY - 1), insn(0x55, 2, 0, write.length, 0), ...write];
}

export function fileProgram(o: Offsets): Buffer {
  return assemble([movReg(6, 1), ...emitTick(o), ldx(7, 6, o.ctxFile, 8), jeqImm(7, 0), ...emitBlockFile(o, "ctx")]);
}

export function vmaProgram(o: Offsets): Buffer {
  return assemble([movReg(6, 1), ...emitTick(o), ldx(7, 6, o.ctxVma, 8), jeqImm(7, 0), ldx(7, 7, o.vmaFile.offset, 8), jeqImm(7, 0), ...emitBlockFile(o, "mapping")]);
}
