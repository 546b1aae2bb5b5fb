/**
 * A process that logs to standard output as svc does (createLogger with no sink), for test/logs.stdout.test.ts:
 * info lines, then a warning, then, when stdin says so, more info lines and an exit.
 */
import { accessLogWriter, createLogger } from '../../src/http/logging.js';

const log = createLogger({ level: 'info' });
const access = accessLogWriter(log);
log.info({ n: 1 }, 'first');
access({ requestId: 'r-2', method: 'GET', url: '/api/v1/subscription-contracts/2', statusCode: 200, ms: 1 });
log.info({ n: 3 }, 'third');
log.warn({ n: 4 }, 'a warning');
process.stdin.once('data', () => {
  for (let i = 5; i < 2005; i++) access({ requestId: `r-${i}`, method: 'GET', url: `/api/v1/subscription-contracts/${i}`, statusCode: 200, ms: 1 });
  log.info({ n: 2005 }, 'last');
  process.exit(0);
});
