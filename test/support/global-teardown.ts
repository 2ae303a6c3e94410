export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __creditlabTestPg?: { stop(): Promise<void> } }).__creditlabTestPg?.stop();
}
