import v8 from 'node:v8';

/**
 * HEAP_GROWTH_PERCENT: after a full garbage collection, how far the heap may grow above what
 * survived before the next one (50: to 1.5 times). V8's own policy lets a process that allocates
 * fast grow it up to 4 times, which a long job does all the time (an external import's chunks, a
 * projection applying them): under it one import peaked at 564 MB of RSS where 50 % keeps it at
 * about 230 MB at the same speed (bench/README.md). 0 leaves V8's policy.
 *
 * Set at run time, before the process allocates much: V8 reads this flag at every collection
 * (unlike the heap's maximum, fixed when the process starts; give `--max-old-space-size` to node
 * for that).
 */
export function applyHeapGrowth(percent: number): void {
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
