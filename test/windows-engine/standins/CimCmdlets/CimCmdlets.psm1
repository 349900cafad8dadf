# Test stand-in for the Windows-only CimCmdlets module (Get-CimInstance, Get-CimAssociatedInstance,
# Invoke-CimMethod), found through PSModulePath by the real worker script under pwsh on Linux.
# The world (instances, associations, method results, errors) is a JSON file ($env:CSI_STANDIN_WORLD)
# the test writes; it is read afresh on every call. Instances carry CIM type names and CIM-typed
# values (the property types and method signatures come from test/windows/cim-signatures.ts, copied
# into the world). Every method call is checked against that table and appended to
# $env:CSI_STANDIN_CALLS as one JSON line (through .NET, never a cmdlet: a stand-in never passes a
# secret to a cmdlet). Errors are ErrorRecords around a CimException-shaped exception.
Set-StrictMode -Version 3

class CimException : System.Exception {
  [string]$NativeErrorCode
  [uint32]$StatusCode
  $ErrorData
  CimException([string]$message, [string]$native, [uint32]$status, [int]$hresult, $errorData) : base($message) {
    $this.NativeErrorCode = $native
    $this.StatusCode = $status
    $this.HResult = $hresult
    $this.ErrorData = $errorData
  }
}

function World { [System.Text.Json.JsonDocument]::Parse([System.IO.File]::ReadAllText($env:CSI_STANDIN_WORLD)).RootElement }

# The member `name` of JSON object `el`, or $null (JsonElement.TryGetProperty's overloads are ambiguous to PowerShell).
function Member($el, [string]$name) {
  if ($null -eq $el -or $el.ValueKind.ToString() -ne 'Object') { return $null }
  foreach ($p in $el.EnumerateObject()) { if ($p.Name -ceq $name) { return $p.Value } }
  $null
}

# A Dictionary for System.Text.Json (a hashtable cast to it would be read as property setters).
function Dict([hashtable]$h) { $d = [System.Collections.Generic.Dictionary[string, object]]::new(); foreach ($k in $h.Keys) { $d[[string]$k] = $h[$k] }; , $d }

function JsonValue($el) {
  switch ($el.ValueKind.ToString()) {
    'String' { return $el.GetString() }
    'Number' { return $el.GetRawText() }
    'True' { return $true }
    'False' { return $false }
    'Null' { return $null }
    'Array' { return , @($el.EnumerateArray() | ForEach-Object { JsonValue $_ }) }
    default { return $el }
  }
}

function Typed([string]$cimType, $value) {
  if ($null -eq $value) { return $null }
  switch ($cimType) {
    'UInt16' { return [uint16][string]$value }
    'UInt32' { return [uint32][string]$value }
    'UInt64' { return [uint64][string]$value }
    'Boolean' { return [bool]$value }
    'Char16' { return [char][uint16][string]$value }
    'String[]' { return [string[]]@($value) }
    default { return [string]$value }
  }
}

function NewError($spec, [string]$target) {
  $data = $null
  if ($null -ne (Member $spec 'MessageId')) {
    $props = @{}
    foreach ($k in 'MessageId', 'error_Code') { $v = Member $spec $k; if ($null -ne $v) { $props[$k] = [pscustomobject]@{ Name = $k; Value = [string](JsonValue $v) } } }
    $data = [pscustomobject]@{ CimInstanceProperties = $props }
  }
  $ex = [CimException]::new($spec.GetProperty('message').GetString(), $spec.GetProperty('native').GetString(), [uint32]$spec.GetProperty('status').GetRawText(), [int]$spec.GetProperty('hresult').GetRawText(), $data)
  $cat = [System.Management.Automation.ErrorCategory]$spec.GetProperty('category').GetString()
  [System.Management.Automation.ErrorRecord]::new($ex, $spec.GetProperty('fqid').GetString(), $cat, $target)
}

# Raises the world's error for `key` when it has one: terminating (ThrowTerminatingError) or not (WriteError).
function MaybeFail($cmdlet, [string]$key) {
  $spec = Member (Member (World) 'errors') $key
  if ($null -eq $spec) { return }
  $rec = NewError $spec $key
  $t = Member $spec 'terminating'
  if ($null -ne $t -and -not $t.GetBoolean()) { $cmdlet.WriteError($rec); return }
  $cmdlet.ThrowTerminatingError($rec)
}

function Instance($w, $el) {
  $class = $el.GetProperty('class').GetString()
  $ns = $el.GetProperty('ns').GetString()
  $types = $w.GetProperty('classes').GetProperty($class).GetProperty('properties')
  $o = [pscustomobject]@{}
  $o.PSObject.TypeNames.Insert(0, 'Microsoft.Management.Infrastructure.CimInstance#' + $ns + '/' + $class)
  foreach ($p in $el.GetProperty('props').EnumerateObject()) {
    $type = 'String'; $te = Member $types $p.Name
    if ($null -ne $te) { $type = $te.GetString() }
    $o.PSObject.Properties.Add([psnoteproperty]::new($p.Name, (Typed $type (JsonValue $p.Value))))
  }
  $o.PSObject.Properties.Add([psnoteproperty]::new('CimClass', [pscustomobject]@{ CimClassName = $class; CimSystemProperties = [pscustomobject]@{ Namespace = $ns } }))
  $o.PSObject.Properties.Add([psnoteproperty]::new('__StandinId', $el.GetProperty('id').GetString()))
  $o
}

function Get-CimInstance {
  [CmdletBinding()]
  param([Parameter(Mandatory, Position = 0)][string]$ClassName, [string]$Namespace = 'root/cimv2')
  MaybeFail $PSCmdlet ('Get-CimInstance ' + $ClassName)
  $w = World
  foreach ($el in $w.GetProperty('instances').EnumerateArray()) {
    if ($el.GetProperty('class').GetString() -ceq $ClassName -and $el.GetProperty('ns').GetString() -ceq $Namespace) { Instance $w $el }
  }
}

function Get-CimAssociatedInstance {
  [CmdletBinding()]
  param([Parameter(Mandatory, ValueFromPipeline)]$InputObject, [string]$ResultClassName, [string]$Association)
  process {
    MaybeFail $PSCmdlet ('Get-CimAssociatedInstance ' + $ResultClassName)
    $w = World
    $from = [string]$InputObject.__StandinId
    $ids = @()
    foreach ($a in $w.GetProperty('links').EnumerateArray()) {
      $pair = @($a.EnumerateArray()); $x = $pair[0].GetString(); $y = $pair[1].GetString()
      if ($x -ceq $from) { $ids += $y } elseif ($y -ceq $from) { $ids += $x }
    }
    foreach ($el in $w.GetProperty('instances').EnumerateArray()) {
      if (($ids -ccontains $el.GetProperty('id').GetString()) -and (-not $ResultClassName -or $el.GetProperty('class').GetString() -ceq $ResultClassName)) { Instance $w $el }
    }
  }
}

function Invoke-CimMethod {
  [CmdletBinding(DefaultParameterSetName = 'Instance')]
  param(
    [Parameter(Mandatory, ParameterSetName = 'Instance')]$InputObject,
    [Parameter(Mandatory, ParameterSetName = 'Class')][string]$ClassName,
    [Parameter(ParameterSetName = 'Class')][string]$Namespace = 'root/cimv2',
    [Parameter(Mandatory)][string]$MethodName,
    [System.Collections.IDictionary]$Arguments)
  $w = World
  $static = $PSCmdlet.ParameterSetName -eq 'Class'
  $id = $null
  if (-not $static) { $ClassName = [string]$InputObject.CimClass.CimClassName; $id = [string]$InputObject.__StandinId }
  $violation = $null
  $cls = Member $w.GetProperty('classes') $ClassName; $m = Member (Member $cls 'methods') $MethodName
  if ($null -eq $cls) { $violation = 'unknown class ' + $ClassName }
  elseif ($null -eq $m) { $violation = 'unknown method ' + $ClassName + '.' + $MethodName }
  elseif ($m.GetProperty('static').GetBoolean() -ne $static) { $violation = $ClassName + '.' + $MethodName + ' static=' + $m.GetProperty('static').GetBoolean() + ' called static=' + $static }
  $seen = [System.Collections.Generic.Dictionary[string, object]]::new()
  if ($null -ne $Arguments) {
    foreach ($k in $Arguments.Keys) {
      $v = $Arguments[$k]
      $tn = if ($null -eq $v) { 'null' } else { $v.GetType().Name }
      $seen[[string]$k] = Dict @{ type = $tn; value = [string]$v }
      if ($null -eq $violation) {
        $want = Member $m.GetProperty('in') ([string]$k)
        if ($null -eq $want) { $violation = 'argument ' + $k + ' is not an [in] parameter of ' + $ClassName + '.' + $MethodName }
        else {
          $net = @{ UInt16 = 'UInt16'; UInt32 = 'UInt32'; UInt64 = 'UInt64'; Boolean = 'Boolean'; String = 'String'; MSFT_Credential = 'PSCredential' }[$want.GetString()]
          if ($tn -ne $net) { $violation = 'argument ' + $k + ' of ' + $ClassName + '.' + $MethodName + ' is ' + $tn + ', CIM type ' + $want.GetString() }
        }
      }
    }
  }
  $call = Dict @{ cmdlet = 'Invoke-CimMethod'; pid = $PID; class = $ClassName; method = $MethodName; static = $static; instance = $id; arguments = $seen; violation = $violation }
  # .NET calls only: a module function's parameters are logged (module logging), and the arguments may hold a secret
  [System.IO.File]::AppendAllText($env:CSI_STANDIN_CALLS, [System.Text.Json.JsonSerializer]::Serialize($call, $call.GetType(), [System.Text.Json.JsonSerializerOptions]$null) + [char]10)
  if ($null -ne $violation) { throw ('stand-in: CIM signature violation: ' + $violation) }
  MaybeFail $PSCmdlet ('Invoke-CimMethod ' + $ClassName + '.' + $MethodName)
  $res0 = Member (Member $w 'results') ($ClassName + '.' + $MethodName)
  # a slow method (a Format, a Resize): `__sleepMs` in its result, then a second record once it is done
  $sleep = Member $res0 '__sleepMs'
  if ($null -ne $sleep) {
    Start-Sleep -Milliseconds ([int]$sleep.GetRawText())
    $doneRecord = Dict @{ cmdlet = 'Invoke-CimMethod'; class = $ClassName; method = $MethodName; done = $true; pid = $PID }
    [System.IO.File]::AppendAllText($env:CSI_STANDIN_CALLS, [System.Text.Json.JsonSerializer]::Serialize($doneRecord, $doneRecord.GetType(), [System.Text.Json.JsonSerializerOptions]$null) + [char]10)
  }
  $r = [pscustomobject]@{ ReturnValue = [uint32]0 }
  $res = Member (Member $w 'results') ($ClassName + '.' + $MethodName)
  if ($null -ne $res) {
    $outTypes = Member $m 'out'
    foreach ($p in $res.EnumerateObject()) {
      if ($p.Name -eq '__sleepMs') { continue }
      $type = 'UInt32'; $te = Member $outTypes $p.Name
      if ($null -ne $te) { $type = $te.GetString() }
      $r.PSObject.Properties.Remove($p.Name)
      $r.PSObject.Properties.Add([psnoteproperty]::new($p.Name, (Typed $type (JsonValue $p.Value))))
    }
  }
  $r
}

# MaybeFail is exported for the SmbShare stand-in (it raises the world's errors for its cmdlets too).
Export-ModuleMember -Function Get-CimInstance, Get-CimAssociatedInstance, Invoke-CimMethod, MaybeFail
