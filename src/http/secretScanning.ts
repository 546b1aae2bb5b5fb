import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseInput, ServiceError } from '../domain/errors.js';
import { JsonRefused, parseJson } from '../domain/json.js';
import { isPlausibleKeyId, isSignedBy, KEY_ID_HEADER, LeakReport, REPORT_BODY_LIMIT, SIGNATURE_HEADER } from '../domain/secretScanning.js';
import type { ServiceContext } from '../services/context.js';
import { reportLeakedKeys } from '../services/reportLeakedKeys.js';
import type { SecretScanningKeys } from '../services/secretScanningKeys.js';

const notSigned = () =>
  new ServiceError('unauthorized', 'The report is not signed by a current GitHub secret scanning key: send Github-Public-Key-Identifier and Github-Public-Key-Signature over the raw body.');

const header = (req: FastifyRequest, name: string): string | null => {
  const v = req.headers[name];
  return typeof v === 'string' && v.length > 0 ? v : null;
};

/**
 * POST /secret-scanning/github: GitHub's secret scanning partner program reports keys of svc it found in public
 * (domain/secretScanning.ts has the format). The signature is checked over the body's raw bytes before anything
 * else is done with it; a report without both headers is refused before its body is read. A verified report revokes
 * every active key it names, at once, and is answered with a label per match.
 */
export async function secretScanningRoutes(app: FastifyInstance, opts: { ctx: ServiceContext; keys: SecretScanningKeys }) {
  // The signature covers the bytes as sent: the body is kept raw here, and parsed only once it is verified.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: REPORT_BODY_LIMIT }, (_req, body, done) => done(null, body));

  app.post('/secret-scanning/github', {
    bodyLimit: REPORT_BODY_LIMIT,
    schema: { hide: true },
    onRequest: async (req) => {
      const keyId = header(req, KEY_ID_HEADER);
      if (!keyId || !isPlausibleKeyId(keyId) || !header(req, SIGNATURE_HEADER)) throw notSigned();
    },
    handler: async (req, reply) => {
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const found = await opts.keys.find(header(req, KEY_ID_HEADER)!);
      if ('unavailable' in found) {
        throw new ServiceError('unavailable', 'The GitHub public keys needed to verify this report cannot be read right now. Try again shortly.', { headers: { 'retry-after': '60' } });
      }
      if ('unknown' in found || !isSignedBy(raw, header(req, SIGNATURE_HEADER)!, found.key)) throw notSigned();

      let body: unknown;
      try {
        body = parseJson(raw.toString('utf8'));
      } catch (err) {
        throw new ServiceError('invalid_request', `The report ${err instanceof JsonRefused ? err.message : 'is not valid JSON'}.`);
      }
      const matches = parseInput(LeakReport, body);
      const { labels, revoked } = await reportLeakedKeys({ ctx: opts.ctx, input: { matches } });
      // Counts only: a report's tokens are secrets, and its URLs say where they are.
      req.log.info({ matches: matches.length, revoked }, revoked ? 'leaked API keys revoked' : 'secret scanning report: nothing to revoke');
      return reply.code(200).type('application/json; charset=utf-8').send(JSON.stringify(labels));
    },
  });
}
