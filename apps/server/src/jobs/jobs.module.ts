import { Module } from '@nestjs/common';
import { AdvantagesModule } from '../advantages/advantages.module';
import { JobsResolver, RunJobsResolver, RunProgressJobsResolver } from './jobs.resolver';
import { RecomputeService } from './recompute.service';

/** Durable recompute jobs (pg-boss): whole runs under any method, in turns, resumable. */
@Module({
  imports: [AdvantagesModule],
  providers: [RecomputeService, JobsResolver, RunJobsResolver, RunProgressJobsResolver],
})
export class JobsModule {}
