/**
 * A real PostgreSQL for the tests: Debian's `postgresql` package (CI installs it in .ci/run), a
 * fresh cluster made by `initdb` in a temporary folder, its `postgres` server on a free loopback
 * port with its socket in that folder, started by the test that needs it and stopped after it.
 * Never a mock. PostgreSQL refuses to run as root: as root (CI, this machine) initdb and the
 * server run as the `postgres` user the package creates (else `nobody`), the folder given to it.
 *
 * The superuser is `weir_admin` (trust authentication on 127.0.0.1 only), its database `weir`.
 * Set WEIR_POSTGRES_BIN to use another installation's bin folder.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../../src/local-kafka/ports.ts';

const run = promisify(execFile);

export const POSTGRES_TEST_SUPERUSER = 'weir_admin';
export const POSTGRES_TEST_DATABASE = 'weir';

export interface PostgresServerOptions {
  /** `max_prepared_transactions` (default 20; PostgreSQL's own default is 0, which refuses PREPARE TRANSACTION). */
  maxPreparedTransactions?: number;
  /** `wal_level` (default 'logical', for the PostgreSQL source's logical replication; 'replica' is PostgreSQL's own default). */
  walLevel?: 'logical' | 'replica' | 'minimal';
  /** `max_replication_slots` and `max_wal_senders` (default 10 each). */
  maxReplicationSlots?: number;
}

export interface PostgresTestServer {
  port: number;
  /** postgres://weir_admin@127.0.0.1:<port>/weir (the superuser). */
  connectionString: string;
  /** The connection string of another role of this server. */
  connectionStringFor(user: string, password?: string): string;
  /** Runs SQL as the superuser on its own connection; returns the rows. */
  query<R extends Record<string, unknown> = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
  /** SIGKILLs the server (its data stays: `start` brings it back with what was committed and prepared). */
  kill(): Promise<void>;
  /**
   * Shuts the server down the way `pg_ctl stop -m fast` (SIGINT: sessions ended, open transactions
   * rolled back, a checkpoint written) or `-m immediate` (SIGQUIT: everything stops at once, the next
   * start recovers from the WAL) does; its data stays, and `start` brings it back.
   */
  shutdown(mode: 'fast' | 'immediate'): Promise<void>;
  /** Starts the server again on the same port and folder (after `kill` or `shutdown`). */
  start(): Promise<void>;
  /** Stops the server and deletes its folder. */
  stop(): Promise<void>;
}

/** The bin folder of the newest PostgreSQL installed the Debian way, or WEIR_POSTGRES_BIN. */
export function postgresBin(): string {
  const fromEnv = process.env.WEIR_POSTGRES_BIN;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((name) => /^\d+$/.test(name) && existsSync(join(root, name, 'bin', 'postgres')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) {
    throw new Error(
      'no PostgreSQL server found under /usr/lib/postgresql/<version>/bin: install it with `apt-get install -y postgresql` (.ci/run does) or set WEIR_POSTGRES_BIN to its bin folder',
    );
  }
  return join(root, versions[0] as string, 'bin');
}

/** The user the server runs as when this process is root: `postgres`, else `nobody`. */
function serverUser(): { uid: number; gid: number; name: string } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const users = readFileSync('/etc/passwd', 'utf8').split('\n');
  for (const name of ['postgres', 'nobody']) {
    const line = users.find((entry) => entry.startsWith(`${name}:`));
    if (line === undefined) continue;
    const fields = line.split(':');
    return { name, uid: Number(fields[2]), gid: Number(fields[3]) };
  }
  throw new Error('running as root, and neither a "postgres" nor a "nobody" user exists to run PostgreSQL as (it refuses root)');
}

/** Starts a fresh PostgreSQL and waits until it answers; throws (the test fails, never skips) when it cannot. */
export async function startPostgres(options: PostgresServerOptions = {}): Promise<PostgresTestServer> {
  const bin = postgresBin();
  const user = serverUser();
  const folder = await mkdtemp(join(tmpdir(), 'weir-postgres-'));
  const data = join(folder, 'data');
  const asServerUser = user === undefined ? {} : { uid: user.uid, gid: user.gid };
  if (user !== undefined) {
    await chown(folder, user.uid, user.gid);
    await chmod(folder, 0o700);
  }
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' };
  try {
    await run(join(bin, 'initdb'), ['-D', data, '-U', POSTGRES_TEST_SUPERUSER, '--auth=trust', '-E', 'UTF8', '--no-sync', '--locale=C'], {
      ...asServerUser,
      cwd: folder,
      env,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    await rm(folder, { recursive: true, force: true });
    const failure = error as { stderr?: string; message: string };
    throw new Error(`initdb failed${user === undefined ? '' : ` (as user ${user.name})`}: ${failure.stderr || failure.message}`);
  }
  const port = await freePort();
  const settings = [
    `port = ${port}`,
    "listen_addresses = '127.0.0.1'",
    `unix_socket_directories = '${folder}'`,
    `max_prepared_transactions = ${options.maxPreparedTransactions ?? 20}`,
    'max_connections = 60',
    `wal_level = ${options.walLevel ?? 'logical'}`,
    `max_replication_slots = ${options.maxReplicationSlots ?? 10}`,
    // wal_level = minimal allows no WAL senders.
    `max_wal_senders = ${options.walLevel === 'minimal' ? 0 : (options.maxReplicationSlots ?? 10)}`,
    'shared_buffers = 32MB',
    // Test speed: durability against an OS crash is not what these tests are about (a SIGKILL of the
    // server still loses nothing committed: the WAL is written, only not fsynced).
    'fsync = off',
    'synchronous_commit = off',
    'full_page_writes = off',
    "log_min_messages = 'warning'",
  ];
  await writeFile(join(data, 'postgresql.auto.conf'), `${settings.join('\n')}\n`);
  if (user !== undefined) await chown(join(data, 'postgresql.auto.conf'), user.uid, user.gid);

  let child: ChildProcess | undefined;
  let output = '';
  // After a SIGKILL of the server its backends end on their own, at once or nearly: until they have,
  // a new server refuses the folder (its shared memory is still in use), so the start is tried again.
  const start = async () => {
    const deadline = Date.now() + 15_000;
    for (;;) {
      try {
        return await startOnce();
      } catch (error) {
        if (!/pre-existing shared memory block|lock file .* already exists/.test(String(error)) || Date.now() > deadline) throw error;
        await sleep(200);
      }
    }
  };
  const startOnce = async () => {
    output = '';
    const server = spawn(join(bin, 'postgres'), ['-D', data], { ...asServerUser, cwd: folder, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child = server;
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-8000);
    };
    server.stdout?.on('data', keep);
    server.stderr?.on('data', keep);
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (server.exitCode !== null || server.signalCode !== null)
        throw new Error(`PostgreSQL exited (${server.exitCode ?? server.signalCode}) before it answered:\n${output}`);
      const client = new pg.Client({ host: '127.0.0.1', port, user: POSTGRES_TEST_SUPERUSER, database: 'postgres' });
      const answered = await client.connect().then(
        () => true,
        () => false,
      );
      if (answered) {
        await client.end().catch(() => {});
        return;
      }
      if (Date.now() > deadline) {
        server.kill('SIGKILL');
        throw new Error(`PostgreSQL did not answer on 127.0.0.1:${port} within 60 s:\n${output}`);
      }
      await sleep(100);
    }
  };
  const stopServer = async (signal: NodeJS.Signals) => {
    const server = child;
    if (server === undefined || server.exitCode !== null || server.signalCode !== null) return;
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill(signal);
    // SIGINT is PostgreSQL's fast shutdown; SIGKILL after 10 s.
    const timer = setTimeout(() => server.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await start();
  } catch (error) {
    await rm(folder, { recursive: true, force: true });
    throw error;
  }
  const connectionStringFor = (role: string, password?: string) =>
    `postgres://${encodeURIComponent(role)}${password === undefined ? '' : `:${encodeURIComponent(password)}`}@127.0.0.1:${port}/${POSTGRES_TEST_DATABASE}`;
  const query = async <R extends Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]> => {
    const client = new pg.Client({ connectionString: connectionStringFor(POSTGRES_TEST_SUPERUSER) });
    await client.connect();
    try {
      return (await client.query<R>(sql, params)).rows;
    } finally {
      await client.end().catch(() => {});
    }
  };
  // The tests' database, beside the maintenance one.
  const admin = new pg.Client({ host: '127.0.0.1', port, user: POSTGRES_TEST_SUPERUSER, database: 'postgres' });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${POSTGRES_TEST_DATABASE}`);
  } finally {
    await admin.end().catch(() => {});
  }
  return {
    port,
    connectionString: connectionStringFor(POSTGRES_TEST_SUPERUSER),
    connectionStringFor,
    query,
    kill: () => stopServer('SIGKILL'),
    shutdown: (mode) => stopServer(mode === 'fast' ? 'SIGINT' : 'SIGQUIT'),
    start,
    async stop() {
      await stopServer('SIGINT');
      await rm(folder, { recursive: true, force: true });
    },
  };
}
