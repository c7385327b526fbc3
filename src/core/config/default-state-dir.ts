import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The default `stateDir`: where Flink keeps its local state too (the temp folder). The disk backend's working folders and local recovery's copies go under it. */
export const DEFAULT_STATE_DIR = join(tmpdir(), 'weir-state');
