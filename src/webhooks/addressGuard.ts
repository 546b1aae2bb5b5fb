import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { invalidRequest, type ServiceError } from '../domain/errors.js';

/**
 * Where a webhook may be sent (PRODUCT §10, SSRF): only to public unicast addresses. Loopback, private, link-local
 * (169.254.169.254, the cloud metadata service, among them), carrier-grade NAT, unique-local, multicast, broadcast,
 * reserved, and IPv6 forms that embed an IPv4 address (IPv4-mapped, 6to4, Teredo, NAT64) are refused, unless
 * WEBHOOKS_ALLOW_PRIVATE is set (development and tests). The address is checked when the endpoint is saved and again
 * at connect time, after DNS, so a name that later resolves elsewhere (DNS rebinding) is refused too.
 */

export type Resolve = (hostname: string) => Promise<LookupAddress[]>;
export type AddressPolicy = { allowPrivate: boolean; resolve: Resolve };

export const systemResolve: Resolve = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/** The kind of a forbidden address ('loopback', 'private', …), or null when it is a public unicast address. */
export function forbiddenRange(ip: string): string | null {
  if (!ipaddr.isValid(ip)) return 'invalid';
  const range = ipaddr.parse(ip).range();
  return range === 'unicast' ? null : range;
}

const stripBrackets = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);
const isLoopbackHost = (host: string) => host === 'localhost' || (isIP(host) !== 0 && ipaddr.parse(host).range() === 'loopback');

export class AddressRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AddressRefused';
  }
}

/** The addresses `hostname` may be reached at, or AddressRefused naming why not. */
export async function allowedAddresses(hostname: string, policy: AddressPolicy): Promise<LookupAddress[]> {
  const host = stripBrackets(hostname);
  const addresses = isIP(host) ? [{ address: host, family: isIP(host) }] : await policy.resolve(host);
  if (addresses.length === 0) throw new AddressRefused(`${host} does not resolve to any address`);
  if (policy.allowPrivate) return addresses;
  for (const a of addresses) {
    const range = forbiddenRange(a.address);
    if (range) throw new AddressRefused(`${host} resolves to a ${range} address (${a.address}), which webhooks may not reach`);
  }
  return addresses;
}

/**
 * Checks an endpoint URL when it is saved: https (http only for a loopback host while private addresses are
 * allowed), no credentials in it, and a host that resolves to addresses webhooks may reach. The 400 names the rule.
 */
export async function checkEndpointUrl(raw: string, policy: AddressPolicy, path = 'url'): Promise<void> {
  const refuse = (message: string): ServiceError => invalidRequest(`Invalid webhook URL: ${message}.`, [{ path, message }]);
  const url = new URL(raw);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw refuse('must be an https:// URL');
  if (url.protocol === 'http:' && !(policy.allowPrivate && isLoopbackHost(stripBrackets(url.hostname)))) {
    throw refuse('must be an https:// URL (http is accepted only for a loopback address in development)');
  }
  if (url.username || url.password) throw refuse('must not carry credentials; svc signs every delivery instead');
  try {
    await allowedAddresses(url.hostname, policy);
  } catch (err) {
    if (err instanceof AddressRefused) throw refuse(err.message);
    throw refuse(`${url.hostname} could not be resolved`);
  }
}

/**
 * A `lookup` for node:http that lets a connection reach only allowed addresses: the connect-time half of the guard.
 * Node calls it with `all` set (happy eyeballs) or not; both are answered.
 */
export function guardedLookup(policy: AddressPolicy) {
  return (
    hostname: string,
    options: { all?: boolean },
    callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    allowedAddresses(hostname, policy).then(
      (addresses) => (options.all ? callback(null, addresses) : callback(null, addresses[0].address, addresses[0].family)),
      (err: Error) => callback(err instanceof AddressRefused ? err : new AddressRefused(`${hostname} could not be resolved`), options.all ? [] : ''),
    );
  };
}
