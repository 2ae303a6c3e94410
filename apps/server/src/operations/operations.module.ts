import { Module } from '@nestjs/common';
import { HealthController } from './health.controller';
import { MetricsController } from './metrics.controller';

/** What operators and orchestrators call: liveness, readiness, Prometheus metrics. */
@Module({ controllers: [HealthController, MetricsController] })
export class OperationsModule {}
