import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request a receiver got. */
export type Received = { path: string; headers: http.IncomingHttpHeaders; body: string; at: number };

/**
 * A local webhook receiver for tests: records every request and answers as the test says (200 by default), or not at
 * all (`hang`), one answer per request in order, then `then` for the rest.
 */
export async function startReceiver(): Promise<{
  url: string;
  received: Received[];
  /** The next answers, in order: a status (with optional headers/body), or 'hang' (never answer). */
  answers: ({ status: number; headers?: Record<string, string>; body?: string } | 'hang')[];
  /** The answer once `answers` is used up. */
  then: { status: number; headers?: Record<string, string>; body?: string };
  /** While true, every connection is cut at once (a receiver that is down): nothing is received. */
  down: boolean;
  /** Answers after this many milliseconds (a slow receiver). */
  delayMs: number;
  /** Resolves once `n` requests have been received. */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}> {
  const received: Received[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const r = {
    url: '',
    received,
    answers: [] as ({ status: number; headers?: Record<string, string>; body?: string } | 'hang')[],
    then: { status: 200, body: 'ok' } as { status: number; headers?: Record<string, string>; body?: string },
    down: false,
    delayMs: 0,
    waitFor(n: number, timeoutMs = 5000) {
      if (received.length >= n) return Promise.resolve(received);
      return new Promise<Received[]>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`receiver got ${received.length} of ${n} requests`)), timeoutMs);
        waiters.push({ n, resolve: () => (clearTimeout(timer), resolve(received)) });
      });
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
  const server = http.createServer((req, res) => {
    if (r.down) {
      req.socket.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      for (const w of waiters.filter((w) => received.length >= w.n)) w.resolve();
      const answer = r.answers.shift() ?? r.then;
      if (answer === 'hang') return;
      const send = () => res.writeHead(answer.status, answer.headers).end(answer.body ?? '');
      if (r.delayMs) setTimeout(send, r.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return r;
}
