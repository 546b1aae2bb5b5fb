/**
 * How busy this instance is serving requests: the requests in flight, counted by the app. Background work (the
 * webhook dispatcher) reads it to give way to requests while they crowd the instance, and catches up after.
 */
export class RequestLoad {
  inFlight = 0;
}
