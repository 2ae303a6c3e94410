import type { ColumnarBatch } from '@creditlab/estimators';
import { EstimatorInputError, type EstimatorErrorCode } from '@creditlab/estimators';
import type { OnModuleDestroy } from '@nestjs/common';
import path from 'node:path';
import { Piscina } from 'piscina';
import type { EstimateReply, EstimateTask, PackedEstimate } from './estimate-worker';

/**
 * Estimators run off the event loop, in a pool of worker threads (piscina), so
 * a long recompute never stalls ingest or GraphQL. Bad input comes back as the
 * library's EstimatorInputError.
 */
export class EstimatorPool implements OnModuleDestroy {
  private readonly pool: Piscina<EstimateTask, EstimateReply[]>;

  constructor(private readonly threads: number) {
    this.pool = new Piscina({
      filename: path.join(__dirname, 'estimate-worker.shim.js'),
      // Every thread from the start, each warmed up once (estimate-worker.ts): a thread started on
      // demand would load and compile the estimators while a request waits for it.
      minThreads: threads,
      maxThreads: threads,
    });
  }

  async run(
    batch: ColumnarBatch,
    method: string,
    params: Record<string, unknown>,
  ): Promise<PackedEstimate> {
    const [out] = await this.runMany([batch], method, params, { diagnostics: true });
    if (out instanceof EstimatorInputError) throw out;
    return out as PackedEstimate;
  }

  /**
   * One method on many batches, in order: one task per thread, each with every `threads`-th batch,
   * rather than one task per batch. Each hand-over to a thread and back waits for both threads to be
   * scheduled, which on a busy machine cost more than estimating an iteration.
   */
  async runMany(
    batches: ColumnarBatch[],
    method: string,
    params: Record<string, unknown>,
    { diagnostics }: { diagnostics: boolean },
  ): Promise<(PackedEstimate | EstimatorInputError)[]> {
    const tasks = Math.min(this.threads, batches.length);
    const replies = await Promise.all(
      Array.from({ length: tasks }, (_, t) =>
        this.pool.run({
          batches: batches.filter((_, i) => i % tasks === t),
          method,
          params,
          diagnostics,
        }),
      ),
    );
    return batches.map((_, i) => {
      const reply = (replies[i % tasks] as EstimateReply[])[Math.floor(i / tasks)] as EstimateReply;
      return reply.ok
        ? reply
        : new EstimatorInputError(reply.code as EstimatorErrorCode, reply.message);
    });
  }

  onModuleDestroy(): Promise<void> {
    return this.pool.destroy();
  }
}
