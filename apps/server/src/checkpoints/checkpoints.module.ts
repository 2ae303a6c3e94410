import { Module } from '@nestjs/common';
import { RolloutsModule } from '../rollouts/rollouts.module';
import { RunCheckpointsResolver } from './checkpoints.resolver';
import { CheckpointsController } from './checkpoints.controller';
import { CheckpointsService } from './checkpoints.service';
import { AbandonedUploadsSweeper } from './abandoned-uploads.sweeper';
import {
  BucketDownloadOriginToken,
  bucketDownloadOriginProvider,
  checkpointBucketProvider,
  CheckpointBucketToken,
} from './checkpoint-bucket.provider';

@Module({
  imports: [RolloutsModule],
  controllers: [CheckpointsController],
  providers: [
    checkpointBucketProvider,
    bucketDownloadOriginProvider,
    CheckpointsService,
    RunCheckpointsResolver,
    AbandonedUploadsSweeper,
  ],
  // The bucket for /readyz's look at it (OperationsModule), its URLs' origin for the web app's page.
  exports: [CheckpointsService, CheckpointBucketToken, BucketDownloadOriginToken],
})
export class CheckpointsModule {}
