import { useQuery } from '@tanstack/react-query';
import { fetchEstimators } from '../api/estimators-api';
import { MethodName } from '../components/MethodName';
import { Failure, Loading } from '../components/Status';

const paperLink = (paper: string) =>
  /^https?:\/\//.exec(paper) ? (
    <a href={paper} rel="noreferrer noopener" target="_blank">
      {paper}
    </a>
  ) : (
    paper
  );

/** The estimator registry: what each method does, its parameters with defaults, its diagnostics, its paper. */
export function EstimatorsPage() {
  const estimators = useQuery({ queryKey: ['estimators'], queryFn: fetchEstimators });
  if (estimators.isPending) return <Loading what="estimators" />;
  if (estimators.isError) return <Failure error={estimators.error} />;
  return (
    <section>
      <h1>Estimators</h1>
      <p className="muted">
        Every method the server can compute, on any stored run, with any parameters.
      </p>
      {estimators.data.map((e) => (
        <article key={e.name} className="estimator" data-testid="estimator" id={e.name}>
          <h2>
            <MethodName name={e.name} /> <span className="muted small">v{e.version}</span>
          </h2>
          <p>{e.description}</p>
          <p className="small">Paper: {paperLink(e.paper)}</p>
          {e.requires.length > 0 && (
            <p className="small">Needs step fields: {e.requires.join(', ')}</p>
          )}
          {e.params.length > 0 && (
            <table className="grid">
              <thead>
                <tr>
                  <th>Parameter</th>
                  <th>Default</th>
                  <th>Allowed</th>
                  <th>Meaning</th>
                </tr>
              </thead>
              <tbody>
                {e.params.map((p) => (
                  <tr key={p.name}>
                    <td>
                      <code>{p.name}</code>
                    </td>
                    <td>
                      <code>{p.default === null ? 'absent' : JSON.stringify(p.default)}</code>
                    </td>
                    <td>{p.allowed}</td>
                    <td>{p.description}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {e.diagnostics.length > 0 && (
            <p className="small">
              Diagnostics per step:{' '}
              {e.diagnostics.map((d) => (
                <span key={d.name} title={d.description} className="tag">
                  {d.name}
                </span>
              ))}
            </p>
          )}
        </article>
      ))}
    </section>
  );
}
