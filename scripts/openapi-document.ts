// Writes the OpenAPI document exactly as the server serves it at /api/v1/openapi.json: the app is built in this
// process (on a throwaway in-memory embedded database, no port opened) and asked for `app.swagger()`. The linters
// (`npm run lint:openapi`) and the client's type generator (`npm run client:generate`) read this file, so they check
// and type what clients really get, not a hand-kept copy.
//
//   tsx scripts/openapi-document.ts <out.json>     (or import writeOpenapiDocument)
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildApp } from '../src/app.js';
import { openDatabase } from '../src/db/client.js';
import { migrate } from '../src/db/migrate.js';
import { createLogger } from '../src/http/logging.js';
import { createServiceContext, systemClock } from '../src/services/context.js';

/** Builds the app and writes the document it serves to `out` (pretty JSON, a final newline). */
export async function writeOpenapiDocument(out: string): Promise<void> {
  const db = await openDatabase({ kind: 'pglite' });
  try {
    await migrate(db);
    // No service runs while the document is built: a standalone context on an empty database is all it needs.
    const ctx = createServiceContext({ db, clock: systemClock, freeUntil: null });
    const app = await buildApp({
      ctx,
      // Never used to sign anything here: building the app needs credentials, the document does not show them.
      credentials: { apiKey: 'openapi-document', secret: 'openapi-document-unused-secret' },
      logger: createLogger({ level: 'silent' }),
    });
    const doc = app.swagger();
    await app.close();
    mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
    writeFileSync(out, JSON.stringify(doc, null, 2) + '\n');
  } finally {
    await db.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const out = process.argv[2];
  if (!out) {
    process.stderr.write('usage: tsx scripts/openapi-document.ts <out.json>\n');
    process.exit(2);
  }
  await writeOpenapiDocument(out);
}
