/**
 * The csi-proxy server program (loaded by src/main.ts once the process is set up): serves every
 * csi-proxy API group/version on its own endpoint until SIGINT, SIGTERM or SIGQUIT (SIGHUP reopens the
 * log file on Linux; on Windows a closed console arrives as SIGHUP and stops it, as SIGBREAK does).
 * `runServer` resolves with the exit code, one per class: 0 clean stop (and -help, -version), 1 runtime
 * failure (a start-up step that failed on the host), 2 usage or configuration error (a flag, its value,
 * the socket directory, an unopenable -log_file). Upstream's klog Fatal exits 255 (docs/driver-compat.md).
 */

export interface RunHooks {
  /** Runs once every endpoint listens (each start of a Windows service too); its summary is logged at V(2). */
  afterStart?: () => Promise<{ summary: string }>;
}
import { parseGoFlags, formatUsage, FlagError } from "./cli/go-flags.ts";
import { serverFlags, ignoredKlogFlags } from "./cli/server-flags.ts";
import { createLogger } from "./log/klog.ts";
import { defaultSocketDir } from "./api/endpoint.ts";
import { startDaemon } from "./daemon.ts";
import { setHostCommandTimeoutCap, stopHostCommands, KILL_GRACE_MS } from "./host/exec/run-command.ts";
import { MUST_FINISH_STOP_WAIT_MS } from "./host/exec/host-steps.ts";
import { keepLateStepsFile } from "./host/exec/late-steps-file.ts";
import { commit, version } from "./version.ts";
import { blockedHostOperations, runningHostOperations } from "./host/mount-gate.ts";
import { exitWithoutHandlers } from "./host/linux/kernel/libc.ts";
import { setSigusr1Action } from "./boot/no-inspector.ts";
import { secureSocketDir } from "./api/socket-dir.ts";
import { markLockDir } from "./state/lock-dir.ts";
import { secureLockDir } from "./state/node-locks-for.ts";
import { CsiProxyError } from "./errors.ts";
import { checkServerFlags } from "./cli/server-config-check.ts";

export async function runServer(argv: string[], hooks: RunHooks = {}): Promise<number> {
  const specs = serverFlags(process.platform, defaultSocketDir());
  let flags: Record<string, unknown>;
  let positionals: string[];
  try {
    ({ values: flags, positionals } = parseGoFlags(argv, specs));
  } catch (err) {
    if (!(err instanceof FlagError)) throw err;
    if (!err.help) process.stderr.write(`${err.message}\n`);
    process.stderr.write(formatUsage(specs, "csi-proxy"));
    return err.help ? 0 : 2;
  }
  if (flags["version"]) {
    process.stdout.write(`csi-proxy ${version} (commit ${commit}, Node.js ${process.version} ${process.platform}/${process.arch})\n`);
    return 0;
  }
  if (positionals.length > 0) {
    // csi-proxy takes flags only: `csi-proxy version` must not start a daemon on the default paths.
    process.stderr.write(`csi-proxy: unexpected argument ${JSON.stringify(positionals[0])} (flags only; -version prints the version)\n`);
    process.stderr.write(formatUsage(specs, "csi-proxy"));
    return 2;
  }
  let logger: ReturnType<typeof createLogger>;
  try {
    logger = createLogger({
      verbosity: flags["v"] as number,
      logToStderr: flags["logtostderr"] as boolean,
      alsoToStderr: flags["alsologtostderr"] as boolean,
      logFile: (flags["log_file"] as string) || undefined,
    });
  } catch (err) {
    // As klog: a log file that cannot be opened ends the program (nothing would be logged). A Windows
    // service has no stderr anyone reads: the SCM is told (exit code 2, service-specific), which the
    // event log records ("terminated with service-specific error 2").
    const line = `csi-proxy: -log_file ${flags["log_file"] as string}: cannot open: ${(err as Error).message}`;
    process.stderr.write(`${line}\n`);
    if (flags["windows-service"] && process.platform === "win32") {
      const { runService } = await import("./win32-service/service.ts");
      await runService({ start: () => Promise.reject(Object.assign(new Error(line), { serviceExitCode: 2 })), stop: async () => {}, log: () => {} });
    }
    return 2;
  }
  const logFileInUse = !flags["logtostderr"] && Boolean(flags["log_file"]);
  const reopenLog = () => {
    if (!logFileInUse) return;
    void logger.reopen().then((failure) => {
      if (failure) logger.error(`${failure}; still logging to the file opened before`);
      else logger.info("Reopened the log file");
    });
  };
  setSigusr1Action(reopenLog);
  try {
    for (const spec of ignoredKlogFlags) {
      if (argv.some((a) => new RegExp(`^--?${spec.name}(=|$)`).test(a))) logger.warning(`flag -${spec.name} is accepted for compatibility and has no effect`);
    }
    const checked = checkServerFlags(flags, process.platform);
    for (const line of checked.errors) logger.error(line);
    if (checked.errors.length > 0) return 2;
    for (const line of checked.warnings) logger.warning(line);
    const config = {
      platform: process.platform === "win32" ? ("win32" as const) : ("linux" as const),
      kubeletPath: flags["kubelet-path"] as string,
      workingDirs: flags["working-dir"] as string[],
      socketDir: flags["socket-dir"] as string,
      requirePrivacy: flags["require-privacy"] as boolean,
      defaultFsType: flags["default-fs-type"] as "ext4" | "xfs",
      pipeSddl: (flags["pipe-sddl"] as string) || undefined,
      stateDir: flags["state-dir"] as string,
      intentDir: flags["intent-dir"] as string,
      lockDir: flags["lock-dir"] as string,
      allowedServices: flags["allowed-service"] as string[],
      ...(flags["iscsi-node-db"] ? { iscsiNodeDb: flags["iscsi-node-db"] as string } : {}),
      logger,
    };
    setHostCommandTimeoutCap((flags["host-command-timeout"] as number) * 1000);
    if (config.platform === "linux") {
      try {
        secureSocketDir(config.socketDir);
      } catch (err) {
        if (!(err instanceof CsiProxyError)) throw err;
        logger.error(err.message);
        return 2;
      }
    }
    // The node-wide lock directory: refused → no start (never "locks off"); marked as the daemon's.
    try {
      await secureLockDir(config.lockDir, config.platform, logger);
      markLockDir(config.lockDir);
    } catch (err) {
      if (!(err instanceof CsiProxyError)) throw err;
      logger.error(err.message);
      return 2;
    }
    // A graceful stop ends the stoppable host commands still running (SIGTERM, SIGKILL after the
    // grace) once the endpoints are closed, and waits for the must-finish ones (never signalled,
    // host/exec/host-steps.ts) up to MUST_FINISH_STOP_WAIT_MS; those still running then go on, holding
    // their devices' locks. A daemon killed outright leaves every child to finish on its own.
    const endHostCommands = async () => {
      const t0 = Date.now();
      const left = await stopHostCommands({ onWait: (what) => logger.warning(`Waiting for ${what}: a step that must finish is never stopped (at most ${MUST_FINISH_STOP_WAIT_MS / 1000} s)`) });
      for (const what of left) logger.warning(`Exiting while ${what} still runs: it keeps its device locked until it ends`);
      if (Date.now() - t0 > 50) logger.info(`Ended the running host commands (SIGTERM, SIGKILL after ${KILL_GRACE_MS} ms) in ${Date.now() - t0} ms`);
    };
    const start = async () => {
      logger.info("Starting CSI-Proxy Server ...");
      logger.info(`Version: ${version}`);
      logger.info(`Working directories: [${[...config.workingDirs, config.kubeletPath].join(" ")}]`);
      logger.info(`Require privacy: ${config.requirePrivacy}`);
      if (config.platform === "linux") keepLateStepsFile(config.socketDir, (m) => logger.warning(m));
      const daemon = await startDaemon(config, { logger, metricsBindAddress: (flags["metrics-bind-address"] as string) || undefined });
      if (daemon.metricsAddress) logger.info(`Serving metrics on http://${daemon.metricsAddress}/metrics`);
      logger.info(`Serving ${daemon.addresses.length} endpoints${config.platform === "linux" ? ` in ${config.socketDir}` : ""}`);
      for (const address of daemon.addresses) logger.v(1).info(`Serving ${address}`);
      if (hooks.afterStart) logger.v(2).info(`After start: ${(await hooks.afterStart()).summary}`);
      return daemon;
    };
    if (flags["windows-service"]) {
      // Windows service: the SCM starts and stops serving (src/win32-service/service.ts).
      const { runService } = await import("./win32-service/service.ts");
      let daemon: Awaited<ReturnType<typeof startDaemon>> | undefined;
      return await runService({
        start: async () => {
          daemon = await start();
        },
        stop: async (reason) => {
          logger.info(`Service ${reason} requested, stopping`);
          await daemon?.stop();
          await endHostCommands();
          logger.info("Stopped");
          await logger.flush();
        },
        log: (msg) => logger.v(2).info(msg),
      });
    }
    // Listen before serving: a signal that arrives as soon as "Serving …" is logged must stop the
    // daemon cleanly, not meet the default disposition (immediate death, sockets left behind).
    // SIGQUIT stops like SIGTERM (no core dump, sockets removed). SIGHUP: on Linux the operator's
    // "reopen your logs"; on Windows the console closing, which must still stop the daemon.
    const signalled = new Promise<NodeJS.Signals>((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
      if (process.platform === "win32") {
        process.once("SIGBREAK", resolve);
        process.once("SIGHUP", resolve);
      } else {
        process.once("SIGQUIT", resolve);
        process.on("SIGHUP", reopenLog);
      }
    });
    const daemon = await start();
    const signal = await signalled;
    logger.info(`Received ${signal}, stopping`);
    await daemon.stop();
    await endHostCommands();
    const left = runningHostOperations();
    if (left > 0 && process.platform === "linux") {
      // A normal exit would join libuv's pool, whose threads wait in the kernel for a dead mount.
      const stuck = [...blockedHostOperations(), ...blockedHostOperations({ devices: true })].map(([m, n]) => `${n} under ${m}`).join(", ");
      logger.warning(`Stopped with ${left} host operation(s) still in the kernel${stuck ? ` (blocked: ${stuck})` : ""}; exiting without waiting for them`);
      await logger.close();
      await exitWithoutHandlers(0);
    }
    logger.info("Stopped");
    return 0;
  } catch (err) {
    logger.error(`csi-proxy failed: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  } finally {
    await logger.close();
  }
}
