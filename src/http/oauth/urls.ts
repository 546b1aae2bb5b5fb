import type { FastifyRequest } from 'fastify';

/**
 * svc's own URLs as OAuth names them: PUBLIC_URL when set (production: the one origin clients know), else the origin
 * the request came to (development and tests, where the port is chosen at start). The issuer, the resource and the
 * metadata documents all derive from it, so they agree with each other on any one deployment.
 */
export const baseUrlOf = (publicUrl: string | undefined, req: FastifyRequest): string => publicUrl ?? `${req.protocol}://${req.host}`;

/** The protected resource (RFC 8707's `resource`, RFC 9728's `resource`): the MCP endpoint. */
export const mcpResourceOf = (publicUrl: string | undefined, req: FastifyRequest): string => `${baseUrlOf(publicUrl, req)}/mcp`;

/** Where /mcp's protected resource metadata is (RFC 9728 §3.1: the well-known path, then the resource's path). */
export const protectedResourceMetadataUrl = (publicUrl: string | undefined, req: FastifyRequest): string =>
  `${baseUrlOf(publicUrl, req)}/.well-known/oauth-protected-resource/mcp`;
