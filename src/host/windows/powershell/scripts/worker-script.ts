/**
 * The ONE PowerShell script every worker of the pool runs (passed once, at start, as
 * `-EncodedCommand`). It is a compile-time constant: no request data is ever spliced into it.
 *
 * Constrained Language Mode (WDAC/AppLocker lockdown; under WDAC an -EncodedCommand always runs
 * constrained) refuses the .NET calls the worker needs, so the script checks the language mode
 * first and, when it is not FullLanguage, answers once `{"fatal":{kind,message}}` naming the mode
 * and what an operator can do, and exits; the pool then answers every call FailedPrecondition with
 * that text and starts no further worker (powershell-pool.ts).
 *
 * Protocol (one JSON value per line, ASCII only — non-ASCII characters travel as \uXXXX escapes,
 * so console code pages never matter):
 *   stdin  ← {"id":<n>,"op":"<name>","args":{...}}
 *   stdout → @@CSIPROXY@@ {"ready":true,"pid":<n>}                         once, after start-up
 *   stdout → @@CSIPROXY@@ {"id":<n>,"ok":true,"result":<json>}
 *   stdout → @@CSIPROXY@@ {"id":<n>,"ok":false,"error":{...}}              see ErrorInfo below
 * Lines without the marker (anything a cmdlet might print) are ignored by the pool.
 *
 * A request line is parsed without binding it to any cmdlet parameter (ReadRequest: .NET's
 * System.Text.Json on pwsh 7, JsonObject.ConvertFromJson on Windows PowerShell 5.1): module logging
 * (event 4103) records every cmdlet's parameter binding with its value, and the line carries the
 * SMB password and CHAP secrets. System.Text.Json also keeps strings that look like ISO dates
 * strings (pwsh 7's ConvertFrom-Json turns them into DateTime). The script's own functions are not
 * module members, so their parameters are not logged (test/windows-engine/secret-logging.test.ts).
 *
 * `op` only selects one of the constant script blocks of `$ops` (a hashtable lookup); `args` is
 * bound as data (`$a.volumeId`…), compared with exact string equality after enumerating CIM
 * instances, or cast to [uint32]/[uint64]. No value reaches Invoke-Expression, a WQL text, a
 * -Filter, or a wildcard-capable cmdlet parameter (Get-Volume -UniqueId globs!).
 *
 * CIM classes (namespace root/Microsoft/Windows/Storage) and methods are those of upstream
 * csi-proxy master (docs/upstream-behaviour.md: Disk, Volume), called with Invoke-CimMethod.
 */
/**
 * The protocol plumbing every worker script starts with (stdin/stdout set-up, Send, Fail,
 * ErrorInfo, Call). Shared with the SMB/iSCSI/System worker script
 * (worker-ops-smb-iscsi-system.ts), which has its own pool: both scripts together would exceed
 * CreateProcess's 32767-character command line once base64-encoded.
 */
export const WORKER_PRELUDE = String.raw`if ($ExecutionContext.SessionState.LanguageMode -ne 'FullLanguage') {
  '@@CSIPROXY@@ ' + (ConvertTo-Json -Compress -InputObject @{ fatal = @{ kind = 'LanguageMode'; message = ('PowerShell runs in ' + $ExecutionContext.SessionState.LanguageMode + ' mode (Constrained Language Mode: a WDAC or AppLocker policy, or __PSLockdownPolicy, locks PowerShell down on this node); the csi-proxy worker script needs FullLanguage, so disk, volume, SMB, iSCSI and BIOS calls cannot run. An operator can exempt the powershell.exe that csi-proxy starts from the lockdown (or run csi-proxy on a node without it), then restart csi-proxy') } })
  exit 3
}
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$WarningPreference = 'SilentlyContinue'
$VerbosePreference = 'SilentlyContinue'
$ns = 'root/Microsoft/Windows/Storage'
$stdin = New-Object System.IO.StreamReader([Console]::OpenStandardInput(), (New-Object System.Text.UTF8Encoding($false)))
$stdout = New-Object System.IO.StreamWriter([Console]::OpenStandardOutput(), (New-Object System.Text.UTF8Encoding($false)))
$stdout.AutoFlush = $true
function Send($obj) {
  $json = ConvertTo-Json -InputObject $obj -Depth 8 -Compress
  $json = [regex]::Replace($json, '[^\x20-\x7e]', { param($m) '\u{0:x4}' -f [int][char]$m.Value })
  $stdout.Write('@@CSIPROXY@@ ' + $json + [char]10)
}
function Fail([string]$kind, [string]$message, $returnValue) {
  $ex = New-Object System.Exception($message)
  $ex.Data['csiproxy.kind'] = $kind
  if ($null -ne $returnValue) { $ex.Data['csiproxy.returnValue'] = [int64]$returnValue }
  throw $ex
}
function ErrorInfo($e) {
  $ex = $e.Exception
  if ($ex -is [System.Management.Automation.MethodInvocationException] -and $ex.InnerException) { $ex = $ex.InnerException }
  $info = @{ message = [string]$ex.Message; type = $ex.GetType().FullName; category = [string]$e.CategoryInfo.Category; fqid = [string]$e.FullyQualifiedErrorId }
  if ($ex.Data.Contains('csiproxy.kind')) { $info.kind = [string]$ex.Data['csiproxy.kind'] }
  if ($ex.Data.Contains('csiproxy.returnValue')) { $info.returnValue = [int64]$ex.Data['csiproxy.returnValue'] }
  if ($ex.PSObject.Properties['NativeErrorCode']) { $info.native = [string]$ex.NativeErrorCode }
  if ($ex.PSObject.Properties['StatusCode']) { $info.statusCode = [int64]$ex.StatusCode }
  if ($ex.HResult) { $info.hresult = [int64]$ex.HResult }
  if ($ex.PSObject.Properties['ErrorData'] -and $ex.ErrorData) {
    foreach ($k in 'MessageId', 'error_Code') { $p = $ex.ErrorData.CimInstanceProperties[$k]; if ($p -and $null -ne $p.Value) { $info[$k] = [string]$p.Value } }
  }
  $info
}
function FromJson($e) {
  switch ($e.ValueKind.ToString()) {
    'Object' { $h = @{}; foreach ($p in $e.EnumerateObject()) { $h[$p.Name] = FromJson $p.Value }; $h }
    'Array' { , @(foreach ($x in $e.EnumerateArray()) { FromJson $x }) }
    'String' { $e.GetString() }
    'Number' { $n = [int64]0; if ($e.TryGetInt64([ref]$n)) { $n } else { $e.GetDouble() } }
    'True' { $true }
    'False' { $false }
    default { $null }
  }
}
function ReadRequest([string]$text) {
  if ($PSVersionTable.PSEdition -eq 'Core') {
    $doc = [System.Text.Json.JsonDocument]::Parse($text)
    try { FromJson $doc.RootElement } finally { $doc.Dispose() }
  } else {
    $perr = $null
    $r = [Microsoft.PowerShell.Commands.JsonObject]::ConvertFromJson($text, [ref]$perr)
    if ($null -ne $perr) { throw $perr.Exception }
    $r
  }
}
function Call($inst, [string]$method, $arguments, $ok) {
  if ($null -eq $arguments) { $arguments = @{} }
  $r = Invoke-CimMethod -InputObject $inst -MethodName $method -Arguments $arguments
  $rv = [int64]$r.ReturnValue
  if ($rv -ne 0 -and -not (@($ok) -contains $rv)) { Fail 'method' ($inst.CimClass.CimClassName + '.' + $method + ' failed: code=' + $rv) $rv }
  $r
}
`;

/** The request loop every worker script ends with (after its `$ops` table). */
export const WORKER_LOOP = String.raw`Send @{ ready = $true; pid = $PID }
while ($null -ne ($line = $stdin.ReadLine())) {
  $id = $null
  try {
    $req = ReadRequest $line
    $id = $req.id
    $op = $ops[[string]$req.op]
    if ($null -eq $op) { Fail 'UnknownOp' ('unknown op ' + [string]$req.op) }
    $result = & $op $req.args
    Send @{ id = $id; ok = $true; result = $result }
  } catch {
    Send @{ id = $id; ok = $false; error = (ErrorInfo $_) }
  }
}
`;

/**
 * The text a worker is sent: each line's leading indentation dropped, which PowerShell ignores outside
 * multi-line strings (the scripts have none: script-lengths.test.ts checks), to spare command-line
 * characters (-EncodedCommand costs 8/3 per script character).
 */
export const unindented = (script: string): string => script.replace(/^[ \t]+/gm, "");

export const WORKER_SCRIPT = unindented(WORKER_PRELUDE + String.raw`function Disk($a) {
  $n = [uint32]$a.diskNumber
  $d = @(Get-CimInstance -Namespace $ns -ClassName MSFT_Disk | Where-Object { $_.Number -eq $n })
  if ($d.Count -eq 0) { Fail 'NotFound' ('disk ' + $n + ' not found') }
  $d[0]
}
function Volume($a) {
  $id = [string]$a.volumeId
  $v = @(Get-CimInstance -Namespace $ns -ClassName MSFT_Volume | Where-Object { [string]::Equals([string]$_.UniqueId, $id, [StringComparison]::OrdinalIgnoreCase) })
  if ($v.Count -eq 0) { Fail 'NotFound' ('volume ' + $id + ' not found') }
  $v[0]
}
function VolumePartition($v) {
  $p = @(Get-CimAssociatedInstance -InputObject $v -ResultClassName MSFT_Partition)
  if ($p.Count -eq 0) { Fail 'NotFound' ('no partition holds volume ' + [string]$v.UniqueId) }
  $p[0]
}
function DiskInfo($d) {
  @{ number = [int64]$d.Number; location = [string]$d.Location; path = [string]$d.Path; serialNumber = $d.SerialNumber; size = [string]$d.Size; isOffline = [bool]$d.IsOffline; partitionStyle = [int]$d.PartitionStyle }
}
function AccessPaths($p) {
  $paths = @(@($p.AccessPaths) | Where-Object { $_ -and -not ([string]$_).StartsWith('\\?\Volume{', [StringComparison]::OrdinalIgnoreCase) } | ForEach-Object { [string]$_ })
  if ($p.DriveLetter -and [int][char]$p.DriveLetter -ne 0) { $dl = [string]$p.DriveLetter + ':\'; if (-not ($paths -contains $dl)) { $paths = @($dl) + $paths } }
  $paths
}
function PartitionInfo($p) {
  @{ diskNumber = [int64]$p.DiskNumber; partitionNumber = [int64]$p.PartitionNumber; gptType = [string]$p.GptType; mbrType = $p.MbrType; size = [string]$p.Size; offset = [string]$p.Offset; driveLetter = [string]$p.DriveLetter; accessPaths = @(AccessPaths $p) }
}
function VolumeInfo($v) {
  @{ uniqueId = [string]$v.UniqueId; fileSystemType = [int]$v.FileSystemType; fileSystem = [string]$v.FileSystem; size = [string]$v.Size; sizeRemaining = [string]$v.SizeRemaining }
}
function VolumeFacts($v, $p) {
  @{ fileSystemType = [string][int]$v.FileSystemType; accessPaths = (@(AccessPaths $p) -join ', '); diskNumber = [string]$p.DiskNumber; partitionNumber = [string]$p.PartitionNumber; offset = [string]$p.Offset; size = [string]$p.Size; isOffline = [string][bool](Disk @{ diskNumber = $p.DiskNumber }).IsOffline }
}
function DiskFacts($d) {
  @{ path = [string]$d.Path; size = [string]$d.Size; isOffline = [string][bool]$d.IsOffline; partitionStyle = [string][int]$d.PartitionStyle }
}
function Unchanged([string]$what, $expected, $now) {
  if ($null -eq $expected) { Fail 'FailedPrecondition' ('refusing to ' + $what + ': the facts it was decided on were not given') }
  $changed = @()
  foreach ($k in @($now.Keys)) {
    $was = [string]$expected.$k
    $is = [string]$now[$k]
    if ($was -cne $is) { $changed += ($k + ' ' + $was + ' -> ' + $is) }
  }
  if ($changed.Count -gt 0) { Fail 'FailedPrecondition' ('refusing to ' + $what + ': it changed since it was looked up (' + ($changed -join '; ') + ')') }
}
$ops = @{
  'ping' = { param($a) @{ pong = $true; psVersion = $PSVersionTable.PSVersion.ToString(); culture = [cultureinfo]::CurrentCulture.Name; echo = $a.echo } }
  'disk.list' = { param($a) @(Get-CimInstance -Namespace $ns -ClassName MSFT_Disk | ForEach-Object { DiskInfo $_ }) }
  'disk.get' = { param($a) DiskInfo (Disk $a) }
  'disk.initialize' = { param($a) $d = Disk $a; Unchanged ('initialize disk ' + [string]$d.Number) $a.expect (DiskFacts $d)
    $null = Call $d 'Initialize' @{ PartitionStyle = [uint16]$a.partitionStyle }; $null }
  'disk.partitions' = { param($a) $n = [uint32]$a.diskNumber; @(Get-CimInstance -Namespace $ns -ClassName MSFT_Partition | Where-Object { $_.DiskNumber -eq $n } | ForEach-Object { PartitionInfo $_ }) }
  'disk.createPartition' = { param($a)
    $p = @{ UseMaximumSize = $true; AssignDriveLetter = $false; IsHidden = $false; IsActive = $false }
    if ($a.gptType) { $p.GptType = [string]$a.gptType }
    $d = Disk $a; Unchanged ('add a partition to disk ' + [string]$d.Number) $a.expect (DiskFacts $d)
    $null = Call $d 'CreatePartition' $p; $null }
  'disk.refresh' = { param($a) $null = Call (Disk $a) 'Refresh'; $null }
  'disk.setOnline' = { param($a) $m = 'Offline'; if ([bool]$a.online) { $m = 'Online' }; $d = Disk $a
    Unchanged ('set disk ' + [string]$d.Number + ' ' + $m.ToLowerInvariant()) $a.expect (DiskFacts $d)
    $null = Call $d $m; $null }
  'disk.rescan' = { param($a) $r = Invoke-CimMethod -Namespace $ns -ClassName MSFT_StorageSetting -MethodName UpdateHostStorageCache
    if ([int64]$r.ReturnValue -ne 0) { Fail 'method' ('MSFT_StorageSetting.UpdateHostStorageCache failed: code=' + $r.ReturnValue) $r.ReturnValue }; $null }
  'partition.online' = { param($a) $n = [uint32]$a.diskNumber; $pn = [uint32]$a.partitionNumber
    $p = @(Get-CimInstance -Namespace $ns -ClassName MSFT_Partition | Where-Object { $_.DiskNumber -eq $n -and $_.PartitionNumber -eq $pn })
    if ($p.Count -eq 0) { Fail 'NotFound' ('partition ' + $pn + ' of disk ' + $n + ' not found') }
    $null = Call $p[0] 'Online'; $null }
  'volume.listOnDisk' = { param($a) $n = [uint32]$a.diskNumber; $pn = [uint32]$a.partitionNumber
    @(Get-CimInstance -Namespace $ns -ClassName MSFT_Partition | Where-Object { $_.DiskNumber -eq $n -and ($pn -eq 0 -or $_.PartitionNumber -eq $pn) } |
      ForEach-Object { Get-CimAssociatedInstance -InputObject $_ -ResultClassName MSFT_Volume } | ForEach-Object { [string]$_.UniqueId }) }
  'volume.get' = { param($a) VolumeInfo (Volume $a) }
  'volume.facts' = { param($a) $v = Volume $a; $p = VolumePartition $v; @{ volume = VolumeInfo $v; partition = PartitionInfo $p; facts = VolumeFacts $v $p } }
  'volume.format' = { param($a) $v = Volume $a; $p = VolumePartition $v
    Unchanged ('format volume ' + [string]$v.UniqueId) $a.expect (VolumeFacts $v $p)
    $null = Call $v 'Format' @{ FileSystem = 'NTFS'; FileSystemLabel = ''; Full = $false; Force = $false }; $null }
  'volume.flush' = { param($a) $null = Call (Volume $a) 'Flush'; $null }
  'volume.supportedSize' = { param($a) $r = Call (VolumePartition (Volume $a)) 'GetSupportedSize'; @{ sizeMin = [string]$r.SizeMin; sizeMax = [string]$r.SizeMax } }
  'volume.resize' = { param($a) $v = Volume $a; $p = VolumePartition $v
    Unchanged ('resize volume ' + [string]$v.UniqueId) $a.expect (VolumeFacts $v $p)
    $null = Call $p 'Resize' @{ Size = [uint64][string]$a.size }
    $d = @(Get-CimAssociatedInstance -InputObject $p -ResultClassName MSFT_Disk); if ($d.Count -gt 0) { $null = Call $d[0] 'Refresh' }; $null }
  'volume.busy' = { param($a) $v = Volume $a
    $j = @(Get-CimInstance -Namespace $ns -ClassName MSFT_StorageJob | Where-Object { [int]$_.JobState -ge 2 -and [int]$_.JobState -le 4 })
    @{ runningJobs = [int]$j.Count } }
}
` + WORKER_LOOP);

/** Every op the worker script defines (the pool refuses any other name before sending). */
export const WORKER_OPS = [
  "ping",
  "disk.list",
  "disk.get",
  "disk.initialize",
  "disk.partitions",
  "disk.createPartition",
  "disk.refresh",
  "disk.setOnline",
  "disk.rescan",
  "partition.online",
  "volume.listOnDisk",
  "volume.get",
  "volume.facts",
  "volume.format",
  "volume.flush",
  "volume.supportedSize",
  "volume.resize",
  "volume.busy",
] as const;

export type WorkerOp = (typeof WORKER_OPS)[number];

/** `powershell.exe` arguments: the script as -EncodedCommand (UTF-16LE, base64), so no quoting rules apply. */
export function powershellArgs(script: string = WORKER_SCRIPT): string[] {
  // -InputFormat None: powershell.exe must not read (and wait for the end of) the redirected stdin
  // itself; the script reads it through [Console]::OpenStandardInput().
  // -OutputFormat Text: the worker's stderr (an exit message) reaches callers as text, not CLIXML.
  return ["-NoLogo", "-NoProfile", "-NonInteractive", "-InputFormat", "None", "-OutputFormat", "Text", "-ExecutionPolicy", "Bypass", "-EncodedCommand", Buffer.from(script, "utf16le").toString("base64")];
}
