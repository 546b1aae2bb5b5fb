import type { ApiKey } from '../api';

/** How a key is named to the merchant: its name, or its fingerprint when it has none. */
export const keyLabel = (k: ApiKey) => (k.name ? k.name : `Unnamed key ${k.fingerprint}`);
