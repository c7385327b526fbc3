import { Command, CommanderError } from 'commander';
import { formatError } from '../core/errors/format-error.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import { WEIR_VERSION } from '../core/version.ts';

const program = new Command('weir')
  .description('Exactly-once stream processing over Kafka for TypeScript')
  .version(WEIR_VERSION)
  .showHelpAfterError('(add --help for usage)')
  .exitOverride()
  .configureOutput({ outputError: (text, write) => write(text) });

/**
 * Every command, in the order `weir --help` lists them, each loaded on first use: a command's
 * module brings what it runs (the runtime, the Kafka client, the web server, ...), and a process
 * that runs one command loads only that one's (`weir run` after a crash starts sooner).
 */
const COMMANDS: Record<string, () => Promise<Command[]>> = {
  init: async () => [(await import('./commands/init.ts')).initCommand()],
  run: async () => [(await import('./commands/run.ts')).runCommand()],
  savepoint: async () => [(await import('./commands/savepoint.ts')).savepointCommand()],
  stop: async () => [(await import('./commands/savepoint.ts')).stopCommand()],
  checkpoints: async () => [(await import('./commands/checkpoints.ts')).checkpointsCommand()],
  verify: async () => [(await import('./commands/verify.ts')).verifyCommand()],
  doctor: async () => [(await import('./commands/doctor.ts')).doctorCommand()],
  kafka: async () => [(await import('./commands/kafka.ts')).kafkaCommand()],
  topic: async () => [(await import('./commands/topic.ts')).topicCommand()],
  produce: async () => [(await import('./commands/produce.ts')).produceCommand()],
  consume: async () => [(await import('./commands/consume.ts')).consumeCommand()],
  cluster: async () => [(await import('./commands/cluster.ts')).clusterCommand()],
  demo: async () => [(await import('./commands/demo.ts')).demoCommand()],
};

// The command named first, when it is one; anything else (--help, `help <command>`, a typo) gets them all.
const named = COMMANDS[process.argv[2] ?? ''];
const commands = named !== undefined ? await named() : (await Promise.all(Object.values(COMMANDS).map((load) => load()))).flat();
for (const command of commands) program.addCommand(command);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Commander already printed the message (or help/version, which exit 0).
    process.exitCode = error.exitCode;
  } else {
    console.error(formatError(error));
    process.exitCode = error instanceof WeirError && error.code === 'NOT_RUNNING' ? 3 : 1;
  }
}
