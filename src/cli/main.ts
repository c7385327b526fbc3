import { Command, CommanderError } from 'commander';
import { formatError } from '../core/errors/format-error.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import { WEIR_VERSION } from '../core/version.ts';
import { checkpointsCommand } from './commands/checkpoints.ts';
import { clusterCommand } from './commands/cluster.ts';
import { consumeCommand } from './commands/consume.ts';
import { demoCommand } from './commands/demo.ts';
import { doctorCommand } from './commands/doctor.ts';
import { initCommand } from './commands/init.ts';
import { kafkaCommand } from './commands/kafka.ts';
import { produceCommand } from './commands/produce.ts';
import { runCommand } from './commands/run.ts';
import { savepointCommand, stopCommand } from './commands/savepoint.ts';
import { topicCommand } from './commands/topic.ts';
import { verifyCommand } from './commands/verify.ts';

const program = new Command('weir')
  .description('Exactly-once stream processing over Kafka for TypeScript')
  .version(WEIR_VERSION)
  .showHelpAfterError('(add --help for usage)')
  .exitOverride()
  .configureOutput({ outputError: (text, write) => write(text) });

program.addCommand(initCommand());
program.addCommand(runCommand());
program.addCommand(savepointCommand());
program.addCommand(stopCommand());
program.addCommand(checkpointsCommand());
program.addCommand(verifyCommand());
program.addCommand(doctorCommand());
program.addCommand(kafkaCommand());
program.addCommand(topicCommand());
program.addCommand(produceCommand());
program.addCommand(consumeCommand());
program.addCommand(clusterCommand());
program.addCommand(demoCommand());

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
