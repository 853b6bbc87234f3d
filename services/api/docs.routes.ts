import fs from 'node:fs';
import path from 'node:path';
import { Router } from 'express';
import { badRequest } from '../shared/errors';
import { CATEGORIES, type Category, isCategory, openApiFor } from './openapi';

/** The version in the nearest package.json above this file (the same from src and from dist). */
function packageVersion(): string {
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
  }
  return '0.0.0';
}

/** GET /api/docs: the categories; GET /api/docs?category=…: that category's OpenAPI 3.0 document. Public: they hold no data. */
export function docsRoutes(): Router {
  const router = Router();
  const version = packageVersion();
  // The catalogue does not change while the process runs: each document is generated once.
  const documents = new Map<Category, string>();
  const documentOf = (category: Category) => {
    if (!documents.has(category)) documents.set(category, JSON.stringify(openApiFor(category, version)));
    return documents.get(category)!;
  };
  router.get('/api/docs', (req, res) => {
    const { category } = req.query;
    if (category === undefined) {
      res.json({
        categories: Object.entries(CATEGORIES).map(([name, description]) => ({ name, description, url: `/api/docs?category=${name}` })),
      });
      return;
    }
    if (typeof category !== 'string' || !isCategory(category))
      throw badRequest('unknown-category', `Unknown category "${String(category)}"`, { path: 'category', categories: Object.keys(CATEGORIES) });
    res.type('application/json').send(documentOf(category));
  });
  return router;
}
