import { Module } from '@nestjs/common';
import { RolloutsModule } from '../rollouts/rollouts.module';
import { RunConnectionResolver } from './run-connection.resolver';
import { RunProgressResolver } from './run-progress.resolver';
import { RunProgressService } from './run-progress.service';
import { RunQueries } from './run-queries.service';
import { RunsController } from './runs.controller';
import { RunsResolver } from './runs.resolver';
import { RunsService } from './runs.service';

/** Runs: created (with their first event), listed, read, finished. */
@Module({
  imports: [RolloutsModule],
  controllers: [RunsController],
  providers: [
    RunsService,
    RunQueries,
    RunsResolver,
    RunConnectionResolver,
    RunProgressService,
    RunProgressResolver,
  ],
})
export class RunsModule {}
