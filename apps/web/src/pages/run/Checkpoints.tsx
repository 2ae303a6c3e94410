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
 * as it arrives, however large); one in the database, or one the bucket would not give, is fetched
 * through the server with the key and saved from memory.
 */
async function download(c: Checkpoint, name: string): Promise<void> {
  if (c.objectUrl) {
    const res = await fetch(`${c.path}/url?filename=${encodeURIComponent(name)}`, {
      headers: withKey(),
    });
    // 404: a server older than the route (or no such checkpoint, which the server's download says).
    if (!res.ok && res.status !== 404) throw new Error(`download failed: HTTP ${res.status}`);
    const { url } = res.ok ? ((await res.json()) as { url: string | null }) : { url: null };
    if (url && (await savedFromBucket(url))) return;
  }
  const res = await fetch(c.path, { headers: withKey() });
  if (!res.ok) throw new Error(`download failed: HTTP ${res.status}`);
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** How long a download from the bucket may take to start before it is taken to have started. */
const BUCKET_ANSWER_MS = 10_000;

/**
 * Opens the presigned URL in a hidden frame, where the store's answer, an attachment, becomes a
 * download; in the app's own tab an error answer (an expired URL, a bucket this browser cannot
 * reach) would replace the app. A frame that shows a page instead (its `load`: a download shows
 * none) is a failure, told by false; no page within BUCKET_ANSWER_MS is a download under way.
 */
function savedFromBucket(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const frame = document.createElement('iframe');
    frame.hidden = true;
    const settle = (saved: boolean) => {
      clearTimeout(timer);
      resolve(saved);
      // The download, once started, is the browser's: the frame can go.
      setTimeout(() => frame.remove(), 60_000);
    };
    const timer = setTimeout(() => settle(true), BUCKET_ANSWER_MS);
    frame.addEventListener('load', () => settle(false), { once: true });
    frame.src = url;
    document.body.appendChild(frame);
  });
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
