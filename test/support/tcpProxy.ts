import net from 'node:net';

export type TcpProxy = {
  port: number;
  /** The database goes away: stop listening (new connections are refused) and cut every open connection. */
  cut(): Promise<void>;
  /** The database stops answering: connections are accepted and kept, but no byte gets through either way. */
  stall(): void;
  /** The database is back on the same address; bytes held by a stall are delivered. */
  restore(): Promise<void>;
  close(): Promise<void>;
};

/**
 * A TCP proxy in the test process between a server and PostgreSQL, so a test can make the database really
 * unreachable (refused and reset connections, as when it crashes or restarts), or silent (as when its host freezes
 * or the network partitions), and bring it back.
 */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const held: (() => void)[] = [];
  let stalled = false;
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const relay = (from: net.Socket, to: net.Socket) => {
    from.on('data', (chunk: Buffer) => (stalled ? held.push(() => to.write(chunk)) : to.write(chunk)));
    from.once('close', () => to.destroy());
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(target);
    track(client);
    track(upstream);
    relay(client, upstream);
    relay(upstream, client);
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: '127.0.0.1', port, exclusive: true }, () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  const cut = async () => {
    held.length = 0;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of sockets) s.destroy();
    await closed;
  };
  return {
    port,
    cut,
    stall: () => {
      stalled = true;
    },
    restore: async () => {
      if (!server.listening) await listen(port);
      stalled = false;
      for (const deliver of held.splice(0)) deliver();
    },
    close: async () => {
      if (server.listening) await cut();
    },
  };
}

/** The same database URL, reached through another local port (the proxy's). */
export function viaPort(databaseUrl: string, port: number): string {
  const u = new URL(databaseUrl);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}
