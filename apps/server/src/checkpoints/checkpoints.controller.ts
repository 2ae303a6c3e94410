import {
  Controller,
  Get,
  Header,
  HttpCode,
  Inject,
  Logger,
  Param,
  Put,
  Query,
  Req,
  Res,
  StreamableFile,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { Readable } from 'node:stream';
import { Caller } from '../access/caller.decorator';
import type { Principal } from '../access/principal';
import { ProjectScope } from '../access/project-scope.service';
import { Requires } from '../access/requires.decorator';
import { ParseIterationPipe } from '../http/parse-iteration.pipe';
import { AppConfigToken, type AppConfig } from '../config/app-config.provider';
import { DomainError, ErrorCode } from '../errors/domain-error';
import {
  CheckpointsService,
  type CheckpointDownloadUrl,
  type CheckpointInfo,
} from './checkpoints.service';
import { refuseEncodedBody } from '../http/unencoded-body';
import { ConcurrencyLimits } from '../access/concurrency-limits';
import { ProcessBudget } from '../access/process-budget';
import { receiveInParts } from './upload-parts';
import { IdleWatch } from '../http/idle-watch';
import { RunIdPipe } from '../http/run-id.pipe';

const FORMAT = /^[\w.+/-]{1,100}$/;
/** A file name the store's answer may carry: nothing to quote, no path. */
const FILENAME = /^(?!\.)[\w.+-]{1,200}$/;

/**
 * What a download hands the response at a time: progress is seen piece by piece, where a whole
 * 1 MiB part would be seen only once the client had read a megabyte more.
 */
const DOWNLOAD_PIECE_BYTES = 64 * 1024;

/** The parts cut into views of DOWNLOAD_PIECE_BYTES; `taken` is told each time one is asked for. */
async function* inPieces(parts: AsyncIterable<Buffer>, taken: () => void): AsyncGenerator<Buffer> {
  for await (const part of parts)
    for (let at = 0; at < part.length; at += DOWNLOAD_PIECE_BYTES) {
      taken();
      yield part.subarray(at, at + DOWNLOAD_PIECE_BYTES);
    }
}

/**
 * Checkpoints of a run: upload (PUT, raw bytes), list, download. `X-Creditlab-Checkpoint-Format`
 * names the format (the trainer's is creditlab-text-policy/v1); the digest comes back as a header
 * and in the `checkpoint.saved` event.
 */
@Controller('v1/runs/:id/checkpoints')
export class CheckpointsController {
  private readonly uploads: ConcurrencyLimits;
  private readonly allUploads: ProcessBudget;
  private readonly allDownloads: ProcessBudget;
  private readonly downloads: ConcurrencyLimits;
  private readonly logger = new Logger('checkpoints');

  constructor(
    @Inject(CheckpointsService) private readonly checkpoints: CheckpointsService,
    @Inject(ProjectScope) private readonly scope: ProjectScope,
    @Inject(AppConfigToken) private readonly config: AppConfig,
  ) {
    this.uploads = new ConcurrencyLimits(
      'checkpoint uploads',
      config.limits.checkpointConcurrencyPerKey,
    );
    // Every key's uploads together: each holds its parts' buffers (up to 24 MiB into a bucket).
    this.allUploads = new ProcessBudget(
      config.limits.checkpointUploads,
      (held, _asked, budget) =>
        `this server already has ${held} checkpoint uploads in progress, its limit (CREDITLAB_CHECKPOINT_UPLOADS=${budget}); retry shortly`,
      5,
    );
    // A download may hold a connection to the bucket for as long as its client reads: all keys
    // together have a bounded number, fewer than the bucket client's connections (the provider).
    this.allDownloads = new ProcessBudget(
      config.limits.checkpointDownloads,
      (held, _asked, budget) =>
        `this server already has ${held} checkpoint downloads in progress, its limit (CREDITLAB_CHECKPOINT_DOWNLOADS=${budget}); retry shortly`,
      5,
    );
    // A download holds a chunk or two while its client reads, however slowly: a key has a few.
    this.downloads = new ConcurrencyLimits(
      'checkpoint downloads',
      config.limits.checkpointConcurrencyPerKey,
    );
  }

  @Put(':iteration')
  @HttpCode(201)
  @Requires('write')
  async upload(
    @Caller() caller: Principal,
    @Param('id', RunIdPipe) runId: string,
    @Param('iteration', ParseIterationPipe) iteration: number,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<CheckpointInfo> {
    await this.scope.assertRun(caller, runId);
    const format = String(
      req.headers['x-creditlab-checkpoint-format'] ?? 'application/octet-stream',
    );
    if (!FORMAT.test(format))
      throw new DomainError(
        ErrorCode.InvalidInput,
        `X-Creditlab-Checkpoint-Format: 1–100 of [A-Za-z0-9_.+/-], got ${JSON.stringify(format)}`,
      );
    refuseEncodedBody(req);
    const { maxCheckpointBytes, idleMs } = this.config.limits;
    // An upload holds a part of its bytes at a time (they are stored as they arrive), and a
    // connection while its client sends: a key has a few at a time, not any number.
    return this.uploads
      .run(caller, () =>
        this.allUploads.hold(1, async () => {
          const stored = await this.checkpoints.upload(
            runId,
            iteration,
            format,
            (sink, partBytes) =>
              receiveInParts(req, { limit: maxCheckpointBytes, idleMs, partBytes }, sink),
          );
          res.status(stored.created ? 201 : 200);
          return stored.checkpoint;
        }),
      )
      .catch((e: unknown) => {
        // Refused before its body was read whole (too many in progress, too large, gone quiet): the
        // rest of the body is not read, so the connection cannot serve another.
        if (!req.complete && !res.headersSent) res.setHeader('Connection', 'close');
        throw e;
      });
  }

  @Get()
  @Requires('read')
  async list(
    @Caller() caller: Principal,
    @Param('id', RunIdPipe) runId: string,
  ): Promise<CheckpointInfo[]> {
    await this.scope.assertRun(caller, runId);
    return this.checkpoints.list(runId);
  }

  /**
   * Where the checkpoint's bytes may be downloaded straight from the bucket (a presigned URL, no
   * key needed, valid CREDITLAB_CHECKPOINT_URL_SECONDS), so that many clients fetching a large
   * checkpoint do not all stream it through this server; `url` is null for bytes in the database.
   * `?filename=` has the store answer it as an attachment of that name, which a browser saves.
   */
  @Get(':iteration/url')
  @Requires('read')
  // The URL lets anyone holding it download the checkpoint: no cache along the way keeps it.
  @Header('Cache-Control', 'no-store')
  async downloadUrl(
    @Caller() caller: Principal,
    @Param('id', RunIdPipe) runId: string,
    @Param('iteration', ParseIterationPipe) iteration: number,
    @Query('filename') filename?: string,
  ): Promise<CheckpointDownloadUrl> {
    if (filename !== undefined && (typeof filename !== 'string' || !FILENAME.test(filename)))
      throw new DomainError(
        ErrorCode.InvalidInput,
        `filename: 1–200 of [A-Za-z0-9_.+-], not starting with a dot, got ${JSON.stringify(filename)}`,
      );
    await this.scope.assertRun(caller, runId);
    return this.checkpoints.downloadUrl(runId, iteration, filename);
  }

  @Get(':iteration')
  @Requires('read')
  async download(
    @Caller() caller: Principal,
    @Param('id', RunIdPipe) runId: string,
    @Param('iteration', ParseIterationPipe) iteration: number,
    @Res({ passthrough: true }) res: Response,
  ): Promise<StreamableFile> {
    await this.scope.assertRun(caller, runId);
    const release = this.downloads.enter(caller);
    // A client gone while its key or run was checked has closed the response already, and a
    // 'close' listened for now would never come: its place was held for good (helper's probe).
    whenClosed(res, release);
    let releaseProcess = (): void => undefined;
    try {
      releaseProcess = this.allDownloads.enter();
    } catch (e) {
      release();
      throw e;
    }
    whenClosed(res, releaseProcess);
    try {
      const { info, chunks, cancel } = await this.checkpoints.open(runId, iteration);
      // However the answer ends, the store's response for it goes: a generator cut off before its
      // first piece never runs its own cleanup.
      whenClosed(res, cancel);
      res.setHeader('X-Creditlab-Checkpoint-Format', info.format);
      res.setHeader('X-Creditlab-Sha256', info.sha256);
      // A client that takes nothing for the download idle limit is cut off: it held its
      // connection and a part or two for as long as it stayed connected. Progress is a piece taken
      // by the response, which the sockets' buffers (megabytes) stand between and the client, so
      // the limit is long; once the last piece is handed to the system the download is done here.
      const idleMs = this.config.limits.downloadIdleMs;
      const watch = new IdleWatch(idleMs, () => {
        this.logger.log(
          `cut off a download of checkpoint ${iteration} of run ${runId}: its client took nothing for ${idleMs / 1000} s`,
        );
        res.destroy();
      });
      res.once('finish', () => watch.stop());
      whenClosed(res, () => watch.stop());
      // One piece read ahead at most (Readable.from would read sixteen ahead of a slow client).
      return new StreamableFile(
        Readable.from(
          inPieces(chunks, () => watch.resume()),
          { highWaterMark: 1 },
        ),
        { type: 'application/octet-stream', length: info.bytes },
      );
    } catch (e) {
      release();
      throw e;
    }
  }
}

/** Calls `then` when the response closes, or now if it has closed already. */
function whenClosed(res: Response, then: () => void): void {
  if (res.closed || res.destroyed) then();
  else res.once('close', then);
}

/** Checkpoint numbers are iterations: 0 ≤ k < 2^31. */
