import { Module } from '@nestjs/common';
import { RolloutsModule } from '../rollouts/rollouts.module';
import { RunCheckpointsResolver } from './checkpoints.resolver';
import { CheckpointsController } from './checkpoints.controller';
import { CheckpointsService } from './checkpoints.service';
import { AbandonedUploadsSweeper } from './abandoned-uploads.sweeper';
import { checkpointBucketProvider, CheckpointBucketToken } from './checkpoint-bucket.provider';

@Module({
  imports: [RolloutsModule],
  controllers: [CheckpointsController],
  providers: [
    checkpointBucketProvider,
    CheckpointsService,
    RunCheckpointsResolver,
    AbandonedUploadsSweeper,
  ],
  // The bucket for /readyz's look at it (OperationsModule).
  exports: [CheckpointsService, CheckpointBucketToken],
})
export class CheckpointsModule {}
