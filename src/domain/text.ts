import { z } from 'zod';

// PostgreSQL text cannot hold NUL, and jsonb (event data) refuses unpaired UTF-16 surrogates: both would fail the
// write with a 500. Without the `u` flag the pattern sees UTF-16 code units, which is what must be checked.
// eslint-disable-next-line no-control-regex -- NUL is exactly what this pattern looks for
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export const isStorableText = (s: string): boolean => !UNSTORABLE.test(s);

/** Free text a client sends and the service stores (a key name, a cancellation reason): a 400 if unstorable. */
export const StoredText = (max: number) =>
  z.string().max(max).refine(isStorableText, { message: 'must be valid Unicode text without NUL characters' });
