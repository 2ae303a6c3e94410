import path from 'node:path';
import { defineConfig } from 'vite';

// The web app (issue 12): React + TypeScript, compiled by Vite's own transformer (no Babel plugin is
// needed for a production build), `@creditlab/charts` from libs/charts like every other lib.
export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  resolve: {
    alias: { '@creditlab/charts': path.resolve(import.meta.dirname, '../../libs/charts/src') },
  },
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    // GraphiQL's editor (Monaco) is large; it loads only on the explorer page.
    chunkSizeWarningLimit: 4096,
    rollupOptions: {
      // Libraries written for React Server Components start with "use client": meaningless in a
      // client bundle, and said once per file.
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
  worker: { format: 'es' },
});
