/**
 * Every cmdlet the worker scripts call (with the parameters and parameter sets we use) and every
 * CIM class, property, method and method parameter they touch, as Microsoft documents them, with
 * each method's documented return codes. Written from learn.microsoft.com (the `source` of each
 * entry); test/windows/powershell-static.test.ts parses the scripts and fails on any cmdlet,
 * parameter, class, property, method or argument that is not here, and on a documented return code
 * that storage-status.ts does not map to a message and a gRPC code.
 *
 * Types are the MOF/CIM types of the documentation (UInt16, String, Boolean…). Only what the
 * scripts use is listed for properties; for methods, every documented [in] parameter is listed.
 */

export interface CmdletSignature {
  module: string;
  source: string;
  /** Parameter sets by name → the parameters of that set (common parameters are implied). */
  parameterSets: Record<string, readonly string[]>;
  /** Positional parameters in position order, per set (positions 0, 1, …). */
  positional?: Record<string, readonly string[]>;
  /** Switch parameters (take no argument unless colon-bound, `-Confirm:$false`). */
  switches?: readonly string[];
  /** Parameters that match their argument as a wildcard pattern: request data must never reach them. */
  wildcards?: readonly string[];
  note?: string;
}

export interface CimMethodSignature {
  /** Called on the class (Invoke-CimMethod -ClassName) rather than on an instance. */
  static: boolean;
  /** Documented [in] parameters → CIM type. */
  in: Record<string, string>;
  /** Documented [out] parameters → CIM type (read from the result). */
  out?: Record<string, string>;
  /** Documented return values other than Success (0) → the documented text. */
  returnCodes: Record<number, string>;
  source: string;
  note?: string;
}

export interface CimClassSignature {
  namespace: string;
  source: string;
  /** Properties the scripts read → CIM type. */
  properties: Record<string, string>;
  methods: Record<string, CimMethodSignature>;
}

export interface CimAssociationSignature {
  namespace: string;
  source: string;
  /** The two associated classes. */
  ends: readonly [string, string];
}

export const COMMON_PARAMETERS = [
  "Verbose",
  "Debug",
  "ErrorAction",
  "WarningAction",
  "InformationAction",
  "ErrorVariable",
  "WarningVariable",
  "InformationVariable",
  "OutVariable",
  "OutBuffer",
  "PipelineVariable",
] as const;

const PS = "https://learn.microsoft.com/powershell/module";
const STORAGE = "https://learn.microsoft.com/windows-hardware/drivers/storage";
const ISCSI = "https://learn.microsoft.com/previous-versions/windows/desktop/iscsidisc";

export const CMDLETS: Record<string, CmdletSignature> = {
  "Get-CimInstance": {
    module: "CimCmdlets",
    source: `${PS}/cimcmdlets/get-ciminstance`,
    parameterSets: {
      ClassNameComputerSet: ["ClassName", "Namespace", "Filter", "Property", "KeyOnly", "Shallow", "ComputerName", "OperationTimeoutSec", "QueryDialect"],
    },
    positional: { ClassNameComputerSet: ["ClassName"] },
    switches: ["KeyOnly", "Shallow"],
  },
  "Get-CimAssociatedInstance": {
    module: "CimCmdlets",
    source: `${PS}/cimcmdlets/get-cimassociatedinstance`,
    parameterSets: {
      ComputerSet: ["InputObject", "Association", "ResultClassName", "Namespace", "OperationTimeoutSec", "ResourceUri", "ComputerName", "KeyOnly"],
    },
    positional: { ComputerSet: ["InputObject", "Association"] },
    switches: ["KeyOnly"],
  },
  "Invoke-CimMethod": {
    module: "CimCmdlets",
    source: `${PS}/cimcmdlets/invoke-cimmethod`,
    parameterSets: {
      ClassNameComputerSet: ["ClassName", "Arguments", "MethodName", "ComputerName", "Namespace", "OperationTimeoutSec", "WhatIf", "Confirm"],
      CimInstanceComputerSet: ["InputObject", "Arguments", "MethodName", "ResourceUri", "ComputerName", "OperationTimeoutSec", "WhatIf", "Confirm"],
    },
    positional: { ClassNameComputerSet: ["ClassName", "Arguments", "MethodName"], CimInstanceComputerSet: ["InputObject", "Arguments", "MethodName"] },
    switches: ["WhatIf", "Confirm"],
  },
  "Get-SmbGlobalMapping": {
    module: "SmbShare",
    source: `${PS}/smbshare/get-smbglobalmapping`,
    parameterSets: { Default: ["LocalPath", "RemotePath", "CimSession", "ThrottleLimit", "AsJob"] },
    positional: { Default: ["LocalPath", "RemotePath"] },
    switches: ["AsJob"],
    wildcards: ["LocalPath", "RemotePath"],
    note: "CDXML query parameters: the CDXML adapter matches them as wildcard patterns, so they are treated as wildcard-capable whatever the help says; the script enumerates and compares instead",
  },
  "New-SmbGlobalMapping": {
    module: "SmbShare",
    source: `${PS}/smbshare/new-smbglobalmapping`,
    parameterSets: {
      Default: [
        "LocalPath",
        "RemotePath",
        "Credential",
        "Persistent",
        "RequireIntegrity",
        "RequirePrivacy",
        "UseWriteThrough",
        "FullAccess",
        "DenyAccess",
        "TransportType",
        "SkipCertificateCheck",
        "CompressNetworkTraffic",
        "BlockNTLM",
        "TcpPort",
        "QuicPort",
        "RdmaPort",
        "CimSession",
        "ThrottleLimit",
        "AsJob",
        "WhatIf",
        "Confirm",
      ],
    },
    positional: { Default: ["LocalPath", "RemotePath"] },
    switches: ["SkipCertificateCheck", "AsJob", "WhatIf", "Confirm"],
  },
  "Remove-SmbGlobalMapping": {
    module: "SmbShare",
    source: `${PS}/smbshare/remove-smbglobalmapping`,
    parameterSets: {
      Query: ["RemotePath", "LocalPath", "Force", "UpdateOnly", "CimSession", "ThrottleLimit", "AsJob", "PassThru", "WhatIf", "Confirm"],
      InputObject: ["InputObject", "Force", "UpdateOnly", "CimSession", "ThrottleLimit", "AsJob", "PassThru", "WhatIf", "Confirm"],
    },
    positional: { Query: ["RemotePath"] },
    switches: ["Force", "UpdateOnly", "AsJob", "PassThru", "WhatIf", "Confirm"],
    wildcards: ["RemotePath", "LocalPath"],
  },
  "New-Object": {
    module: "Microsoft.PowerShell.Utility",
    source: `${PS}/microsoft.powershell.utility/new-object`,
    parameterSets: { Net: ["TypeName", "ArgumentList", "Property"], Com: ["ComObject", "Strict", "Property"] },
    positional: { Net: ["TypeName", "ArgumentList"], Com: ["ComObject"] },
    switches: ["Strict"],
  },
  "ConvertTo-Json": {
    module: "Microsoft.PowerShell.Utility",
    source: `${PS}/microsoft.powershell.utility/convertto-json?view=powershell-5.1`,
    parameterSets: { Default: ["InputObject", "Depth", "Compress"] },
    positional: { Default: ["InputObject"] },
    switches: ["Compress"],
  },
  "ConvertFrom-Json": {
    module: "Microsoft.PowerShell.Utility",
    source: `${PS}/microsoft.powershell.utility/convertfrom-json?view=powershell-5.1`,
    parameterSets: { Default: ["InputObject"] },
    positional: { Default: ["InputObject"] },
  },
  "Where-Object": {
    module: "Microsoft.PowerShell.Core",
    source: `${PS}/microsoft.powershell.core/where-object?view=powershell-5.1`,
    parameterSets: { ScriptBlockSet: ["InputObject", "FilterScript"] },
    positional: { ScriptBlockSet: ["FilterScript"] },
    note: "only the script-block form: the comparison sets (-Like, -Match, …) would treat their value as a pattern",
  },
  "ForEach-Object": {
    module: "Microsoft.PowerShell.Core",
    source: `${PS}/microsoft.powershell.core/foreach-object?view=powershell-5.1`,
    parameterSets: { ScriptBlockSet: ["InputObject", "Begin", "Process", "End", "RemainingScripts"] },
    positional: { ScriptBlockSet: ["Process"] },
  },
};

/** Storage Management API codes every MSFT_Disk method documents. */
const GENERIC: Record<number, string> = { 1: "Not Supported", 2: "Unspecified Error", 3: "Timeout", 4: "Failed", 5: "Invalid Parameter" };
const DISK_COMMON: Record<number, string> = {
  ...GENERIC,
  6: "Disk is in use",
  40001: "Access denied",
  40002: "There are not enough resources to complete the operation.",
  40003: "Cache out of date",
};
const CLUSTERED = "The specified object is managed by the Microsoft Failover Clustering component. The disk must be in cluster maintenance mode and the cluster resource status must be online to perform this operation.";
const RESIZE_CODES: Record<number, string> = {
  ...GENERIC,
  4097: "Size Not Supported",
  40001: "Access denied",
  40002: "There are not enough resources to complete the operation.",
  42008: "Cannot shrink a partition containing a volume with errors.",
  42009: "Cannot resize a partition containing an unknown file system.",
};
const ISCSI_NOTE = "the iSCSI initiator provider documents no return values: failures arrive as ISDSC_* HRESULTs (iscsierr.h), mapped by src/host/windows/iscsi.ts";

export const CIM_CLASSES: Record<string, CimClassSignature> = {
  MSFT_Disk: {
    namespace: "root/Microsoft/Windows/Storage",
    source: `${STORAGE}/msft-disk`,
    properties: { Number: "UInt32", Location: "String", Path: "String", SerialNumber: "String", Size: "UInt64", IsOffline: "Boolean", PartitionStyle: "UInt16" },
    methods: {
      Initialize: {
        static: false,
        in: { PartitionStyle: "UInt16" },
        out: { ExtendedStatus: "String" },
        returnCodes: { ...DISK_COMMON, 41001: "The disk has already been initialized.", 41010: "The specified partition type is not valid.", 41014: "The disk is not large enough to support a GPT partition style.", 41018: CLUSTERED },
        source: `${STORAGE}/initialize-msft-disk`,
      },
      CreatePartition: {
        static: false,
        in: {
          Size: "UInt64",
          UseMaximumSize: "Boolean",
          Offset: "UInt64",
          Alignment: "UInt32",
          DriveLetter: "Char16",
          AssignDriveLetter: "Boolean",
          MbrType: "UInt16",
          GptType: "String",
          IsHidden: "Boolean",
          IsActive: "Boolean",
        },
        out: { CreatedPartition: "String", ExtendedStatus: "String" },
        returnCodes: {
          ...DISK_COMMON,
          4097: "Size Not Supported",
          40000: "Not enough free space",
          40005: "You must specify a size by using either the Size or the UseMaximumSize parameter. You can specify only one of these parameters at a time.",
          41000: "The disk has not been initialized.",
          41002: "The disk is read only.",
          41003: "The disk is offline.",
          41004: "The disk's partition limit has been reached.",
          41005: "The specified partition alignment is not valid. It must be a multiple of the disk's sector size.",
          41006: "A parameter is not valid for this type of partition.",
          41010: "The specified partition type is not valid.",
          41011: "Only the first 2 TB are usable on MBR disks.",
          41012: "The specified offset is not valid.",
          41015: "There is no media in the device.",
          41016: "The specified offset is not valid.",
          41017: "The specified partition layout is invalid.",
          41018: CLUSTERED,
          42002: "The requested access path is already in use.",
          42004: "Cannot assign access paths to hidden partitions.",
          42007: "The access path is not valid.",
        },
        source: `${STORAGE}/createpartition-msft-disk`,
      },
      Refresh: {
        static: false,
        in: {},
        out: { ExtendedStatus: "String" },
        returnCodes: { ...DISK_COMMON, 41000: "The disk has not been initialized.", 41003: "The disk is offline." },
        source: `${STORAGE}/msft-disk-refresh`,
      },
      Online: { static: false, in: {}, out: { ExtendedStatus: "String" }, returnCodes: { ...DISK_COMMON, 41018: CLUSTERED }, source: `${STORAGE}/msft-disk-online` },
      Offline: {
        static: false,
        in: {},
        out: { ExtendedStatus: "String" },
        returnCodes: { ...DISK_COMMON, 41009: "The operation is not supported on a critical disk.", 41018: CLUSTERED },
        source: `${STORAGE}/msft-disk-offline`,
      },
    },
  },
  MSFT_Partition: {
    namespace: "root/Microsoft/Windows/Storage",
    source: `${STORAGE}/msft-partition`,
    properties: { DiskNumber: "UInt32", PartitionNumber: "UInt32", GptType: "String", MbrType: "UInt16", Size: "UInt64", Offset: "UInt64", DriveLetter: "Char16", AccessPaths: "String[]" },
    methods: {
      Online: {
        static: false,
        in: {},
        out: { ExtendedStatus: "String" },
        returnCodes: { ...GENERIC, 6: "In Use", 40001: "Access denied", 40002: "There are not enough resources to complete the operation.", 42011: "This operation is only supported on data partitions." },
        source: `${STORAGE}/msft-partition-online`,
      },
      GetSupportedSize: {
        static: false,
        in: {},
        out: { SizeMin: "UInt64", SizeMax: "UInt64", ExtendedStatus: "String" },
        returnCodes: RESIZE_CODES,
        source: `${STORAGE}/msft-partition-getsupportedsizes`,
      },
      Resize: { static: false, in: { Size: "UInt64" }, out: { ExtendedStatus: "String" }, returnCodes: RESIZE_CODES, source: `${STORAGE}/msft-partition-resize` },
    },
  },
  MSFT_Volume: {
    namespace: "root/Microsoft/Windows/Storage",
    source: `${STORAGE}/msft-volume`,
    properties: { UniqueId: "String", FileSystemType: "UInt16", FileSystem: "String", Size: "UInt64", SizeRemaining: "UInt64" },
    methods: {
      Format: {
        static: false,
        in: {
          FileSystem: "String",
          FileSystemLabel: "String",
          AllocationUnitSize: "UInt32",
          Full: "Boolean",
          Force: "Boolean",
          Compress: "Boolean",
          ShortFileNameSupport: "Boolean",
          SetIntegrityStreams: "Boolean",
          UseLargeFRS: "Boolean",
          DisableHeatGathering: "Boolean",
        },
        out: { FormattedVolume: "String", ExtendedStatus: "String" },
        returnCodes: {
          ...GENERIC,
          7: "This command is not supported on x86 running in x64 environment.",
          40001: "Access Denied",
          40004: "An unexpected I/O error has occurred",
          40018: CLUSTERED,
          42010: "The operation is not allowed on a system or critical partition.",
          43000: "The specified cluster size is invalid",
          43001: "The specified file system is not supported",
          43002: "The volume cannot be quick formatted",
          43003: "The number of clusters exceeds 32 bits",
          43004: "The specified UDF version is not supported",
          43005: "The cluster size must be a multiple of the disk's physical sector size",
          43006: "Cannot perform the requested operation when the drive is read only",
          43034: "Missing documentation",
        },
        source: `${STORAGE}/format-msft-volume`,
      },
      Flush: { static: false, in: {}, returnCodes: { ...GENERIC }, source: `${STORAGE}/msft-volume-flush` },
    },
  },
  MSFT_StorageSetting: {
    namespace: "root/Microsoft/Windows/Storage",
    source: `${STORAGE}/msft-storagesetting`,
    properties: {},
    methods: {
      UpdateHostStorageCache: { static: true, in: {}, returnCodes: {}, source: `${STORAGE}/msft-storagesetting-updatehoststoragecache`, note: "no return values documented" },
    },
  },
  MSFT_SmbGlobalMapping: {
    namespace: "root/Microsoft/Windows/SMB",
    source: `${PS}/smbshare/new-smbglobalmapping`,
    properties: { RemotePath: "String", LocalPath: "String", Status: "UInt32" },
    methods: {
      Create: {
        static: true,
        in: { LocalPath: "String", RemotePath: "String", Credential: "MSFT_Credential", Persistent: "Boolean", RequireIntegrity: "Boolean", RequirePrivacy: "Boolean", UseWriteThrough: "Boolean" },
        returnCodes: {},
        source: `${PS}/smbshare/new-smbglobalmapping`,
        note: "no class page on learn.microsoft.com: New-SmbGlobalMapping is the CDXML cmdlet over this static method (same parameter names); Status values as MSFT_SmbMapping. Failures arrive as CIM errors carrying `Windows System Error <n>`, mapped by src/host/windows/smb.ts",
      },
    },
  },
  MSFT_iSCSITargetPortal: {
    namespace: "root/Microsoft/Windows/Storage",
    source: `${ISCSI}/msft-iscsitargetportal`,
    properties: { TargetPortalAddress: "String", TargetPortalPortNumber: "UInt16" },
    methods: {
      New: {
        static: true,
        in: {
          TargetPortalAddress: "String",
          TargetPortalPortNumber: "UInt16",
          InitiatorInstanceName: "String",
          InitiatorPortalAddress: "String",
          IsHeaderDigest: "Boolean",
          IsDataDigest: "Boolean",
          AuthenticationType: "String",
          ChapUsername: "String",
          ChapSecret: "String",
        },
        returnCodes: {},
        source: `${PS}/iscsi/new-iscsitargetportal`,
        note: ISCSI_NOTE,
      },
      Remove: {
        static: false,
        in: { InitiatorInstanceName: "String", InitiatorPortalAddress: "String", TargetPortalPortNumber: "UInt16", TargetPortalAddress: "String" },
        returnCodes: {},
        source: `${PS}/iscsi/remove-iscsitargetportal`,
        note: ISCSI_NOTE,
      },
    },
  },
  MSFT_iSCSITarget: {
    namespace: "root/Microsoft/Windows/Storage",
    source: `${ISCSI}/msft-iscsitarget`,
    properties: { NodeAddress: "String", IsConnected: "Boolean" },
    methods: {
      Connect: {
        static: true,
        in: {
          NodeAddress: "String",
          TargetPortalAddress: "String",
          TargetPortalPortNumber: "UInt16",
          InitiatorPortalAddress: "String",
          IsDataDigest: "Boolean",
          IsHeaderDigest: "Boolean",
          ReportToPnP: "Boolean",
          AuthenticationType: "String",
          IsMultipathEnabled: "Boolean",
          IsPersistent: "Boolean",
          InitiatorInstanceName: "String",
          ChapUsername: "String",
          ChapSecret: "String",
        },
        out: { CreatediSCSISession: "String" },
        returnCodes: {},
        source: `${ISCSI}/msft-iscsitarget-connect`,
        note: `ChapUsername/ChapSecret as Connect-IscsiTarget (${PS}/iscsi/connect-iscsitarget), the CDXML cmdlet over this method; ${ISCSI_NOTE}`,
      },
      Disconnect: { static: false, in: { SessionIdentifier: "String" }, returnCodes: {}, source: `${PS}/iscsi/disconnect-iscsitarget`, note: ISCSI_NOTE },
    },
  },
  MSFT_iSCSISession: {
    namespace: "root/Microsoft/Windows/Storage",
    source: `${ISCSI}/msft-iscsisession`,
    properties: { IsPersistent: "Boolean", SessionIdentifier: "String" },
    methods: {
      Unregister: { static: false, in: {}, returnCodes: {}, source: `${PS}/iscsi/unregister-iscsisession`, note: ISCSI_NOTE },
      SetCHAPSecret: { static: true, in: { ChapSecret: "String" }, returnCodes: {}, source: `${PS}/iscsi/set-iscsichapsecret`, note: ISCSI_NOTE },
    },
  },
  MSFT_iSCSIConnection: { namespace: "root/Microsoft/Windows/Storage", source: `${ISCSI}/msft-iscsiconnection`, properties: {}, methods: {} },
  CIM_BIOSElement: {
    namespace: "root/cimv2",
    source: "https://learn.microsoft.com/windows/win32/cimwin32prov/cim-bioselement",
    properties: { SerialNumber: "String" },
    methods: {},
  },
};

export const CIM_ASSOCIATIONS: Record<string, CimAssociationSignature> = {
  MSFT_PartitionToVolume: { namespace: "root/Microsoft/Windows/Storage", source: `${STORAGE}/msft-partitiontovolume`, ends: ["MSFT_Partition", "MSFT_Volume"] },
  MSFT_DiskToPartition: { namespace: "root/Microsoft/Windows/Storage", source: `${STORAGE}/msft-disktopartition`, ends: ["MSFT_Disk", "MSFT_Partition"] },
  MSFT_iSCSITargetToiSCSITargetPortal: { namespace: "root/Microsoft/Windows/Storage", source: `${ISCSI}/msft-iscsitargettoiscsitargetportal`, ends: ["MSFT_iSCSITarget", "MSFT_iSCSITargetPortal"] },
  MSFT_iSCSITargetToiSCSISession: { namespace: "root/Microsoft/Windows/Storage", source: `${ISCSI}/msft-iscsitargettoiscsisession`, ends: ["MSFT_iSCSITarget", "MSFT_iSCSISession"] },
  MSFT_iSCSITargetToiSCSIConnection: { namespace: "root/Microsoft/Windows/Storage", source: `${ISCSI}/msft-iscsitargettoiscsiconnection`, ends: ["MSFT_iSCSITarget", "MSFT_iSCSIConnection"] },
  MSFT_iSCSIConnectionToDisk: { namespace: "root/Microsoft/Windows/Storage", source: `${ISCSI}/msft-iscsiconnectiontodisk`, ends: ["MSFT_iSCSIConnection", "MSFT_Disk"] },
};
