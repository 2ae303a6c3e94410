// Piscina loads its workers with import(). This CommonJS shim loads the TypeScript worker through
// the same @swc-node/register hook as the main thread (a compiled build finds the .js file instead).
'use strict';
const path = require('node:path');
const fs = require('node:fs');
const compiled = path.join(__dirname, 'estimate-worker.js');
if (fs.existsSync(compiled)) {
  module.exports = require(compiled);
} else {
  require('@swc-node/register');
  module.exports = require('./estimate-worker.ts');
}
