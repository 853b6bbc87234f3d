'use strict';
/**
 * Where the Kafka suites look for a broker, and whether one answers there. Plain CommonJS: the test
 * run's file locks (exclusiveFiles.cjs) ask it before any TypeScript is loaded; test/support/kafka.ts
 * re-exports it.
 */
const { Buffer } = require('node:buffer');
const net = require('node:net');

/** KAFKA_BROKERS (default 127.0.0.1:9092), as a list. */
const KAFKA_BROKERS = (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',').map((b) => b.trim()).filter(Boolean);

/** True if a Kafka broker answers an ApiVersions request on host:port (what infra/kafka/up.sh checks too). */
function brokerAnswers(broker, timeoutMs = 3000) {
  const i = broker.lastIndexOf(':');
  return new Promise((resolve) => {
    const socket = net.connect({ host: broker.slice(0, i), port: Number(broker.slice(i + 1)) });
    let reply = Buffer.alloc(0);
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('error', () => done(false));
    socket.once('close', () => done(false));
    // size 15 | api key 18 (ApiVersions) v0 | correlation id "KAFK" | client id "probe"
    socket.once('connect', () => socket.write(Buffer.concat([Buffer.from('0000000f00120000', 'hex'), Buffer.from('KAFK'), Buffer.from('0005', 'hex'), Buffer.from('probe')])));
    socket.on('data', (chunk) => {
      reply = Buffer.concat([reply, chunk]);
      if (reply.length >= 8) done(reply.subarray(4, 8).toString() === 'KAFK');
    });
  });
}

/** True if any of KAFKA_BROKERS answers: the Kafka suites run (else they skip, or fail with REQUIRE_SERVICES=1). */
async function kafkaAnswers() {
  return (await Promise.all(KAFKA_BROKERS.map((b) => brokerAnswers(b)))).some(Boolean);
}

module.exports = { KAFKA_BROKERS, brokerAnswers, kafkaAnswers };
