/**
 * The worker script of the SMB, iSCSI and System hosts: one compile-time constant, run by its own
 * PowerShell worker pool (created in src/compose/windows.ts) with the same protocol as the storage
 * workers (scripts/worker-script.ts: the same prelude and request loop; only the `$ops` table
 * differs). A second script and pool because the two scripts together, base64-encoded as
 * -EncodedCommand, would exceed CreateProcess's 32767-character command line; the split also keeps
 * a hung SMB probe from delaying disk and volume calls.
 *
 * Same rules as the storage ops: `args` (`$a`) is only data — cast to [uint16]/[bool]/[string],
 * compared with [string]::Equals(…, OrdinalIgnoreCase) after enumerating instances, or put into a
 * CIM method's argument hashtable. Never a WQL text, a -Filter, or a wildcard-capable parameter
 * (Get-/Remove-SmbGlobalMapping -RemotePath are not used: the instances are enumerated and
 * compared instead).
 *
 * Secrets (`smb.newMapping` password, `iscsi.connect` chapSecret, `iscsi.setMutualChapSecret`
 * secret) arrive only inside the JSON request line on stdin. They never become a cmdlet argument
 * that PowerShell module logging (event 4103, ParameterBinding) would record as text:
 * - the SMB password becomes a SecureString built character by character with .NET calls, then a
 *   PSCredential ([PSCredential]::new, not New-Object), given to New-SmbGlobalMapping -Credential
 *   (logged, if at all, as "System.Management.Automation.PSCredential");
 * - CHAP secrets go into the -Arguments hashtable of Invoke-CimMethod (logged as
 *   "System.Collections.Hashtable").
 * Script block logging records only this constant text.
 *
 * Classes and methods are upstream csi-proxy master's (docs/upstream-behaviour.md: SMB, iSCSI, System):
 * MSFT_SmbGlobalMapping (root/Microsoft/Windows/SMB); MSFT_iSCSITargetPortal, MSFT_iSCSITarget,
 * MSFT_iSCSISession, MSFT_iSCSIConnection and their associations to MSFT_Disk
 * (root/Microsoft/Windows/Storage); CIM_BIOSElement (root/cimv2).
 *
 * NOTE: no `${` anywhere (the text is a JavaScript template literal).
 */
import { WORKER_LOOP, WORKER_PRELUDE } from "./worker-script.ts";

export const SMB_ISCSI_SYSTEM_SCRIPT = WORKER_PRELUDE + String.raw`$smbNs = 'root/Microsoft/Windows/SMB'
function IntOrNull($v) { if ($null -eq $v) { $null } else { [int64]$v } }
function CallStatic([string]$namespace, [string]$class, [string]$method, $arguments) {
  $r = Invoke-CimMethod -Namespace $namespace -ClassName $class -MethodName $method -Arguments $arguments
  $rv = [int64]$r.ReturnValue
  if ($rv -ne 0) { Fail 'method' ($class + '.' + $method + ' failed: code=' + $rv) $rv }
  $r
}
function SmbMappings($a) {
  $rp = [string]$a.remotePath
  @(Get-SmbGlobalMapping | Where-Object { [string]::Equals([string]$_.RemotePath, $rp, [StringComparison]::OrdinalIgnoreCase) })
}
function SecretCredential([string]$user, [string]$secret) {
  $ss = [System.Security.SecureString]::new()
  foreach ($c in $secret.ToCharArray()) { $ss.AppendChar($c) }
  $ss.MakeReadOnly()
  [System.Management.Automation.PSCredential]::new($user, $ss)
}
function IscsiPortal($a) {
  $addr = [string]$a.address
  $port = [uint16]$a.port
  $p = @(Get-CimInstance -Namespace $ns -ClassName MSFT_iSCSITargetPortal | Where-Object { [string]::Equals([string]$_.TargetPortalAddress, $addr, [StringComparison]::OrdinalIgnoreCase) -and [int64]$_.TargetPortalPortNumber -eq $port })
  if ($p.Count -eq 0) { return $null }
  $p[0]
}
function PortalText($a) { [string]$a.address + ':' + [string][uint16]$a.port }
function IscsiTarget($a) {
  $p = IscsiPortal $a
  if ($null -eq $p) { return $null }
  $iqn = [string]$a.iqn
  $t = @(Get-CimAssociatedInstance -InputObject $p -Association MSFT_iSCSITargetToiSCSITargetPortal -ResultClassName MSFT_iSCSITarget | Where-Object { [string]::Equals([string]$_.NodeAddress, $iqn, [StringComparison]::OrdinalIgnoreCase) })
  if ($t.Count -eq 0) { return $null }
  $t[0]
}
function KnownTarget($a) {
  $t = IscsiTarget $a
  if ($null -eq $t) { Fail 'NotFound' ('target ' + [string]$a.iqn + ' behind portal ' + (PortalText $a) + ' not found') }
  $t
}
$ops = @{
  'ping' = { param($a) @{ pong = $true; psVersion = $PSVersionTable.PSVersion.ToString(); culture = [cultureinfo]::CurrentCulture.Name; echo = $a.echo } }
  'smb.getMapping' = { param($a) @(SmbMappings $a | ForEach-Object { @{ remotePath = [string]$_.RemotePath; localPath = [string]$_.LocalPath; status = (IntOrNull $_.Status) } }) }
  'smb.listMappings' = { param($a) @(Get-SmbGlobalMapping | ForEach-Object { @{ remotePath = [string]$_.RemotePath; status = (IntOrNull $_.Status) } }) }
  'smb.newMapping' = { param($a)
    $rp = [string]$a.remotePath
    $privacy = [bool]$a.requirePrivacy
    $user = [string]$a.username
    if ($user -eq '') {
      $null = CallStatic $smbNs 'MSFT_SmbGlobalMapping' 'Create' @{ RemotePath = $rp; RequirePrivacy = $privacy }
    } else {
      $null = New-SmbGlobalMapping -RemotePath $rp -Credential (SecretCredential $user ([string]$a.password)) -RequirePrivacy $privacy
    }
    $null }
  'smb.removeMapping' = { param($a) $m = @(SmbMappings $a)
    if ($m.Count -eq 0) { Fail 'NotFound' ('no SMB global mapping for remote path ' + [string]$a.remotePath) }
    Remove-SmbGlobalMapping -InputObject $m -Force -Confirm:$false
    $null }
  'smb.testPath' = { param($a)
    try { $null = [System.IO.File]::GetAttributes([string]$a.path); $true }
    catch {
      $e = $_.Exception
      if ($e.InnerException) { $e = $e.InnerException }
      if (@(2, 3, 123) -contains ([int64]$e.HResult -band 0xFFFF)) { $false } else { throw }
    } }
  'iscsi.listPortals' = { param($a) @(Get-CimInstance -Namespace $ns -ClassName MSFT_iSCSITargetPortal | ForEach-Object { @{ address = [string]$_.TargetPortalAddress; port = (IntOrNull $_.TargetPortalPortNumber) } }) }
  'iscsi.addPortal' = { param($a) $null = CallStatic $ns 'MSFT_iSCSITargetPortal' 'New' @{ TargetPortalAddress = [string]$a.address; TargetPortalPortNumber = [uint16]$a.port }; $null }
  'iscsi.removePortal' = { param($a) $p = IscsiPortal $a
    if ($null -eq $p) { Fail 'NotFound' ('target portal ' + (PortalText $a) + ' not found') }
    $null = Call $p 'Remove' @{ TargetPortalPortNumber = [uint16]$p.TargetPortalPortNumber; TargetPortalAddress = [string]$p.TargetPortalAddress }
    $null }
  'iscsi.discover' = { param($a) $p = IscsiPortal $a
    if ($null -eq $p) { Fail 'NotFound' ('target portal ' + (PortalText $a) + ' not found') }
    @(Get-CimAssociatedInstance -InputObject $p -Association MSFT_iSCSITargetToiSCSITargetPortal -ResultClassName MSFT_iSCSITarget | ForEach-Object { [string]$_.NodeAddress }) }
  'iscsi.getTarget' = { param($a) $t = IscsiTarget $a
    if ($null -eq $t) { $null } else { @{ nodeAddress = [string]$t.NodeAddress; connected = [bool]$t.IsConnected } } }
  'iscsi.connect' = { param($a) $t = KnownTarget $a
    $p = @{ NodeAddress = [string]$t.NodeAddress; TargetPortalAddress = [string]$a.address; TargetPortalPortNumber = [uint16]$a.port; AuthenticationType = [string]$a.authType }
    if ([string]$a.chapUsername -ne '') { $p.ChapUsername = [string]$a.chapUsername }
    if ([string]$a.chapSecret -ne '') { $p.ChapSecret = [string]$a.chapSecret }
    $null = CallStatic $ns 'MSFT_iSCSITarget' 'Connect' $p
    $null }
  'iscsi.disconnect' = { param($a) $t = KnownTarget $a
    foreach ($s in @(Get-CimAssociatedInstance -InputObject $t -Association MSFT_iSCSITargetToiSCSISession -ResultClassName MSFT_iSCSISession)) {
      if ([bool]$s.IsPersistent) { $null = Call $s 'Unregister' }
      $null = Call $t 'Disconnect' @{ SessionIdentifier = [string]$s.SessionIdentifier }
    }
    $null }
  'iscsi.disks' = { param($a) $t = KnownTarget $a
    @(Get-CimAssociatedInstance -InputObject $t -Association MSFT_iSCSITargetToiSCSIConnection -ResultClassName MSFT_iSCSIConnection |
      ForEach-Object { Get-CimAssociatedInstance -InputObject $_ -Association MSFT_iSCSIConnectionToDisk -ResultClassName MSFT_Disk } | ForEach-Object { [int64]$_.Number }) }
  'iscsi.setMutualChapSecret' = { param($a) $null = CallStatic $ns 'MSFT_iSCSISession' 'SetCHAPSecret' @{ ChapSecret = [string]$a.secret }; $null }
  'system.biosSerial' = { param($a) $b = @(Get-CimInstance -Namespace 'root/cimv2' -ClassName CIM_BIOSElement)
    if ($b.Count -eq 0) { $null } else { @{ serialNumber = $b[0].SerialNumber } } }
}
` + WORKER_LOOP;

/** Every op {@link SMB_ISCSI_SYSTEM_SCRIPT} defines, in order (its pool refuses any other name before sending). */
export const SMB_ISCSI_SYSTEM_OPS = [
  "ping",
  "smb.getMapping",
  "smb.listMappings",
  "smb.newMapping",
  "smb.removeMapping",
  "smb.testPath",
  "iscsi.listPortals",
  "iscsi.addPortal",
  "iscsi.removePortal",
  "iscsi.discover",
  "iscsi.getTarget",
  "iscsi.connect",
  "iscsi.disconnect",
  "iscsi.disks",
  "iscsi.setMutualChapSecret",
  "system.biosSerial",
] as const;

/**
 * The request fields that carry a secret, per op. Only these ops ever receive a secret; the hosts
 * also remove these values from any error text before it leaves them.
 */
export const SECRET_FIELDS: Readonly<Record<string, readonly string[]>> = {
  "smb.newMapping": ["password"],
  "iscsi.connect": ["chapSecret"],
  "iscsi.setMutualChapSecret": ["secret"],
};
