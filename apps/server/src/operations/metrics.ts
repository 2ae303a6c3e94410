import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Database } from '../database/database';

/** The server's Prometheus metrics, on a registry of its own (so tests and several apps in one process do not clash). */
export class Metrics {
  readonly registry = new Registry();
  readonly ingestedEvents = new Counter({
    name: 'creditlab_ingested_events_total',
    help: 'Events accepted by ingest',
    registers: [this.registry],
  });
  readonly ingestedSteps = new Counter({
    name: 'creditlab_ingested_steps_total',
    help: 'Steps accepted by ingest',
    registers: [this.registry],
  });
  readonly threadLines = new Counter({
    name: 'creditlab_ingest_thread_lines_total',
    help: 'Ingest lines parsed and checked on the preparing thread (bodies of at least CREDITLAB_INGEST_THREAD_MIN_BYTES)',
    registers: [this.registry],
  });
  readonly duplicateEvents = new Counter({
    name: 'creditlab_duplicate_events_total',
    help: 'Events acknowledged as duplicates',
    registers: [this.registry],
  });
  readonly rejectedRequests = new Counter({
    name: 'creditlab_rejected_requests_total',
    help: 'Ingest requests rejected, by error code',
    labelNames: ['code'],
    registers: [this.registry],
  });
  readonly appendSeconds = new Histogram({
    name: 'creditlab_append_seconds',
    help: 'Duration of append requests',
    buckets: [0.005, 0.02, 0.1, 0.5, 2, 10, 60],
    registers: [this.registry],
  });
  readonly appendPhaseSeconds = new Histogram({
    name: 'creditlab_append_phase_seconds',
    help: 'Where accepted append requests spent their time, by phase (append-clock.ts); every request observes every phase, so sum/count is the mean per request',
    labelNames: ['phase'],
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.2, 1, 5],
    registers: [this.registry],
  });

  readonly httpSeconds = new Histogram({
    name: 'creditlab_http_request_seconds',
    help: 'HTTP request latency by method, route and status (GraphQL is one route)',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.002, 0.01, 0.05, 0.2, 1, 5, 30],
    registers: [this.registry],
  });
  readonly estimatorSeconds = new Histogram({
    name: 'creditlab_estimator_seconds',
    help: 'Estimator time per iteration (in a worker thread), by method',
    labelNames: ['method'],
    buckets: [0.0005, 0.002, 0.01, 0.05, 0.2, 1, 5],
    registers: [this.registry],
  });

  constructor(db: Database) {
    collectDefaultMetrics({ register: this.registry });
    const statements = db.statements;
    new Counter({
      name: 'creditlab_db_statements_total',
      help: 'SQL statements sent to Postgres by this process',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(statements.count);
      },
    });
  }

  /** A gauge whose value is read when scraped (e.g. the job queue's depth). */
  gauge(name: string, help: string, read: () => Promise<number>): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      async collect() {
        this.set(await read());
      },
    });
  }
}
