'use strict';
/**
 * Spec files run side by side (`jobs` in .mocharc.cjs), each in a worker process. A file whose header
 * has a comment line starting `Exclusive:` runs alone: it says why (it stops a server the others use,
 * or starts so many processes that PostgreSQL's connections would run out for the files beside it).
 *
 * How: in a worker, every file holds an advisory lock of PostgreSQL (the machine's, TEST_DATABASE_URL)
 * while it runs: shared for most files, exclusive for those. PostgreSQL queues a lock request behind
 * a waiting one it conflicts with, so an exclusive file waits for the files running to end, and files
 * asking after it wait for it. Run one after the other (a named file, `--jobs 1`), nothing is locked.
 *
 * A file whose header says `Exclusive with Kafka:` instead runs alone only when its Kafka part runs:
 * when a broker answers at KAFKA_BROKERS (the Kafka suites' own test) or with REQUIRE_SERVICES=1.
 * Without one that part skips with its SKIPPED line and the rest of the file shares the machine.
 */
const pg = require('pg');
const workerpool = require('workerpool');
const { headerLine } = require('./specFiles.cjs');
const { kafkaAnswers } = require('./kafkaBroker.cjs');

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** The advisory lock's key (any number no other code of ours locks). */
const FILE_LOCK = 7362078;

/** One connection per worker, kept for its files. */
let client = null;
let held = null;

async function connection() {
  if (!client) {
    client = new pg.Client({ connectionString: ADMIN_URL, application_name: 'testament-test-files' });
    client.on('error', () => {
      client = null;
    });
    await client.connect();
  }
  return client;
}

/** Whether the file runs alone (see the header comment). */
async function runsAlone(file) {
  if (headerLine(file, 'Exclusive')) return true;
  if (!headerLine(file, 'Exclusive with Kafka')) return false;
  return process.env.REQUIRE_SERVICES === '1' || kafkaAnswers();
}

exports.mochaHooks = workerpool.isMainThread ? {} : {
  async beforeAll() {
    // Waiting for the files before it (or an exclusive one) to end is not the file's time.
    this.timeout(0);
    // The worker's root suite holds one file's suites (or tests written at its top level).
    const root = this.test?.parent;
    const file = root?.suites?.[0]?.file ?? root?.tests?.[0]?.file;
    if (!file) return;
    held = (await runsAlone(file)) ? 'pg_advisory_unlock' : 'pg_advisory_unlock_shared';
    const c = await connection();
    await c.query(held === 'pg_advisory_unlock' ? 'SELECT pg_advisory_lock($1)' : 'SELECT pg_advisory_lock_shared($1)', [FILE_LOCK]);
  },
  async afterAll() {
    if (!held || !client) return;
    const unlock = held;
    held = null;
    await client.query(`SELECT ${unlock}($1)`, [FILE_LOCK]);
  },
};
