import { openElasticsearch } from '../../../infra/search/elasticsearch';
import { DEFAULT_SEARCH_SETTINGS } from '../../../services/shared/search';
import { dropIndices, requireElasticsearch, uniqueIndexPrefix } from '../../support/search';
import { describeSearchEngineContract } from './engineContract';

/*
 * The search engine contract against a real Elasticsearch 8.x/9.x at ELASTICSEARCH_URL. It cannot
 * be obtained on this project's machines (no image registry; its analysis modules are not on
 * Maven Central): without ELASTICSEARCH_URL the suite is skipped with one line.
 */

describe('Elasticsearch search engine', () => {
  let url = '';
  // Here, not in `open`: one SKIPPED line for the whole suite.
  before(async function () {
    url = await requireElasticsearch(this, 'Elasticsearch search engine contract');
  });

  describeSearchEngineContract('Elasticsearch', async () => {
    const prefix = uniqueIndexPrefix();
    const engine = openElasticsearch({ ...DEFAULT_SEARCH_SETTINGS, url, indexPrefix: prefix });
    return {
      engine,
      async cleanup() {
        await engine.close();
        await dropIndices(url, prefix);
      },
    };
  });
});
