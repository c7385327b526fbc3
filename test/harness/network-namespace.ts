/**
 * A network namespace of its own for one process of a test (`ip netns`, as root): a veth pair
 * joins it to this host (`hostAddress` here, `address` inside), so a process run under `wrap`
 * reaches a broker listening on `hostAddress` and nothing else. `cut()` takes the namespace's link
 * down (its process's packets go nowhere; the host and its other processes are untouched) and
 * `restore()` brings it back.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export interface NetworkNamespace {
  name: string;
  hostAddress: string;
  address: string;
  /** The command prefix that runs a process inside it. */
  wrap: string[];
  cut(): void;
  restore(): void;
  remove(): void;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] });

/** Creates one; fails (never skips) when `ip netns` cannot (not root, no veth). */
export function createNetworkNamespace(subnet: number): NetworkNamespace {
  const tag = randomBytes(3).toString('hex');
  const name = `weir-${tag}`;
  const host = `wh${tag}`;
  const inside = `wn${tag}`;
  const hostAddress = `10.201.${subnet}.1`;
  const address = `10.201.${subnet}.2`;
  ip('netns', 'add', name);
  try {
    ip('link', 'add', host, 'type', 'veth', 'peer', 'name', inside);
    ip('link', 'set', inside, 'netns', name);
    ip('addr', 'add', `${hostAddress}/30`, 'dev', host);
    ip('link', 'set', host, 'up');
    ip('netns', 'exec', name, 'ip', 'addr', 'add', `${address}/30`, 'dev', inside);
    ip('netns', 'exec', name, 'ip', 'link', 'set', inside, 'up');
    ip('netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up');
  } catch (error) {
    ip('netns', 'del', name);
    throw error;
  }
  return {
    name,
    hostAddress,
    address,
    wrap: ['ip', 'netns', 'exec', name],
    cut: () => ip('netns', 'exec', name, 'ip', 'link', 'set', inside, 'down'),
    restore: () => ip('netns', 'exec', name, 'ip', 'link', 'set', inside, 'up'),
    remove: () => {
      try {
        ip('link', 'del', host);
      } catch {
        // gone with the namespace
      }
      ip('netns', 'del', name);
    },
  };
}
