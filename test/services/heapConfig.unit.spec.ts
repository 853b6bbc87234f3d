import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../services/process/config';

describe('configuration: HEAP_GROWTH_PERCENT', () => {
  it('unset: 50 (the heap grows to 1.5 times what survived a full collection)', () => {
    expect(loadConfig({}).heapGrowthPercent).to.equal(50);
  });

  it('a whole number from 0 (V8\'s own policy) to 1000', () => {
    for (const [written, value] of [['0', 0], ['25', 25], ['1000', 1000]] as const) expect(loadConfig({ HEAP_GROWTH_PERCENT: written }).heapGrowthPercent).to.equal(value);
  });

  it('anything else is refused, naming the setting', () => {
    for (const written of ['-1', '1001', 'half', '12.5']) {
      expect(() => loadConfig({ HEAP_GROWTH_PERCENT: written }), written).to.throw(ConfigError, /HEAP_GROWTH_PERCENT/);
    }
  });
});
