/**
 * `-pipe-sddl`: an explicit DACL for every named pipe csi-proxy serves.
 *
 * Without the flag the pipes keep the default named-pipe DACL (libuv passes NULL security
 * attributes, exactly like upstream's `winio.ListenPipe(path, nil)`: full control for SYSTEM,
 * Administrators and the creator owner, read for Everyone and Anonymous), for parity.
 *
 * With the flag: libuv offers no way to pass security attributes (its only knob adds an Everyone
 * ACE) and Node cannot adopt a pipe handle created elsewhere, so once a pipe listens csi-proxy opens
 * it as a client with WRITE_DAC and sets the DACL with SetSecurityInfo (protected: no inherited
 * ACEs). The listener drops every connection that arrives before that is done (including this
 * client's own). The security descriptor of a named pipe belongs to the pipe, not to one instance,
 * so instances libuv creates later share it.
 *
 * The DACL must grant the account csi-proxy runs as (SYSTEM for the service) FILE_CREATE_PIPE_INSTANCE
 * (GA does), or new pipe instances cannot be created. Example: `D:P(A;;GA;;;SY)(A;;GA;;;BA)`.
 */
import { CsiProxyError, Code } from "../errors.ts";
import { loadWin32, type Win32 } from "../win32/win32.ts";
import { READ_CONTROL, WRITE_DAC } from "../win32/win32-constants.ts";
import { WinError, Win32Error } from "../win32/win32-errors.ts";

export interface PipeSecurity {
  readonly sddl: string;
  /** Sets the DACL on the (listening) pipe; resolves with the DACL read back, as SDDL. */
  apply(pipeName: string): Promise<string>;
}

/** Parses `sddl` now (InvalidArgument when Windows rejects it) and returns the applier. */
export async function createPipeSecurity(sddl: string, win32?: Win32): Promise<PipeSecurity> {
  const api = win32 ?? (await loadWin32());
  if (!sddl.trim().startsWith("D:")) throw new CsiProxyError(Code.InvalidArgument, `-pipe-sddl must be a DACL in SDDL form starting with "D:", got ${JSON.stringify(sddl)}`);
  const sd = api.securityDescriptorFromSddl(sddl); // throws InvalidArgument on bad SDDL
  const dacl = api.daclOf(sd);
  if (!dacl) {
    api.localFree(sd);
    throw new CsiProxyError(Code.InvalidArgument, `-pipe-sddl ${JSON.stringify(sddl)} has no DACL`);
  }
  return {
    sddl,
    async apply(pipeName: string): Promise<string> {
      let handle: number | bigint | undefined;
      for (let attempt = 0; handle === undefined; attempt++) {
        try {
          handle = await api.openForQuery(pipeName, WRITE_DAC | READ_CONTROL);
        } catch (err) {
          if (!(err instanceof Win32Error) || err.errno !== WinError.PIPE_BUSY || attempt >= 20) throw err;
          await api.waitNamedPipe(pipeName, 250);
          await new Promise((r) => setTimeout(r, 10));
        }
      }
      try {
        api.setDacl(handle, dacl, pipeName);
        return api.daclSddl(handle, pipeName);
      } finally {
        await api.closeHandle(handle);
      }
    },
  };
}
