import type { ReactNode } from 'react';

/**
 * Previous / next over a cursor connection. `cursors` is the stack of `after` cursors of the pages
 * visited (the first page's is null), so "previous" needs no backward cursor from the server.
 */
export function Pager<Cursor>({
  cursors,
  setCursors,
  pageInfo,
  children,
}: {
  cursors: (Cursor | null)[];
  setCursors: (cursors: (Cursor | null)[]) => void;
  pageInfo: { hasNextPage: boolean; endCursor: Cursor | null };
  /** Extra controls after the buttons (e.g. the page size). */
  children?: ReactNode;
}) {
  return (
    <div className="pager">
      <button
        type="button"
        disabled={cursors.length < 2}
        onClick={() => setCursors(cursors.slice(0, -1))}
      >
        ← Previous
      </button>
      <span>page {cursors.length}</span>
      <button
        type="button"
        disabled={!pageInfo.hasNextPage}
        onClick={() => setCursors([...cursors, pageInfo.endCursor])}
      >
        Next →
      </button>
      {children}
    </div>
  );
}
