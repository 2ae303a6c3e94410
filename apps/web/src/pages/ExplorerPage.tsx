import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { GraphiQL } from 'graphiql';
import { Link } from 'react-router';
import { currentKey } from '../api/session';
import 'graphiql/setup-workers/vite';
import 'graphiql/style.css';

const DEFAULT_QUERY = `# The signed-in key is sent as "Authorization: Bearer" with every request.
{
  viewer { prefix project role }
  runs(first: 5) { nodes { id name method status lastIteration } }
}
`;

/** GraphiQL from the app's own bundle (no CDN), talking to /graphql with the signed-in key. */
export default function ExplorerPage() {
  const key = currentKey() ?? '';
  const fetcher = createGraphiQLFetcher({
    url: '/graphql',
    subscriptionUrl: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`,
    headers: { authorization: `Bearer ${key}` },
    wsConnectionParams: { authorization: `Bearer ${key}` },
  });
  return (
    <div className="explorer" data-testid="explorer">
      <div className="explorer-bar">
        <Link to="/">← Creditlab</Link>{' '}
        <span className="muted small">GraphQL explorer, signed in as the key of this tab</span>
      </div>
      <GraphiQL fetcher={fetcher} defaultQuery={DEFAULT_QUERY} />
    </div>
  );
}
