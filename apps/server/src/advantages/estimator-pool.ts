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
  private readonly pool: Piscina<EstimateTask, EstimateReply>;

  constructor(threads: number) {
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
    const reply = await this.pool.run({ batch, method, params });
    if (!reply.ok) throw new EstimatorInputError(reply.code as EstimatorErrorCode, reply.message);
    return reply;
  }

  onModuleDestroy(): Promise<void> {
    return this.pool.destroy();
  }
}
