import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

/** A refused request: the status and the JSON body to answer with. */
export interface Refusal {
  status: 401 | 403;
  body: { error: string; hint: string };
}

export interface RequestGuardOptions {
  /** The address the server listens on. */
  host: string;
  /** When set, every /api request and /metrics need `Authorization: Bearer <token>`. */
  token: string | undefined;
}

/** Whether `host` (an address or a name) is this machine only: 127.0.0.0/8, ::1, localhost. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  return bare === '::1' || bare === '::ffff:127.0.0.1';
}

/**
 * What the REST server checks before it routes a request (the API has no users, so this is all
 * that stands between a web page in the user's browser, or the network, and POST /api/stop):
 *
 * - on a loopback address the Host header must name a loopback host too: a page on a DNS name
 *   that was pointed at 127.0.0.1 (DNS rebinding) reads nothing;
 * - a request that changes something (any method but GET and HEAD) must come from the
 *   dashboard's own origin or from outside a browser: `Sec-Fetch-Site` cross-site or same-site
 *   (another port of 127.0.0.1 is another origin of the same site), or an `Origin` other than the
 *   server's own, is refused with 403. Browsers send both on every cross-site POST, even on a
 *   form's, which needs no CORS preflight; curl and `weir savepoint` send neither;
 * - with a token, /api and /metrics need `Authorization: Bearer <token>` (401 otherwise).
 *   /health and the dashboard page are always open.
 *
 * Returns undefined when the request may go on.
 */
export function guardRequest(request: IncomingMessage, path: string, options: RequestGuardOptions): Refusal | undefined {
  const hostHeader = request.headers.host ?? '';
  if (isLoopback(options.host) && !isLoopback(hostNameOf(hostHeader))) {
    return forbidden(
      `the Host header "${hostHeader}" is not this machine's: the dashboard on ${options.host} answers only requests for a loopback name`,
      'open it as http://127.0.0.1:<--ui-port>/ (or localhost)',
    );
  }
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    const site = header(request, 'sec-fetch-site');
    if (site !== undefined && site !== 'same-origin' && site !== 'none') {
      return forbidden(`a ${site} request: ${request.method} ${path} is only taken from the dashboard's own page or outside a browser`, crossSiteHint);
    }
    const origin = header(request, 'origin');
    if (origin !== undefined && origin !== `http://${hostHeader}`) {
      return forbidden(
        `a request from another origin (${origin}): ${request.method} ${path} is only taken from the dashboard's own page or outside a browser`,
        crossSiteHint,
      );
    }
  }
  const token = options.token;
  if (token !== undefined && (path.startsWith('/api/') || path === '/metrics') && !bearerMatches(header(request, 'authorization'), token)) {
    return {
      status: 401,
      body: {
        error: `${request.method} ${path} needs the job's token (Authorization: Bearer <token>)`,
        hint: "give the token `weir run` was started with: `--token` or WEIR_UI_TOKEN for weir savepoint and weir stop; #token=<token> after the dashboard's address",
      },
    };
  }
  return undefined;
}

const crossSiteHint =
  'use the dashboard itself, `weir savepoint` / `weir stop --savepoint`, or curl; a web page on another site (or port) cannot act on the job';

function forbidden(error: string, hint: string): Refusal {
  return { status: 403, body: { error, hint } };
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The host name of a Host header: `127.0.0.1:8081` → `127.0.0.1`, `[::1]:8081` → `::1`. */
function hostNameOf(hostHeader: string): string {
  const bracketed = /^\[([^\]]*)\]/.exec(hostHeader);
  if (bracketed !== null) return bracketed[1] as string;
  return hostHeader.replace(/:\d*$/, '');
}

/** Compares in constant time (over digests, so the length does not show either). */
function bearerMatches(authorization: string | undefined, token: string): boolean {
  const given = /^Bearer\s+(.+)$/i.exec(authorization ?? '')?.[1]?.trim();
  if (given === undefined) return false;
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(token));
}
