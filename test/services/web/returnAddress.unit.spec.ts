import { expect } from 'chai';
import { returnAddress } from '../../../services/web/client/returnAddress';

const ORIGIN = 'https://testament.example';

/** What the sign-in page goes to after signing in at `/login<search>` (login.ts's nextPath, with the page's address). */
function after(search: string): string {
  const page = new URL(`${ORIGIN}/login${search}`);
  return returnAddress(page.searchParams.get('next'), page);
}

/** Where the browser lands when it is sent to `target` from the sign-in page. */
const landsOn = (target: string) => new URL(target, `${ORIGIN}/login`);

describe('sign-in: where ?next= leads (services/web/client/returnAddress.ts)', () => {
  it('a path of this site is kept, with its query and fragment', () => {
    expect(after('?next=%2Fadmin%2Fimports%2F12%3Ftab%3Dmappings%23users')).to.equal(`${ORIGIN}/admin/imports/12?tab=mappings#users`);
    expect(after('?next=%2Fadmin')).to.equal(`${ORIGIN}/admin`);
    expect(after(`?next=${encodeURIComponent(`${ORIGIN}/admin`)}`)).to.equal(`${ORIGIN}/admin`);
  });

  it('no next, or an empty one, leads to the start page', () => {
    expect(after('')).to.equal('/');
    expect(after('?next=')).to.equal('/');
    expect(after('?next=http%3A%2F%2F%5B')).to.equal('/');
  });

  // Each of these, given to the browser as it was, leaves the site (the URL parser drops tab, CR
  // and LF, and reads a backslash as a slash): what the page goes to must stay on its origin,
  // named whole (the start page, or an address with the origin).
  for (const hostile of [
    '/\t/evil.example', '/\r/evil.example', '/\n/evil.example', '\t//evil.example', '//evil.example', '/\\evil.example', '\\/evil.example',
    '/\t\\evil.example', 'https://evil.example/', 'HTTPS://evil.example', 'javascript:alert(1)', ' //evil.example', '/%09/evil.example',
    // Same origin, but a path that, given alone, would name another host.
    `${ORIGIN}//evil.example`, `${ORIGIN}/\\evil.example`,
  ]) {
    it(`${JSON.stringify(hostile)} stays on the site`, () => {
      const target = after(`?next=${encodeURIComponent(hostile)}`);
      expect(landsOn(target).origin, target).to.equal(ORIGIN);
      expect(target === '/' || target.startsWith(`${ORIGIN}/`), target).to.equal(true);
    });
  }
});
