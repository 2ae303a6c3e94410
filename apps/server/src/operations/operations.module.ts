import { Module } from '@nestjs/common';
import { CheckpointsModule } from '../checkpoints/checkpoints.module';
import { HealthController } from './health.controller';
import { MetricsController } from './metrics.controller';

/** What operators and orchestrators call: liveness, readiness, Prometheus metrics. */
@Module({ imports: [CheckpointsModule], controllers: [HealthController, MetricsController] })
export class OperationsModule {}
