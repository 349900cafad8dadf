# Test stand-in for the Windows-only SmbShare module's global-mapping cmdlets, found through
# PSModulePath by the real worker script under pwsh on Linux. Mappings are the world's
# MSFT_SmbGlobalMapping instances (test/windows-engine/standins/CimCmdlets/CimCmdlets.psm1 keeps the
# world); New-/Remove-SmbGlobalMapping append what they were given to $env:CSI_STANDIN_CALLS
# through .NET (the credential's password read with .NET, never passed to a cmdlet).
Set-StrictMode -Version 3
Import-Module (Join-Path $PSScriptRoot '../CimCmdlets/CimCmdlets.psm1')

function Get-SmbGlobalMapping {
  [CmdletBinding()]
  param()
  Get-CimInstance -Namespace 'root/Microsoft/Windows/SMB' -ClassName MSFT_SmbGlobalMapping
}

function New-SmbGlobalMapping {
  [CmdletBinding()]
  param([Parameter(Mandatory)][string]$RemotePath, [pscredential]$Credential, [bool]$RequirePrivacy, [string]$LocalPath)
  MaybeFail $PSCmdlet 'New-SmbGlobalMapping'
  $call = [System.Collections.Generic.Dictionary[string, object]]::new()
  $call['cmdlet'] = 'New-SmbGlobalMapping'; $call['remotePath'] = $RemotePath; $call['requirePrivacy'] = $RequirePrivacy
  $call['user'] = $Credential.UserName; $call['password'] = $Credential.GetNetworkCredential().Password
  [System.IO.File]::AppendAllText($env:CSI_STANDIN_CALLS, [System.Text.Json.JsonSerializer]::Serialize($call, $call.GetType(), [System.Text.Json.JsonSerializerOptions]$null) + [char]10)
}

function Remove-SmbGlobalMapping {
  [CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'High')]
  param([Parameter(Mandatory, ValueFromPipeline)]$InputObject, [switch]$Force)
  process {
    foreach ($m in @($InputObject)) {
      $call = [System.Collections.Generic.Dictionary[string, object]]::new()
      $call['cmdlet'] = 'Remove-SmbGlobalMapping'; $call['remotePath'] = [string]$m.RemotePath; $call['force'] = [bool]$Force
      [System.IO.File]::AppendAllText($env:CSI_STANDIN_CALLS, [System.Text.Json.JsonSerializer]::Serialize($call, $call.GetType(), [System.Text.Json.JsonSerializerOptions]$null) + [char]10)
    }
  }
}

Export-ModuleMember -Function Get-SmbGlobalMapping, New-SmbGlobalMapping, Remove-SmbGlobalMapping
