import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { JsonRefused, parseJson } from '../domain/json.js';
import { ServiceError } from '../domain/errors.js';

const isJson = (contentType: string | undefined) =>
  !!contentType && /^application\/json\s*(;|$)/i.test(contentType.trim());

/** For routes whose body is required: it must be declared as application/json (415 otherwise). */
export async function requireJsonBody(req: FastifyRequest, _reply: FastifyReply): Promise<void> {
  if (!isJson(req.headers['content-type'])) {
    throw new ServiceError('unsupported_media_type', 'Send the body as JSON with "Content-Type: application/json".');
  }
}

/**
 * The one JSON body parser of the app (API, admin API, MCP), in place of Fastify's: the same rules (an empty body,
 * prototype poisoning), plus nesting deeper than 64 and a key twice in one object, all 400 invalid_request
 * (domain/json.ts).
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = body as string;
    if (text.length === 0) {
      done(new ServiceError('invalid_request', 'The body is empty although Content-Type is application/json; send a JSON object.'), undefined);
      return;
    }
    try {
      done(null, parseJson(text));
    } catch (err) {
      const reason = err instanceof JsonRefused ? err.message : 'is not valid JSON';
      done(new ServiceError('invalid_request', `The request body ${reason}.`), undefined);
    }
  });
}
