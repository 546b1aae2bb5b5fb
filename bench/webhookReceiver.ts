/**
 * bench:billing's webhook receiver, a process of its own: it answers every delivery 200 at once and counts them
 * (GET /count). Apart from the benchmark's process so that receiving thousands of deliveries a second does not delay
 * the load generator, whose latencies are counted from when each request was due.
 */
import http from 'node:http';

let received = 0;
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/count') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ received }));
    return;
  }
  req.resume();
  req.on('end', () => {
    received++;
    res.writeHead(200).end('ok');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
