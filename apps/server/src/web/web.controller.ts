import { Controller, Get, Inject, Next, Req, Res } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import path from 'node:path';
import { Requires } from '../access/requires.decorator';
import { BucketDownloadOriginToken } from '../checkpoints/checkpoint-bucket.provider';
import { WebAssets } from './web-assets';
import { isWebPageRequest, wantsExplorerPage } from './web-requests';

/**
 * Narrow on purpose: the app talks to the API only (self), its workers and charts use blobs and
 * inline styles; no CDN, no plugins, and no frames but the checkpoint bucket's (`bucketOrigin`),
 * where the app starts a download from a presigned URL.
 */
const contentSecurityPolicy = (bucketOrigin: string | undefined) =>
  [
    "default-src 'self'",
    ...(bucketOrigin ? [`frame-src ${bucketOrigin}`] : []),
    "connect-src 'self' ws: wss:",
    "img-src 'self' data: blob:",
    "style-src 'self' 'unsafe-inline'",
    "worker-src 'self' blob:",
    "font-src 'self' data:",
    "frame-ancestors 'none'",
    "object-src 'none'",
    "base-uri 'self'",
  ].join('; ');

/**
 * The web app at `/` (apps/web/dist): a file if one matches the path, else index.html, where the
 * app's router takes over (single-page app). API paths pass through to their routes (or the 404);
 * `GET /graphql` from a browser gets the app too, whose router opens the GraphQL explorer there.
 */
@Controller()
@Requires('public')
export class WebController {
  private readonly assets = new WebAssets();
  private readonly contentSecurityPolicy: string;

  constructor(@Inject(BucketDownloadOriginToken) bucketOrigin: string | undefined) {
    this.contentSecurityPolicy = contentSecurityPolicy(bucketOrigin);
  }

  @Get('{*path}')
  page(@Req() req: Request, @Res() res: Response, @Next() next: NextFunction): void {
    if (!isWebPageRequest(req)) return next();
    res.setHeader('Content-Security-Policy', this.contentSecurityPolicy);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    const file = wantsExplorerPage(req) ? undefined : this.assets.file(req.path);
    if (file && !file.endsWith('index.html')) {
      // Vite puts a content hash in every asset name: such a file never changes.
      const hashed = req.path.startsWith('/assets/');
      // Sent relative to the app's folder: \`send\` refuses any absolute path through a dot-folder,
      // and the compiled commands run from node_modules/.cache (the folder is a link from there).
      res.sendFile(path.relative(this.assets.root, file), {
        root: this.assets.root,
        maxAge: hashed ? '365d' : 0,
        immutable: hashed,
      });
      return;
    }
    if (req.path.startsWith('/assets/')) {
      res.status(404).type('text/plain').send(`no such asset: ${req.path}`);
      return;
    }
    res.setHeader('Cache-Control', 'no-cache');
    res.type('html').send(this.assets.indexHtml());
  }
}
