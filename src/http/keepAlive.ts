import http from 'node:http';
import https from 'node:https';

/**
 * Agents for svc's own calls out (the platform's API, webhook deliveries): connections kept alive between calls,
 * at most 64 per host, closed by svc after 30 s idle or a second before the server's announced keep-alive time
 * (`Keep-Alive: timeout=N`), whichever is sooner.
 *
 * Why the timeout: without one of its own, Node's agent ignores that hint and keeps an idle connection until the
 * server closes it, and a request sent on it at that moment is cut (ECONNRESET). A busy pool keeps some connections
 * idle that long (the agent reuses the most recently freed first), so under a steady load it happened now and then:
 * a cut mutation is a 503 (it may have happened, so it is not sent again), a cut delivery a failed attempt.
 */
export function keptAliveAgents(): { 'http:': http.Agent; 'https:': https.Agent } {
  const options = { keepAlive: true, maxSockets: 64, timeout: 30_000 };
  return { 'http:': new http.Agent(options), 'https:': new https.Agent(options) };
}
