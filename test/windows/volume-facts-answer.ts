/**
 * A fake worker's `volume.facts` answer, as the storage worker script builds it: the volume, its
 * partition, and VolumeFacts of them (every value a string, spelled as the script spells it).
 */
type Partition = { diskNumber: number; partitionNumber: number; size: string; offset: string; accessPaths?: string[] };
type Volume = { fileSystemType: number };

export function volumeFactsAnswer(volume: Volume, partition: Partition, isOffline = false): { result: unknown } {
  const facts = {
    fileSystemType: String(volume.fileSystemType),
    accessPaths: (partition.accessPaths ?? []).join(", "),
    diskNumber: String(partition.diskNumber),
    partitionNumber: String(partition.partitionNumber),
    offset: partition.offset,
    size: partition.size,
    isOffline: isOffline ? "True" : "False",
  };
  return { result: { volume, partition, facts } };
}
