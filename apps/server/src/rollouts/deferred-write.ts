/**
 * Statements whose values were taken when it was made, sent when it is called. Ingest builds a
 * chunk's rows while PostgreSQL still writes the chunk before it, so what a statement stores must be
 * fixed then: the projection's in-memory state moves on with the next chunk before it is sent.
 */
export type DeferredWrite = () => Promise<void>;

export const nothingToWrite: DeferredWrite = () => Promise.resolve();
