/**
 * The return codes of the Storage Management API methods the worker calls (MSFT_Disk, MSFT_Partition,
 * MSFT_Volume; the numbering is shared by all of them): the gRPC code csi-proxy answers with and the
 * documented text appended to the error message. test/windows/powershell-static.test.ts fails when
 * a code documented for a method we call (test/windows/cim-signatures.ts) is missing here. A documented
 * code is a final answer of the method, so none maps to a code clients read as "still in progress"
 * (Unavailable, ResourceExhausted, Aborted); Timeout (3) is DeadlineExceeded: the operation may
 * still complete.
 */
import { Code } from "../../../errors.ts";

export const STORAGE_STATUS: Readonly<Record<number, { code: Code; text: string }>> = {
  1: { code: Code.Unimplemented, text: "Not Supported" },
  2: { code: Code.FailedPrecondition, text: "Unspecified Error" },
  3: { code: Code.DeadlineExceeded, text: "Timeout" },
  4: { code: Code.FailedPrecondition, text: "Failed" },
  5: { code: Code.InvalidArgument, text: "Invalid Parameter" },
  6: { code: Code.FailedPrecondition, text: "Disk is in use" },
  7: { code: Code.Unimplemented, text: "This command is not supported on x86 running in x64 environment" },
  4097: { code: Code.OutOfRange, text: "Size Not Supported" },
  40000: { code: Code.FailedPrecondition, text: "Not enough free space" },
  40001: { code: Code.PermissionDenied, text: "Access denied" },
  40002: { code: Code.FailedPrecondition, text: "There are not enough resources to complete the operation" },
  40003: { code: Code.FailedPrecondition, text: "Cache out of date" },
  40004: { code: Code.FailedPrecondition, text: "An unexpected I/O error has occurred" },
  40005: { code: Code.InvalidArgument, text: "Specify either Size or UseMaximumSize" },
  40018: { code: Code.FailedPrecondition, text: "The object is managed by Failover Clustering" },
  41000: { code: Code.FailedPrecondition, text: "The disk has not been initialized" },
  41001: { code: Code.AlreadyExists, text: "The disk has already been initialized" },
  41002: { code: Code.FailedPrecondition, text: "The disk is read only" },
  41003: { code: Code.FailedPrecondition, text: "The disk is offline" },
  41004: { code: Code.FailedPrecondition, text: "The disk's partition limit has been reached" },
  41005: { code: Code.InvalidArgument, text: "The specified partition alignment is not valid" },
  41006: { code: Code.InvalidArgument, text: "A parameter is not valid for this type of partition" },
  41009: { code: Code.FailedPrecondition, text: "The operation is not supported on a critical disk" },
  41010: { code: Code.InvalidArgument, text: "The specified partition type is not valid" },
  41011: { code: Code.OutOfRange, text: "Only the first 2 TB are usable on MBR disks" },
  41012: { code: Code.InvalidArgument, text: "The specified offset is not valid" },
  41014: { code: Code.FailedPrecondition, text: "The disk is not large enough to support a GPT partition style" },
  41015: { code: Code.FailedPrecondition, text: "There is no media in the device" },
  41016: { code: Code.InvalidArgument, text: "The specified offset is not valid" },
  41017: { code: Code.InvalidArgument, text: "The specified partition layout is invalid" },
  41018: { code: Code.FailedPrecondition, text: "The disk is managed by Failover Clustering (cluster maintenance mode required)" },
  42002: { code: Code.AlreadyExists, text: "The requested access path is already in use" },
  42004: { code: Code.FailedPrecondition, text: "Cannot assign access paths to hidden partitions" },
  42007: { code: Code.InvalidArgument, text: "The access path is not valid" },
  42008: { code: Code.FailedPrecondition, text: "Cannot shrink a partition containing a volume with errors" },
  42009: { code: Code.FailedPrecondition, text: "Cannot resize a partition containing an unknown file system" },
  42010: { code: Code.FailedPrecondition, text: "The operation is not allowed on a system or critical partition" },
  42011: { code: Code.FailedPrecondition, text: "This operation is only supported on data partitions" },
  43000: { code: Code.InvalidArgument, text: "The specified cluster size is invalid" },
  43001: { code: Code.InvalidArgument, text: "The specified file system is not supported" },
  43002: { code: Code.FailedPrecondition, text: "The volume cannot be quick formatted" },
  43003: { code: Code.OutOfRange, text: "The number of clusters exceeds 32 bits" },
  43004: { code: Code.InvalidArgument, text: "The specified UDF version is not supported" },
  43005: { code: Code.InvalidArgument, text: "The cluster size must be a multiple of the disk's physical sector size" },
  43006: { code: Code.FailedPrecondition, text: "Cannot perform the requested operation when the drive is read only" },
  43034: { code: Code.FailedPrecondition, text: "Undocumented format error" },
};
