/**
 * Environment every PowerShell worker is started with (added to the daemon's own): telemetry and
 * the update check off, so no worker ever tries to reach outside the machine (pwsh 7 sends
 * telemetry and checks for updates at start unless told not to), and no colour escapes in what it
 * writes to stderr (pwsh 7 colours error text unless NO_COLOR is set; that text reaches callers in
 * a start-up failure). Windows PowerShell 5.1 ignores all three.
 */
export const POWERSHELL_QUIET_ENV: Readonly<Record<string, string>> = {
  POWERSHELL_TELEMETRY_OPTOUT: "1",
  POWERSHELL_UPDATECHECK: "Off",
  NO_COLOR: "1",
};
