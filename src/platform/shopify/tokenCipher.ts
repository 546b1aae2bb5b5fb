import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * The platform's access and refresh tokens at rest (docs/product.md §9): AES-256-GCM under TOKEN_ENCRYPTION_KEY, a fresh
 * 12-byte nonce per value, stored as `v1.<nonce>.<tag>.<ciphertext>` (base64url). The shop's id is the associated
 * data, so a token copied onto another shop's row does not decrypt.
 */
export class TokenCipher {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('TOKEN_ENCRYPTION_KEY must be 32 bytes');
  }

  seal(plain: string, shopId: string): string {
    const nonce = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key, nonce);
    c.setAAD(Buffer.from(`shop:${shopId}`));
    const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
    return ['v1', nonce.toString('base64url'), c.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  /** The token, or null when the value was sealed under another key or for another shop, or was altered. */
  open(sealed: string, shopId: string): string | null {
    const [v, nonce, tag, body] = sealed.split('.');
    if (v !== 'v1' || !nonce || !tag || body === undefined) return null;
    try {
      const d = createDecipheriv('aes-256-gcm', this.key, Buffer.from(nonce, 'base64url'));
      d.setAAD(Buffer.from(`shop:${shopId}`));
      d.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([d.update(Buffer.from(body, 'base64url')), d.final()]).toString('utf8');
    } catch {
      return null;
    }
  }
}
