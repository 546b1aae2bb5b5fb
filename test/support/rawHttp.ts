import net, { type AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';

/** Listens on a free loopback port (once per app) and returns it. */
export async function listeningPort(app: FastifyInstance): Promise<number> {
  if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as AddressInfo).port;
}

export type RawResponse = { status: number; headers: Record<string, string>; body: string };

/** A client on a bare TCP connection: it writes what it is told, when it is told, and keeps everything it receives. */
export type RawClient = {
  socket: net.Socket;
  /** Everything received so far. */
  received(): string;
  /** Resolves when the server has closed the connection (or it was reset). */
  closed: Promise<void>;
  isClosed(): boolean;
  write(text: string): void;
  /** Writes `byte` every `everyMs` until the connection closes: a client trickling its request. */
  trickle(byte: string, everyMs: number): void;
  /** The responses received, parsed (Content-Length bodies). */
  responses(): RawResponse[];
  /** Resolves once `count` responses have arrived. */
  responsesArrived(count: number): Promise<RawResponse[]>;
  destroy(): void;
};

export async function rawClient(port: number): Promise<RawClient> {
  const socket = net.connect(port, '127.0.0.1');
  let data = '';
  let closed = false;
  const waiters: (() => void)[] = [];
  const notify = () => waiters.splice(0).forEach((w) => w());
  socket.on('data', (d) => {
    data += d.toString('latin1');
    notify();
  });
  socket.on('error', () => {});
  const closedPromise = new Promise<void>((resolve) =>
    socket.on('close', () => {
      closed = true;
      notify();
      resolve();
    }),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let timer: NodeJS.Timeout | undefined;
  void closedPromise.then(() => clearInterval(timer));
  const client: RawClient = {
    socket,
    received: () => data,
    closed: closedPromise,
    isClosed: () => closed,
    write: (text) => {
      if (!closed && socket.writable) socket.write(text);
    },
    trickle(byte, everyMs) {
      timer = setInterval(() => client.write(byte), everyMs);
    },
    responses: () => parseResponses(data),
    responsesArrived: (count) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const parsed = parseResponses(data);
          if (parsed.length >= count) return resolve(parsed);
          if (closed) return reject(new Error(`the connection closed after ${parsed.length} responses: ${JSON.stringify(data)}`));
          waiters.push(check);
        };
        check();
      }),
    destroy: () => {
      clearInterval(timer);
      socket.destroy();
    },
  };
  return client;
}

/** HTTP/1.1 responses with a Content-Length, one after the other, as they were received. */
export function parseResponses(text: string): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const i = line.indexOf(':');
      headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    if (rest.length < end + 4 + length) break;
    out.push({ status: Number(statusLine.split(' ')[1]), headers, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return out;
}
