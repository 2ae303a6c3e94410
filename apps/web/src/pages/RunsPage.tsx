import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { fetchEstimators } from '../api/estimators-api';
import { fetchRuns, runSorts, RUN_STATUSES, type RunQuery } from '../api/runs-api';
import { isStatus, type RunRow } from '../api/types';
import { useCaps } from '../app/use-caps';
import { useUrlParams, type HistoryMode } from '../app/use-url-params';
import { pct, shortId, when } from '../components/format';
import { MethodName } from '../components/MethodName';
import { Failure, Loading, StatusPill } from '../components/Status';
import { Pager } from '../components/Pager';

type FilterName = 'project' | 'env' | 'method' | 'status' | 'tags' | 'name' | 'sort';

const PAGE_SIZES = [25, 50, 100];

const SELECTION_KEY = 'creditlab.runs.selected';

function storedSelection(): string[] {
  try {
    const ids: unknown = JSON.parse(sessionStorage.getItem(SELECTION_KEY) ?? '[]');
    return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
  } catch {
    return []; // written by something else: start with nothing ticked
  }
}

/** The `after` cursors of the pages walked to reach this one (the first page's is null). */
function pagesOf(param: string): (string | null)[] {
  return [null, ...param.split(',').filter(Boolean)];
}

/** Cursors never hold a comma (base64url), so the walk is kept as one list. */
function setPages(url: URLSearchParams, cursors: (string | null)[]): void {
  const walked = cursors.filter((c): c is string => !!c);
  if (walked.length) url.set('pages', walked.join(','));
  else url.delete('pages');
}

/** Runs under filters kept in the URL (shareable, back-button friendly), a page at a time by cursor. */
export function RunsPage() {
  const caps = useCaps();
  const [params, updateParams] = useUrlParams();
  // Runs ticked to plot together, in the order ticked (the first one's page shows them); kept for
  // the tab, so that they are still ticked after a look at a run and Back.
  const [selected, setSelected] = useState<string[]>(storedSelection);
  useEffect(() => sessionStorage.setItem(SELECTION_KEY, JSON.stringify(selected)), [selected]);
  const get = (k: string) => params.get(k) ?? '';
  // The page and its size live in the address too, so Back from a run returns to the page it was on.
  const cursors = pagesOf(get('pages'));
  const size = PAGE_SIZES.includes(Number(get('size'))) ? Number(get('size')) : PAGE_SIZES[0]!;
  const setCursors = (next: (string | null)[]) =>
    updateParams((url) => setPages(url, next), 'push');
  const setSize = (n: number) =>
    updateParams((url) => {
      if (n === PAGE_SIZES[0]) url.delete('size');
      else url.set('size', String(n));
      setPages(url, [null]);
    }, 'push');
  const q: RunQuery = {
    project: get('project'),
    env: get('env'),
    method: get('method'),
    status: get('status'),
    tags: get('tags')
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean),
    nameContains: get('name'),
    sort: get('sort') || 'CREATED_DESC',
    first: size,
    after: cursors.at(-1) ?? null,
  };
  const runs = useQuery({
    queryKey: ['runs', q],
    queryFn: () => fetchRuns(caps!, q),
    enabled: !!caps,
    placeholderData: keepPreviousData,
    // The live indicator: while a listed run is running, the page refreshes itself.
    refetchInterval: (query) =>
      query.state.data?.nodes.some((r) => isStatus(r.status, 'running')) ? 3000 : false,
  });
  // Typing replaces the history entry; a choice from a list is one Back can undo.
  const setFilter = (k: string, v: string, history: HistoryMode = 'replace') => {
    updateParams((next) => {
      if (v) next.set(k, v);
      else next.delete(k);
      setPages(next, [null]);
    }, history);
  };
  // Name search on servers without `nameContains`: within the page shown.
  const nodes = (runs.data?.nodes ?? []).filter(
    (r) =>
      caps?.has('RunFilter.nameContains') ||
      !q.nameContains ||
      r.name.toLowerCase().includes(q.nameContains.toLowerCase()),
  );
  return (
    <section>
      <h1>Runs</h1>
      <RunFilters
        get={get}
        set={setFilter}
        sorts={caps?.hasType('RunSort') ? runSorts(caps) : []}
      />
      {runs.isPending && <Loading what="runs" />}
      {runs.isError && <Failure error={runs.error} />}
      {runs.isError && cursors.length > 1 && /"after"/.test(String(runs.error)) && (
        <p data-testid="pages-invalid">
          This address names a page the list no longer has.{' '}
          <button type="button" className="link" onClick={() => setCursors([null])}>
            Go to the first page
          </button>
        </p>
      )}
      {runs.data && (
        <>
          <p className="muted" data-testid="runs-count">
            {runs.data.totalCount != null
              ? plural(runs.data.totalCount, 'run')
              : `${plural(nodes.length, 'run')} on this page`}
            {runs.isFetching && ' · refreshing'}
          </p>
          <PlotSelected
            selected={selected}
            hidden={selected.filter((id) => !nodes.some((r) => r.id === id)).length}
            clear={() => setSelected([])}
          />
          <RunsTable
            runs={nodes}
            sort={
              caps?.has('RunSort.METRIC_DESC')
                ? { current: q.sort ?? '', by: (s) => setFilter('sort', s, 'push') }
                : undefined
            }
            selected={selected}
            toggle={(id) =>
              setSelected((ids) => (ids.includes(id) ? ids.filter((x) => x !== id) : [...ids, id]))
            }
          />
          <Pager cursors={cursors} setCursors={setCursors} pageInfo={runs.data.pageInfo}>
            <label>
              per page{' '}
              <select value={size} onChange={(e) => setSize(Number(e.target.value))}>
                {PAGE_SIZES.map((n) => (
                  <option key={n}>{n}</option>
                ))}
              </select>
            </label>
          </Pager>
        </>
      )}
    </section>
  );
}

function RunFilters({
  get,
  set,
  sorts,
}: {
  get: (k: string) => string;
  set: (k: string, v: string, history?: HistoryMode) => void;
  /** The orders this server offers; none: it cannot sort. */
  sorts: string[];
}) {
  const estimators = useQuery({ queryKey: ['estimators'], queryFn: fetchEstimators });
  const text = (k: FilterName, label: string, placeholder = '') => (
    <label>
      {label}
      <FilterText name={k} initial={get(k)} placeholder={placeholder} onChange={(v) => set(k, v)} />
    </label>
  );
  return (
    <form className="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter runs">
      {text('name', 'Name contains')}
      {text('project', 'Project')}
      {text('env', 'Environment')}
      <label>
        Method
        <select value={get('method')} onChange={(e) => set('method', e.target.value, 'push')}>
          <option value="">any</option>
          {estimators.data?.map((m) => (
            <option key={m.name}>{m.name}</option>
          ))}
        </select>
      </label>
      <label>
        Status
        <select value={get('status')} onChange={(e) => set('status', e.target.value, 'push')}>
          <option value="">any</option>
          {RUN_STATUSES.map((s) => (
            <option key={s}>{s}</option>
          ))}
        </select>
      </label>
      {text('tags', 'Tags (all of)', 'a, b')}
      <label>
        Sort
        <select
          value={get('sort') || 'CREATED_DESC'}
          disabled={sorts.length === 0}
          onChange={(e) => set('sort', e.target.value, 'push')}
        >
          {(sorts.length ? sorts : ['CREATED_DESC']).map((s) => (
            <option key={s} value={s}>
              {s.toLowerCase().replace(/_/g, ' ')}
            </option>
          ))}
        </select>
      </label>
    </form>
  );
}

/**
 * A text filter kept in the address: typed text goes to the URL as it is typed (replacing the
 * history entry), and Back or Forward, which move the URL under it, put the URL's text back in the
 * field. Left uncontrolled, since a controlled field fed from the URL would lag a keystroke behind
 * the router.
 */
function FilterText({
  name,
  placeholder,
  initial,
  onChange,
}: {
  name: FilterName;
  placeholder: string;
  initial: string;
  onChange(value: string): void;
}) {
  const ref = useRef<HTMLInputElement>(null);
  // The address changed by a link (the header's "Runs") while the field is not being typed into.
  useEffect(() => {
    const input = ref.current;
    if (input && input.value !== initial && document.activeElement !== input) input.value = initial;
  }, [initial]);
  useEffect(() => {
    const restore = () => {
      if (ref.current)
        ref.current.value = new URLSearchParams(window.location.search).get(name) ?? '';
    };
    window.addEventListener('popstate', restore);
    return () => window.removeEventListener('popstate', restore);
  }, [name]);
  return (
    <input
      ref={ref}
      type="search"
      defaultValue={initial}
      placeholder={placeholder}
      onChange={(e) => onChange(e.target.value)}
    />
  );
}

/** Opens the first ticked run's curves with the others overlaid (kept in its address). */
function PlotSelected({
  selected,
  hidden,
  clear,
}: {
  selected: string[];
  /** How many of them this page does not show (another page, or filtered out since ticked). */
  hidden: number;
  clear(): void;
}) {
  const navigate = useNavigate();
  if (!selected.length) return null;
  const [first, ...rest] = selected;
  const href = `/runs/${first}${rest.length ? `?with=${rest.join(',')}` : ''}`;
  return (
    <p className="selection" data-testid="selection">
      <button type="button" onClick={() => void navigate(href)}>
        Plot {plural(selected.length, 'run')} together
      </button>{' '}
      {hidden > 0 && (
        <span className="muted" data-testid="selection-hidden">
          ({hidden} of them not on this page){' '}
        </span>
      )}
      <button type="button" className="link" onClick={clear}>
        clear
      </button>
    </p>
  );
}

function RunsTable({
  runs,
  selected,
  toggle,
  sort,
}: {
  runs: RunRow[];
  selected: string[];
  toggle(id: string): void;
  /** The order shown, and how to sort by a column (absent: the server cannot sort by metrics). */
  sort?: { current: string; by(sort: string): void };
}) {
  // A column the list can be sorted by is a button, highest first, as in W&B's runs table.
  const sortable = (label: string, key: string) => (
    <th className="num" aria-sort={sort?.current === key ? 'descending' : undefined}>
      {sort ? (
        <button type="button" className="link" onClick={() => sort.by(key)}>
          {label}
          {sort.current === key ? ' ↓' : ''}
        </button>
      ) : (
        label
      )}
    </th>
  );
  if (!runs.length) return <p>No runs match.</p>;
  return (
    <div className="table-wrap">
      <table className="grid" data-testid="runs-table">
        <thead>
          <tr>
            <th aria-label="Select" />
            <th>Name</th>
            <th>Project</th>
            <th>Env</th>
            <th>Method</th>
            <th>Status</th>
            <th className="num">Iterations</th>
            {sortable('Training success', 'TRAINING_SUCCESS_DESC')}
            {sortable('Held-out success', 'HELD_OUT_SUCCESS_DESC')}
            <th>Created</th>
            <th>Tags</th>
            <th>Parent</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <tr key={r.id} data-testid="run-row">
              <td>
                <input
                  type="checkbox"
                  checked={selected.includes(r.id)}
                  onChange={() => toggle(r.id)}
                  aria-label={`select ${r.name}`}
                />
              </td>
              <td>
                <Link to={`/runs/${r.id}`}>{r.name}</Link>
              </td>
              <td>{r.project}</td>
              <td>{r.env}</td>
              <td>
                <MethodName name={r.method} />
              </td>
              <td>
                <StatusPill status={r.status} />
              </td>
              <td className="num">{iterationsOf(r)}</td>
              <td className="num">{pct(r.lastTrainingSuccess)}</td>
              <td className="num">{pct(r.lastEvaluationSuccess)}</td>
              <td>{when(r.createdAt)}</td>
              <td>
                {r.tags.map((t) => (
                  <span key={t} className="tag" title={t}>
                    {t}
                  </span>
                ))}
              </td>
              <td>
                {r.parentRunId && (
                  <Link to={`/runs/${r.parentRunId}`}>{shortId(r.parentRunId)}</Link>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * The iterations a run trained on. `lastIteration + 1` (servers without iterationCount) overcounts a
 * run whose last event is the checkpoint after its last iteration, and a fork, which starts later.
 */
function iterationsOf(r: RunRow): number {
  return r.iterationCount ?? (r.lastIteration === null ? 0 : r.lastIteration + 1);
}

const plural = (n: number, noun: string) =>
  `${n.toLocaleString('en')} ${noun}${n === 1 ? '' : 's'}`;
