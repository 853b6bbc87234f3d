/**
 * Where the sign-in page goes after signing in: `next` (its ?next=) as the browser would resolve it
 * against the page (the URL parser drops tabs and line breaks and reads a backslash as a slash, so
 * no look at the text can tell), kept only when it stays on the page's origin; else the start
 * page. Answered whole, with the origin: a path of its own could start with // and name another
 * host. No DOM: tested in Node too (test/services/web/returnAddress.unit.spec.ts).
 */
export function returnAddress(next: string | null, page: { href: string; origin: string }): string {
  if (!next) return '/';
  let target: URL;
  try {
    target = new URL(next, page.href);
  } catch {
    return '/';
  }
  return target.origin === page.origin ? target.href : '/';
}
