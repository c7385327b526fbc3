import assert from 'node:assert/strict';
import { test } from 'node:test';
import { freePorts, isPortFree } from '../../../src/local-kafka/ports.ts';

test('freePorts gives different ports, each free again once it returns', async () => {
  for (let round = 0; round < 20; round++) {
    const ports = await freePorts(5);
    assert.equal(new Set(ports).size, 5, `ports repeat: ${ports.join(', ')}`);
    for (const port of ports) assert.ok(port > 0 && (await isPortFree(port)), `port ${port} is not free after freePorts`);
  }
});
