import { lazy, Suspense, useSyncExternalStore } from 'react';
import { Route, Routes } from 'react-router';
import { currentKey, onSessionChange } from '../api/session';
import { Loading } from '../components/Status';
import { ComparePage } from '../pages/ComparePage';
import { EstimatorsPage } from '../pages/EstimatorsPage';
import { NotFoundPage } from '../pages/NotFoundPage';
import { RunPage } from '../pages/RunPage';
import { RunsPage } from '../pages/RunsPage';
import { SignInPage } from '../pages/SignInPage';
import { TrajectoryPage } from '../pages/TrajectoryPage';
import { Layout } from './Layout';

// GraphiQL and its editor are large: loaded only when the explorer opens.
const ExplorerPage = lazy(() => import('../pages/ExplorerPage'));

/** Every page needs a key; without one, the sign-in form shows in place and the page follows. */
export function App() {
  const key = useSyncExternalStore(onSessionChange, currentKey);
  if (!key) return <SignInPage />;
  return (
    <Routes>
      <Route
        path="/graphql"
        element={
          <Suspense fallback={<Loading what="the GraphQL explorer" />}>
            <ExplorerPage />
          </Suspense>
        }
      />
      <Route element={<Layout />}>
        <Route index element={<RunsPage />} />
        <Route path="runs/:runId" element={<RunPage />} />
        <Route path="runs/:runId/compare" element={<ComparePage />} />
        <Route path="runs/:runId/iterations/:iteration/groups" element={<TrajectoryPage />} />
        <Route
          path="runs/:runId/iterations/:iteration/groups/:groupId"
          element={<TrajectoryPage />}
        />
        <Route path="estimators" element={<EstimatorsPage />} />
        <Route path="*" element={<NotFoundPage />} />
      </Route>
    </Routes>
  );
}
