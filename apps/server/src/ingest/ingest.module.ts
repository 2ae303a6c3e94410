import { Module } from '@nestjs/common';
import { EventAppender } from './event-appender.service';
import { RunsController } from './runs.controller';
import { RunsService } from './runs.service';

@Module({
  controllers: [RunsController],
  providers: [RunsService, EventAppender],
  exports: [RunsService, EventAppender],
})
export class IngestModule {}
