import { Controller, Get, Header, Inject } from '@nestjs/common';
import { Metrics } from './metrics';
import { Requires } from '../access/requires.decorator';

/** Open like the probes: Prometheus scrapes without a key; nothing here is per project. */
@Controller()
@Requires('public')
export class MetricsController {
  constructor(@Inject(Metrics) private readonly metrics: Metrics) {}

  /** Prometheus exposition format. */
  @Get('metrics')
  @Header('Content-Type', 'text/plain; version=0.0.4')
  scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
