/**
 * The V8 flags bin/weir.js sets in every `weir` process, for the node processes that run Weir
 * without it: the test runner (V8's code cache is keyed on the flags, so the tests' processes share
 * the compile cache with the weir processes they start) and the benchmarks (measured as `weir run`
 * runs). bin/weir.js says why each is set; keep the two lists the same.
 */
export const WEIR_V8_FLAGS: readonly string[] = [
  '--no-allocation-site-pretenuring',
  '--no-compact',
  // V8 13 (Node 24) has it; Node 22's V8 does not.
  ...(Number(process.versions.node.split('.')[0]) >= 24 ? ['--external-memory-accounted-in-global-limit'] : []),
];

/** `WEIR_V8_FLAGS` less those `execArgv` already sets either way (an explicit flag wins). */
export function weirV8Flags(execArgv: readonly string[] = process.execArgv): string[] {
  const nameOf = (option: string) =>
    option
      .replace(/^--(no-)?/, '')
      .split('=')[0]
      ?.replaceAll('_', '-');
  return WEIR_V8_FLAGS.filter((flag) => !execArgv.some((option) => nameOf(option) === nameOf(flag)));
}
