import type { FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../domain/errors.js';

const isJson = (contentType: string | undefined) =>
  !!contentType && /^application\/json\s*(;|$)/i.test(contentType.trim());

/** For routes whose body is required: it must be declared as application/json (415 otherwise). */
export async function requireJsonBody(req: FastifyRequest, _reply: FastifyReply): Promise<void> {
  if (!isJson(req.headers['content-type'])) {
    throw new ServiceError('unsupported_media_type', 'Send the body as JSON with "Content-Type: application/json".');
  }
}
