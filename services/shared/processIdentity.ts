import os from 'node:os';

/** Which process a number comes from: counters kept in memory are per process (one API replica, one indexer). */
export interface ProcessIdentity {
  /** `<host>/<pid>`. */
  id: string;
  host: string;
  pid: number;
}

export function processIdentity(): ProcessIdentity {
  const host = os.hostname();
  return { id: `${host}/${process.pid}`, host, pid: process.pid };
}
