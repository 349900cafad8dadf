/**
 * Environment every PowerShell worker is started with (added to the daemon's own): telemetry and
 * the update check off, so no worker ever tries to reach outside the machine (pwsh 7 sends
 * telemetry and checks for updates at start unless told not to; Windows PowerShell 5.1 ignores both).
 */
export const POWERSHELL_QUIET_ENV: Readonly<Record<string, string>> = {
  POWERSHELL_TELEMETRY_OPTOUT: "1",
  POWERSHELL_UPDATECHECK: "Off",
};
