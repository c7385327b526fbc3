import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { repositoryRoot } from '../../harness/cli.ts';
import { testBrokers } from '../../harness/kafka.ts';

/** `weir ...` (bin/weir.js) with `input` on its stdin, KAFKA_BROKERS the test brokers unless `env` says otherwise. */
export function weirWithInput(args: string[], input: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const kafkaEnv = { KAFKA_BROKERS: formatBootstrap(testBrokers()) };
    const child = spawn(process.execPath, [join(repositoryRoot, 'bin', 'weir.js'), ...args], { env: { ...process.env, ...kafkaEnv, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
    child.stdin.on('error', () => {}); // a refused produce exits before it reads its input
    child.stdin.end(input);
  });
}
