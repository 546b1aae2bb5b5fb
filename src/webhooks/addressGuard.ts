import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { invalidRequest, type ServiceError } from '../domain/errors.js';

/**
 * Where a webhook may be sent (SSRF): only to globally reachable unicast addresses. Loopback, private,
 * link-local (169.254.169.254, the cloud metadata service, among them), carrier-grade NAT, unique-local, multicast,
 * broadcast, documentation, benchmarking, reserved, every other special-purpose block, and IPv6 forms that embed an
 * IPv4 address (IPv4-mapped, IPv4-compatible, 6to4, Teredo, NAT64) are refused, unless WEBHOOKS_ALLOW_PRIVATE is set
 * (development and tests). The address is checked when the endpoint is saved and again at connect time, after DNS,
 * so a name that later resolves elsewhere (DNS rebinding) is refused too.
 */

export type Resolve = (hostname: string) => Promise<LookupAddress[]>;
export type AddressPolicy = { allowPrivate: boolean; resolve: Resolve };

export const systemResolve: Resolve = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/*
 * Special-purpose blocks, whatever the registry says of their reachability (none is where a merchant's receiver
 * lives), beside ipaddr.js's own range names, which cover most of them: the two lists are checked, so a block one
 * of them lacks is still refused. From the IANA registries, as of 2025:
 * https://www.iana.org/assignments/iana-ipv4-special-registry/ and
 * https://www.iana.org/assignments/iana-ipv6-special-registry/, plus multicast (RFC 5771, RFC 4291), the deprecated
 * IPv4-compatible (::/96, RFC 4291 section 2.5.5.1) and site-local (RFC 3879) IPv6 blocks. Past these, an IPv6
 * address must be in 2000::/3, the only block IANA allocates as global unicast
 * (https://www.iana.org/assignments/ipv6-address-space/).
 */
const SPECIAL_PURPOSE: [cidr: string, name: string][] = [
  ['0.0.0.0/8', 'thisNetwork'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'sharedAddressSpace'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'linkLocal'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'ietfProtocolAssignments'],
  ['192.0.2.0/24', 'documentation'],
  ['192.31.196.0/24', 'as112'],
  ['192.52.193.0/24', 'amt'],
  ['192.88.99.0/24', 'deprecated6to4Relay'],
  ['192.168.0.0/16', 'private'],
  ['192.175.48.0/24', 'as112'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
  ['255.255.255.255/32', 'broadcast'],
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::/96', 'ipv4Compatible'],
  ['::ffff:0:0/96', 'ipv4Mapped'],
  ['64:ff9b::/96', 'nat64'],
  ['64:ff9b:1::/48', 'nat64'],
  ['100::/64', 'discard'],
  ['100:0:0:1::/64', 'dummyPrefix'],
  ['2001::/23', 'ietfProtocolAssignments'],
  ['2001::/32', 'teredo'],
  ['2001:2::/48', 'benchmarking'],
  ['2001:db8::/32', 'documentation'],
  ['2002::/16', '6to4'],
  ['2620:4f:8000::/48', 'as112v6'],
  ['3fff::/20', 'documentation'],
  ['5f00::/16', 'segmentRouting'],
  ['fc00::/7', 'uniqueLocal'],
  ['fe80::/10', 'linkLocal'],
  ['fec0::/10', 'siteLocal'],
  ['ff00::/8', 'multicast'],
];
const SPECIAL_BLOCKS = SPECIAL_PURPOSE.map(([cidr, name]) => ({ block: ipaddr.parseCIDR(cidr), name }));
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/**
 * The kind of a forbidden address ('loopback', 'private', 'ipv4Compatible', …), or null when it is a globally
 * reachable unicast address.
 */
export function forbiddenRange(ip: string): string | null {
  const text = canonical(ip);
  if (text === null || !ipaddr.isValid(text)) return 'invalid';
  const address = ipaddr.parse(text);
  const range = address.range();
  if (range !== 'unicast') return range;
  for (const { block, name } of SPECIAL_BLOCKS) if (address.kind() === block[0].kind() && address.match(block)) return name;
  if (address.kind() === 'ipv6' && !address.match(GLOBAL_UNICAST_V6)) return 'notGlobalUnicast';
  return null;
}

/**
 * An IPv6 address as the URL standard writes it (`::127.0.0.1` → `::7f00:1`), or null when it is none: ipaddr.js
 * 2.5 reads any IPv6 address with a dotted IPv4 tail as IPv4-mapped (`::127.0.0.1` → `::ffff:7f00:1`), whatever
 * its prefix. Node's resolver and URLs already give this form; an address typed by hand may not.
 */
function canonical(ip: string): string | null {
  if (!ip.includes(':')) return ip;
  try {
    return new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  } catch {
    return null;
  }
}

const stripBrackets = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);
export const isLoopbackHost = (host: string) => host === 'localhost' || (isIP(host) !== 0 && ipaddr.parse(host).range() === 'loopback');

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
