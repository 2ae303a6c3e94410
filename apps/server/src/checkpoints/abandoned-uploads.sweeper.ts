import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { CheckpointsService } from './checkpoints.service';

/**
 * Parts are swept once they are this old and no checkpoint names their upload. An upload lasts at
 * most Node's request timeout (300 s), so an hour leaves no upload in progress at risk.
 */
export const ABANDONED_PART_SECONDS = 3600;
const SWEEP_EVERY_MS = 3600_000;

/**
 * Deletes the parts (or the bucket's objects) of checkpoint uploads that ended without their
 * checkpoint and could not delete them themselves (the server killed mid-upload, the database unreachable when they tried): once
 * at start, then hourly. Every server process sweeps; the deletes are idempotent.
 */
@Injectable()
export class AbandonedUploadsSweeper implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('checkpoints');
  private timer?: NodeJS.Timeout;

  constructor(@Inject(CheckpointsService) private readonly checkpoints: CheckpointsService) {}

  onApplicationBootstrap(): void {
    // Started, not awaited: a long delete after a crash must not hold the server's start.
    void this.sweep();
    this.timer = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  private async sweep(): Promise<void> {
    try {
      const { parts, objects } = await this.checkpoints.sweepAbandoned(ABANDONED_PART_SECONDS);
      if (parts > 0)
        this.logger.log(`deleted ${parts} parts of checkpoint uploads abandoned over an hour ago`);
      if (objects > 0)
        this.logger.log(
          `deleted ${objects} objects of checkpoint uploads abandoned over an hour ago from the bucket`,
        );
    } catch (e) {
      this.logger.warn(`could not sweep abandoned checkpoint uploads: ${String(e)}`);
    }
  }
}
