/**
 * For the default of a switch that must name every case: it only compiles when `value` is `never`, so a case left
 * out (a command the platform does not implement, say) fails the build instead of being skipped at run time.
 */
export function unreachable(value: never): never {
  throw new Error(`unhandled case: ${JSON.stringify(value)}`);
}
