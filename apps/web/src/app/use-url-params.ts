import { useSearchParams } from 'react-router';

/**
 * How a change enters the browser's history: `push` for a choice the Back button should undo (a
 * filter picked, a run overlaid), `replace` for a stream of small steps (typing, dragging a slider),
 * which would otherwise fill the history with one entry per keystroke.
 */
export type HistoryMode = 'push' | 'replace';

/**
 * The URL's query parameters, and a way to change some of them. A change starts from the address
 * bar as it is now, not from the parameters of the last render: react-router's setter (its function
 * form too) starts from the latter, so two changes made before the page re-renders (two filters
 * changed in quick succession, fast typing) would lose the first.
 */
export function useUrlParams(): [
  URLSearchParams,
  (change: (next: URLSearchParams) => void, history?: HistoryMode) => void,
] {
  const [params, setParams] = useSearchParams();
  const update = (change: (next: URLSearchParams) => void, history: HistoryMode = 'replace') => {
    const next = new URLSearchParams(window.location.search);
    change(next);
    if (next.toString() === window.location.search.replace(/^\?/, '')) return;
    setParams(next, { replace: history === 'replace' });
  };
  return [params, update];
}
