import { Module } from '@nestjs/common';
import { RolloutsModule } from '../rollouts/rollouts.module';
import { RunCheckpointsResolver } from './checkpoints.resolver';
import { CheckpointsController } from './checkpoints.controller';
import { CheckpointsService } from './checkpoints.service';

@Module({
  imports: [RolloutsModule],
  controllers: [CheckpointsController],
  providers: [CheckpointsService, RunCheckpointsResolver],
  exports: [CheckpointsService],
})
export class CheckpointsModule {}
