import { defineConfig } from 'prisma/config';

// Only `prisma generate` is used: migrations are plain SQL applied by the app
// (libs/db/src/migrate.ts), and the client connects through @prisma/adapter-pg.
export default defineConfig({
  schema: './prisma/schema.prisma',
});
