import { expect } from 'chai';
import { NUL_MESSAGE, UNPAIRED_SURROGATE_MESSAGE, findTextProblem, storableText, textProblem } from '../../../services/shared/text';

describe('text a column can hold (services/shared/text.ts)', () => {
  it('refuses an unpaired surrogate, high or low, and NUL; takes pairs and everything else', () => {
    for (const bad of ['\ud800', 'a\udbffb', '\udc00', 'x\udfff', '\udc00\ud800', '\ud83d\ude00\ud800', '\ud800\ud800\udc00']) {
      expect(textProblem(bad), JSON.stringify(bad)).to.equal(UNPAIRED_SURROGATE_MESSAGE);
    }
    expect(textProblem('a\u0000b')).to.equal(NUL_MESSAGE);
    for (const good of ['', 'plain', 'rocket \ud83d\ude80', '\u{10ffff}', 'é\ufffd\u2028', '\t\n']) expect(textProblem(good), JSON.stringify(good)).to.equal(null);
  });

  it('finds the first bad string or key of a JSON value, with its path', () => {
    expect(findTextProblem({ data: { name: 'ok', steps: [{ title: 'fine' }, { title: 'x\ud800' }] } })).to.deep.equal({ path: 'data.steps[1].title', problem: UNPAIRED_SURROGATE_MESSAGE });
    expect(findTextProblem({ where: { ['na\u0000me']: 1 } })).to.deep.equal({ path: 'where.na\u0000me', problem: `(the key) ${NUL_MESSAGE}` });
    expect(findTextProblem(['a', ['b', 'c\udc00']], 'q')).to.deep.equal({ path: 'q[1][1]', problem: UNPAIRED_SURROGATE_MESSAGE });
    expect(findTextProblem('\ud800')).to.deep.equal({ path: '', problem: UNPAIRED_SURROGATE_MESSAGE });
    expect(findTextProblem({ a: [1, true, null, { b: 'fine' }] })).to.equal(null);
    expect(findTextProblem({ a: 'x\u0000' }, '', (text) => (text.includes('y') ? 'no y' : null))).to.equal(null);
  });

  it('makes file text storable: each unpaired surrogate and NUL becomes U+FFFD, pairs and the rest stay', () => {
    expect(storableText('cut \ud83d|\ude80 low|\u0000|\ud83d\ude80|\ud800\ud800\udc00')).to.equal('cut \ufffd|\ufffd low|\ufffd|\ud83d\ude80|\ufffd\ud800\udc00');
    const plain = 'plain é text';
    expect(storableText(plain)).to.equal(plain);
  });

  it('walks a value nested 200,000 levels deep without running out of stack; names its first 64 steps', () => {
    let deep: unknown = 'x\ud800';
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(findTextProblem(deep)).to.deep.equal({ path: `${'[0]'.repeat(64)}…`, problem: UNPAIRED_SURROGATE_MESSAGE });
    let fine: unknown = 'ok';
    for (let i = 0; i < 200_000; i++) fine = { a: fine };
    expect(findTextProblem(fine)).to.equal(null);
  });
});
