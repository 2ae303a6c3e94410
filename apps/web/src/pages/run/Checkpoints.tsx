import { useState } from 'react';
import { currentKey } from '../../api/session';
import type { RunDetail } from '../../api/types';
import { when } from '../../components/format';
import { Failure } from '../../components/Status';

/**
 * A download cannot carry a header and the key never goes in a URL: the app fetches the bytes with
 * its key and saves them as a file.
 */
async function download(path: string, name: string): Promise<void> {
  const res = await fetch(path, { headers: { authorization: `Bearer ${currentKey() ?? ''}` } });
  if (!res.ok) throw new Error(`download failed: HTTP ${res.status}`);
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function Checkpoints({ run }: { run: RunDetail }) {
  const [error, setError] = useState<unknown>(null);
  return (
    <div>
      <h2>Checkpoints</h2>
      {!run.checkpoints.length ? (
        <p className="muted">No checkpoints.</p>
      ) : (
        <table className="grid" data-testid="checkpoints-table">
          <thead>
            <tr>
              <th className="num">After iteration</th>
              <th className="num">Size</th>
              <th>Format</th>
              <th>SHA-256</th>
              <th>Saved</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {run.checkpoints.map((c) => (
              <tr key={c.iteration}>
                <td className="num">{c.iteration}</td>
                <td className="num">{(c.bytes / 1024).toFixed(0)} KiB</td>
                <td>{c.format}</td>
                <td>
                  <code title={c.sha256}>{c.sha256.slice(0, 12)}…</code>
                </td>
                <td>{when(c.createdAt)}</td>
                <td>
                  <button
                    type="button"
                    className="link"
                    onClick={() =>
                      void download(c.path, `${run.name}-checkpoint-${c.iteration}.bin`).catch(
                        setError,
                      )
                    }
                  >
                    download
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {error !== null && <Failure error={error} />}
    </div>
  );
}
