import { useState, type FormEvent } from 'react';
import { ApiError } from '../api/graphql';
import { signIn, signOut } from '../api/session';
import { fetchViewer } from '../app/viewer';

/**
 * The key is checked (`viewer`) before the app opens; it stays in this tab's sessionStorage and goes
 * to the server only as "Authorization: Bearer".
 */
export function SignInPage() {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    sessionStorage.setItem('creditlab.apiKey', key.trim());
    try {
      await fetchViewer();
      signIn(key);
    } catch (err) {
      signOut();
      setError(err instanceof ApiError ? err.message : 'the server did not answer');
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="signin">
      <h1>Creditlab</h1>
      <p className="muted">
        Step-level credit assignment: runs, learning curves, estimator comparisons and trajectories.
      </p>
      <form onSubmit={(e) => void submit(e)}>
        <label htmlFor="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autoComplete="off"
          placeholder="cl_…"
          value={key}
          onChange={(e) => setKey(e.target.value)}
          required
        />
        <button type="submit" disabled={busy || !key.trim()}>
          Sign in
        </button>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
      </form>
      <p className="muted small">
        The server wrote an admin key to its credentials file on its first start;{' '}
        <code>npm run -s admin -- env</code> prints it, and <code>npm run admin -- create-key</code>{' '}
        makes more. The key is kept for this browser tab only.
      </p>
    </main>
  );
}
