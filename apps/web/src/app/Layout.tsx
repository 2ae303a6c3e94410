import { useQueryClient } from '@tanstack/react-query';
import { NavLink, Outlet } from 'react-router';
import { signOut } from '../api/session';
import { useViewer } from './viewer';

/** Header (sections, who is signed in, sign out) above the page. */
export function Layout() {
  const viewer = useViewer();
  const queries = useQueryClient();
  return (
    <>
      <header className="top">
        <NavLink to="/" className="brand">
          Creditlab
        </NavLink>
        <nav>
          <NavLink to="/" end>
            Runs
          </NavLink>
          <NavLink to="/estimators">Estimators</NavLink>
          <a href="/graphql">GraphQL explorer</a>
        </nav>
        <span className="who" data-testid="viewer">
          {viewer &&
            `cl_${viewer.prefix}_… · ${viewer.role}${viewer.project ? ` · ${viewer.project}` : ' · all projects'}`}
        </span>
        <button
          type="button"
          className="link"
          onClick={() => {
            signOut();
            queries.clear();
          }}
        >
          Sign out
        </button>
      </header>
      <main>
        <Outlet />
      </main>
    </>
  );
}
