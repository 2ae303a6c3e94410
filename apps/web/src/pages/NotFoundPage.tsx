import { Link } from 'react-router';

export function NotFoundPage() {
  return (
    <section>
      <h1>Not found</h1>
      <p>
        No page here. <Link to="/">All runs</Link>
      </p>
    </section>
  );
}
