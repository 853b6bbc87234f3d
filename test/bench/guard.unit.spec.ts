import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { compareMeasures, GUARDED, type GuardedMeasure } from '../../bench/guard';

/** How a benchmark's measures are compared with the result recorded for it (bench/guard.ts). */
describe('bench guard: measures against the recorded result', () => {
  const ratio = (value: number): GuardedMeasure => ({ name: 'rateRatio', value, better: 'higher', tolerance: 0.25 });
  const rss = (value: number): GuardedMeasure => ({ name: 'peakRssMB', value, better: 'lower', tolerance: 0.2 });

  it('is a regression only when worse than recorded by more than the tolerance, in the measure\'s own direction', () => {
    const recorded = { guarded: [{ name: 'rateRatio', value: 0.2 }, { name: 'peakRssMB', value: 250 }] };
    const verdicts = (r: number, m: number) => compareMeasures([ratio(r), rss(m)], recorded).map((v) => v.regressed);
    expect(verdicts(0.16, 290)).to.deep.equal([false, false]); // 20 % and 16 % worse: the machine's noise
    expect(verdicts(0.11, 250)).to.deep.equal([true, false]); // the 1.8 × slowdown issue 37 names
    expect(verdicts(0.3, 310)).to.deep.equal([false, true]); // faster is never a regression; memory up 24 %
    expect(verdicts(0.4, 100)).to.deep.equal([false, false]);
    expect(compareMeasures([ratio(0.11)], recorded)[0]).to.deep.equal({ name: 'rateRatio', value: 0.11, recorded: 0.2, change: -0.45, tolerance: 0.25, regressed: true });
  });

  it('reads a result recorded before guards from its goals, and compares nothing when nothing was recorded', () => {
    expect(compareMeasures([ratio(0.1)], { goals: { rateRatio: 0.2, rateMet: false } })[0]).to.include({ recorded: 0.2, regressed: true });
    for (const recorded of [null, {}, { goals: { rateRatio: null } }, { guarded: [{ name: 'other', value: 1 }] }]) {
      expect(compareMeasures([ratio(0.01)], recorded as never)[0]).to.include({ recorded: null, change: null, regressed: false });
    }
  });

  it('finds the measures it guards in every result recorded in bench/results, and every benchmark has a guard', () => {
    const dir = path.join(__dirname, '..', '..', 'bench', 'results');
    const names = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5));
    expect(names).to.include.members(['import', 'migration', 'search']);
    expect(Object.keys(GUARDED)).to.include.members(names);
    for (const name of names) {
      const result = JSON.parse(fs.readFileSync(path.join(dir, `${name}.json`), 'utf8'));
      const measures = GUARDED[name].measures(result);
      expect(measures.length, name).to.be.greaterThan(0);
      for (const m of measures) expect(Number.isFinite(m.value) && m.tolerance > 0, `${name} ${m.name}`).to.equal(true);
      for (const p of GUARDED[name].parameters) expect(result.parameters, `${name}: parameter ${p}`).to.have.property(p);
    }
  });
});
