import { useSearchParams } from 'react-router';

/**
 * The URL's query parameters, and a way to change some of them. A change starts from the address
 * bar as it is now, not from the parameters of the last render: react-router's setter (its function
 * form too) starts from the latter, so two changes made before the page re-renders (two filters
 * changed in quick succession, fast typing) would lose the first.
 */
export function useUrlParams(): [
  URLSearchParams,
  (change: (next: URLSearchParams) => void) => void,
] {
  const [params, setParams] = useSearchParams();
  const update = (change: (next: URLSearchParams) => void) => {
    const next = new URLSearchParams(window.location.search);
    change(next);
    setParams(next, { replace: true });
  };
  return [params, update];
}
