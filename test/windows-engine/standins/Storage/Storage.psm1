# Bench stand-in for the Windows-only Storage module's cmdlets that upstream csi-proxy v1.1.3 runs
# one powershell.exe per call (Get-Disk, Get-Partition, Get-Volume, Format-Volume, Resize-Partition),
# over the same world as the CIM stand-ins (../CimCmdlets). Used by bench/windows-engine.ts only.
Set-StrictMode -Version 3
Import-Module (Join-Path $PSScriptRoot '../CimCmdlets/CimCmdlets.psm1')
$ns = 'root/Microsoft/Windows/Storage'

function Get-Disk {
  [CmdletBinding()]
  param([uint32]$Number = [uint32]::MaxValue)
  Get-CimInstance -Namespace $ns -ClassName MSFT_Disk | Where-Object { $Number -eq [uint32]::MaxValue -or $_.Number -eq $Number }
}

function Get-Partition {
  [CmdletBinding()]
  param([uint32]$DiskNumber = [uint32]::MaxValue, [Parameter(ValueFromPipeline)]$Volume)
  process {
    if ($null -ne $Volume) { Get-CimAssociatedInstance -InputObject $Volume -ResultClassName MSFT_Partition; return }
    Get-CimInstance -Namespace $ns -ClassName MSFT_Partition | Where-Object { $DiskNumber -eq [uint32]::MaxValue -or $_.DiskNumber -eq $DiskNumber }
  }
}

function Get-Volume {
  [CmdletBinding()]
  param([string]$UniqueId, [Parameter(ValueFromPipeline)]$Partition)
  process {
    if ($null -ne $Partition) { Get-CimAssociatedInstance -InputObject $Partition -ResultClassName MSFT_Volume; return }
    Get-CimInstance -Namespace $ns -ClassName MSFT_Volume | Where-Object { -not $UniqueId -or $_.UniqueId -like $UniqueId }
  }
}

function Format-Volume {
  [CmdletBinding(SupportsShouldProcess)]
  param([Parameter(ValueFromPipeline)]$InputObject, [string]$FileSystem, [switch]$Force)
  process { $null = Invoke-CimMethod -InputObject $InputObject -MethodName Format -Arguments @{ FileSystem = $FileSystem; Force = [bool]$Force } ; $InputObject }
}

function Resize-Partition {
  [CmdletBinding(SupportsShouldProcess)]
  param([Parameter(ValueFromPipeline)]$InputObject, [uint64]$Size)
  process { $null = Invoke-CimMethod -InputObject $InputObject -MethodName Resize -Arguments @{ Size = $Size } }
}

Export-ModuleMember -Function Get-Disk, Get-Partition, Get-Volume, Format-Volume, Resize-Partition
