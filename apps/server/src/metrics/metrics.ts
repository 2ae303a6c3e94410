import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
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
}
