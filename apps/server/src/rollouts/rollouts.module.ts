import { Module } from '@nestjs/common';
import { EventAppender } from './event-appender.service';
import { EventsController } from './events.controller';
import {
  EventsResolver,
  RolloutGroupResolver,
  RunRolloutsResolver,
  TrajectoryResolver,
} from './rollouts.resolver';

/** Events in (NDJSON over HTTP, GraphQL), the projections they maintain, and the rollouts read back. */
@Module({
  controllers: [EventsController],
  providers: [
    EventAppender,
    EventsResolver,
    RunRolloutsResolver,
    RolloutGroupResolver,
    TrajectoryResolver,
  ],
  exports: [EventAppender],
})
export class RolloutsModule {}
