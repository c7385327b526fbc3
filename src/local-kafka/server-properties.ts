/**
 * The server.properties of the local broker: one node that is broker and KRaft controller at once
 * on `host`, single-replica internal topics, no topic auto-creation; `overrides` last, so a test can
 * change any of it.
 */
export function serverProperties(settings: {
  host: string;
  port: number;
  controllerPort: number;
  logDirs: string;
  transactionMaxTimeoutMs: number;
  overrides: Record<string, string>;
}): string {
  const properties: Record<string, string | number> = {
    'process.roles': 'broker,controller',
    'node.id': 1,
    'controller.quorum.bootstrap.servers': `${settings.host}:${settings.controllerPort}`,
    listeners: `PLAINTEXT://${settings.host}:${settings.port},CONTROLLER://${settings.host}:${settings.controllerPort}`,
    'advertised.listeners': `PLAINTEXT://${settings.host}:${settings.port},CONTROLLER://${settings.host}:${settings.controllerPort}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.security.protocol.map': 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
    'log.dirs': settings.logDirs,
    'num.partitions': 1,
    'offsets.topic.replication.factor': 1,
    'offsets.topic.num.partitions': 1,
    'transaction.state.log.replication.factor': 1,
    'transaction.state.log.min.isr': 1,
    'transaction.state.log.num.partitions': 1,
    'share.coordinator.state.topic.replication.factor': 1,
    'share.coordinator.state.topic.min.isr': 1,
    'group.initial.rebalance.delay.ms': 0,
    'transaction.max.timeout.ms': settings.transactionMaxTimeoutMs,
    'auto.create.topics.enable': 'false',
    ...settings.overrides,
  };
  const lines = Object.entries(properties).map(([key, value]) => `${key}=${value}`);
  return `# Written by \`weir kafka start\` at every start; edit the command's options instead.\n${lines.join('\n')}\n`;
}
