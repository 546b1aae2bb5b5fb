import { describe, expect, it } from 'vitest';
import { isAcceptableRedirectUri, narrowed, permissionsOfScope, pkceMatches, redirectUriMatches, scopeOf } from '../../src/domain/oauth.js';

describe('PKCE S256', () => {
  it('matches RFC 7636 Appendix B and nothing else', () => {
    const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
    const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
    expect(pkceMatches(verifier, challenge)).toBe(true);
    expect(pkceMatches(verifier.slice(0, -1) + 'l', challenge)).toBe(false);
    // A verifier outside RFC 7636's alphabet or length is refused whatever its hash.
    expect(pkceMatches('short', challenge)).toBe(false);
  });
});

describe('redirect URIs', () => {
  const registered = ['https://app.example/cb', 'http://127.0.0.1:8080/callback', 'http://[::1]/cb', 'http://localhost:1/x?a=1'];
  it('match exactly, except a loopback one on any port (RFC 8252)', () => {
    expect(redirectUriMatches(registered, 'https://app.example/cb')).toBe(true);
    expect(redirectUriMatches(registered, 'https://app.example/cb/')).toBe(false);
    expect(redirectUriMatches(registered, 'https://app.example:444/cb')).toBe(false);
    expect(redirectUriMatches(registered, 'http://127.0.0.1:53000/callback')).toBe(true);
    expect(redirectUriMatches(registered, 'http://127.0.0.1/callback')).toBe(true);
    expect(redirectUriMatches(registered, 'http://127.0.0.1:53000/other')).toBe(false);
    expect(redirectUriMatches(registered, 'http://[::1]:9999/cb')).toBe(true);
    expect(redirectUriMatches(registered, 'http://localhost:2/x?a=1')).toBe(true);
    expect(redirectUriMatches(registered, 'http://localhost:2/x?a=2')).toBe(false);
    // Another loopback host than the registered one, or https on a loopback host, is no loopback match.
    expect(redirectUriMatches(registered, 'http://localhost:8080/callback')).toBe(false);
    expect(redirectUriMatches(registered, 'https://127.0.0.1:8080/callback')).toBe(false);
  });

  it('that may be registered: https, http on loopback, a private-use scheme; no fragment, no script', () => {
    for (const ok of ['https://app.example/cb', 'http://127.0.0.1:1/cb', 'http://localhost/cb', 'http://[::1]/cb', 'com.example.app:/oauth'])
      expect(isAcceptableRedirectUri(ok), ok).toBe(true);
    for (const bad of ['http://app.example/cb', 'https://app.example/cb#x', 'javascript:alert(1)', 'data:text/html,x', 'file:///etc/passwd', 'not a url'])
      expect(isAcceptableRedirectUri(bad), bad).toBe(false);
  });
});

describe('scopes', () => {
  it('read as permissions, written back, narrowed', () => {
    const p = permissionsOfScope('contracts:read contracts:write billing:read');
    expect(p).toEqual({ contracts: 'write', billing: 'read', webhooks: 'none', bulk_jobs: 'none' });
    expect(scopeOf(p)).toBe('contracts:read contracts:write billing:read');
    expect(narrowed(p, { contracts: 'read', billing: 'write', webhooks: 'write', bulk_jobs: 'none' })).toEqual({ contracts: 'read', billing: 'read', webhooks: 'none', bulk_jobs: 'none' });
    expect(scopeOf(permissionsOfScope(undefined))).toBe(scopeOf(permissionsOfScope('openid offline_access')));
  });
});

describe('OAuth secrets in what svc keeps', () => {
  it('codes and tokens are scrubbed from log text, written out or percent-encoded', async () => {
    const { redactSecrets } = await import('../../src/domain/secrets.js');
    const { newAccessToken, newCode, newRefreshToken } = await import('../../src/domain/oauth.js');
    for (const secret of [newAccessToken(), newRefreshToken(), newCode()]) {
      const prefix = secret.slice(0, 8);
      expect(redactSecrets(`/oauth/token?code=${secret}&x=1`)).toBe(`/oauth/token?code=${prefix}[REDACTED]&x=1`);
      const encoded = `/mcp?t=${encodeURIComponent(secret).replace(/_/g, '%5F')}`;
      expect(redactSecrets(encoded)).not.toContain(secret.slice(8));
    }
  });
});
