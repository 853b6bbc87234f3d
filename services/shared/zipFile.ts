import fs from 'node:fs';

/** ZIP facts both readers of archives need (external exports, evidence bundles). */

export const ZIP_LOCAL_HEADER = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
export const ZIP_EMPTY_ARCHIVE = Buffer.from([0x50, 0x4b, 0x05, 0x06]);
/** The end-of-central-directory record: 22 bytes plus a comment of at most 65,535. */
const EOCD_SEARCH_BYTES = 22 + 0xffff;

/** `length` bytes of the file from `start` (fewer at its end). */
export async function readRange(file: string, start: number, length: number): Promise<Buffer> {
  const handle = await fs.promises.open(file, 'r');
  try {
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buffer, 0, length, start);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/**
 * unzip-stream reads front to back and cannot tell a cut-off archive from one that ends early (it
 * would wait forever on a header cut in half): the end-of-central-directory record at the tail is
 * the proof the archive is whole. Read it before streaming the archive.
 */
export async function isWholeZip(file: string): Promise<boolean> {
  const { size } = await fs.promises.stat(file);
  const tailStart = Math.max(0, size - EOCD_SEARCH_BYTES);
  return endsWithCentralDirectory(await readRange(file, tailStart, size - tailStart), tailStart);
}

/**
 * Whether `tail` (the file's last bytes, from `tailStart`) ends with an end-of-central-directory
 * record whose comment reaches exactly the end of the file and whose directory ends where it
 * starts. A cut or padded archive fails this.
 */
function endsWithCentralDirectory(tail: Buffer, tailStart: number): boolean {
  for (let at = tail.lastIndexOf(ZIP_EMPTY_ARCHIVE); at >= 0; at = at > 0 ? tail.lastIndexOf(ZIP_EMPTY_ARCHIVE, at - 1) : -1) {
    if (at + 22 > tail.length || at + 22 + tail.readUInt16LE(at + 20) !== tail.length) continue;
    const directoryBytes = tail.readUInt32LE(at + 12);
    const directoryOffset = tail.readUInt32LE(at + 16);
    if (directoryOffset === 0xffffffff || directoryBytes === 0xffffffff) return true; // ZIP64: the sizes live elsewhere
    return directoryOffset + directoryBytes === tailStart + at;
  }
  return false;
}
