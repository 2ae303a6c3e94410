import { useState } from 'react';
import { currentKey } from '../../api/session';
import type { RunDetail } from '../../api/types';
import { when } from '../../components/format';
import { Failure } from '../../components/Status';

type Checkpoint = RunDetail['checkpoints'][number];

const withKey = () => ({ authorization: `Bearer ${currentKey() ?? ''}` });

/**
 * A download cannot carry a header and the key never goes in a URL. A checkpoint in the server's
 * bucket is fetched by the browser itself from a presigned URL the app asks for with its key (saved
 * as it arrives, however large); one in the database is fetched with the key and saved from memory.
 */
async function download(c: Checkpoint, name: string): Promise<void> {
  if (c.objectUrl) {
    const res = await fetch(`${c.path}/url?filename=${encodeURIComponent(name)}`, {
      headers: withKey(),
    });
    if (!res.ok) throw new Error(`download failed: HTTP ${res.status}`);
    const { url } = (await res.json()) as { url: string | null };
    if (url) return save(url, name);
  }
  const res = await fetch(c.path, { headers: withKey() });
  if (!res.ok) throw new Error(`download failed: HTTP ${res.status}`);
  const url = URL.createObjectURL(await res.blob());
  save(url, name);
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

function save(url: string, name: string): void {
  const a = document.createElement('a');
  a.href = url;
  a.download = name; // a URL of another origin is named by the store's answer instead
  a.click();
}

/** A file name of the characters a store's answer may carry unquoted. */
const fileName = (runName: string, iteration: number) =>
  `${
    runName
      .slice(0, 150)
      .replace(/[^\w.+-]+/g, '-')
      .replace(/^[.-]+/, '') || 'run'
  }-checkpoint-${iteration}.bin`;

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
                      void download(c, fileName(run.name, c.iteration)).catch(setError)
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
