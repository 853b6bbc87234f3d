import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../services/process/config';

describe('configuration of the Kafka topic\'s partitions (KAFKA_PARTITIONS)', () => {
  const brokers = { KAFKA_BROKERS: '127.0.0.1:9092' };

  it('creates the topic with one partition by default (one projector process gains nothing from more)', () => {
    expect(loadConfig(brokers).kafka?.partitions).to.equal(1);
  });

  it('takes a count for several projector processes', () => {
    expect(loadConfig({ ...brokers, KAFKA_PARTITIONS: '6' }).kafka?.partitions).to.equal(6);
  });

  for (const value of ['0', '-1', 'six', '10001']) {
    it(`refuses KAFKA_PARTITIONS=${value}`, () => {
      expect(() => loadConfig({ ...brokers, KAFKA_PARTITIONS: value })).to.throw(ConfigError, /KAFKA_PARTITIONS/);
    });
  }
});
