import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type * as Kafka from '@platformatic/kafka';
import { trimApiBarrel } from './trim-api-barrel.ts';
import { trimConnectionImports } from './trim-connection-imports.ts';

/**
 * The parts of `@platformatic/kafka` that Weir uses: its protocol APIs, connections and record
 * encoding, loaded without the package's client classes. The package's index also loads Admin,
 * Producer, Consumer and the schema registries, which compile their option schemas (ajv) as they
 * load: about 0.5 s of CPU and 10 MB in every thread that imports it, and every worker thread
 * does. These come from the package's own files instead; should a later version move or rename
 * them, the whole package is loaded, as before. The API versions come from their own files and
 * the connection gets a barrel of what it uses (trimApiBarrel). Admin, used off the hot path,
 * comes from {@link loadAdmin}.
 */
const NEEDED = [
  'addOffsetsToTxnV4',
  'addPartitionsToTxnV3',
  'apiVersionsV3',
  'ConfigResourceTypes',
  'ConnectionPool',
  'compressionsAlgorithmsByBitmask',
  'crc32c',
  'createAPI',
  'deleteRecordsV2',
  'describeConfigsV4',
  'describeGroupsV5',
  'describeProducersV0',
  'describeTransactionsV0',
  'endTxnV4',
  'fetchV17',
  'findCoordinatorV6',
  'heartbeatV4',
  'initProducerIdV4',
  'joinGroupV9',
  'leaveGroupV5',
  'listOffsetsV9',
  'listTransactionsV1',
  'metadataV12',
  'NumericMap',
  'offsetFetchV8',
  'produceV11',
  'syncGroupV5',
  'txnOffsetCommitV4',
  'Writer',
] as const;

type Needed = Pick<typeof Kafka, (typeof NEEDED)[number]>;

/**
 * Synchronous on purpose (require of ES modules, Node >= 22.12): a top-level await here let a
 * worker thread terminated while it still evaluated its modules crash the whole process in V8.
 */
function load(): Needed {
  const require = createRequire(import.meta.url);
  const requireUrl = (url: URL) => require(fileURLToPath(url)) as Record<string, unknown>;
  try {
    const dist = new URL('./', import.meta.resolve('@platformatic/kafka'));
    // The API versions from their own files, and the client's connection without its whole API barrel.
    const apis = trimApiBarrel(
      dist,
      NEEDED.filter((name) => /V\d+$/.test(name)),
      requireUrl,
    );
    trimConnectionImports(dist);
    const paths = [
      ...(apis === undefined ? ['apis/index.js'] : ['apis/definitions.js', 'apis/enumerations.js']),
      'network/connection-pool.js',
      'protocol/compression.js',
      'protocol/crc32c.js',
      'protocol/writer.js',
      'utils.js',
    ];
    const merged = Object.assign({}, apis, ...paths.map((path) => requireUrl(new URL(path, dist)))) as Record<string, unknown>;
    if (NEEDED.every((name) => merged[name] !== undefined)) return merged as unknown as Needed;
  } catch {
    // a layout this file does not know: the whole package below
  }
  return require('@platformatic/kafka') as typeof Kafka;
}

const kafka = load();

export const {
  addOffsetsToTxnV4,
  addPartitionsToTxnV3,
  apiVersionsV3,
  compressionsAlgorithmsByBitmask,
  ConfigResourceTypes,
  crc32c,
  createAPI,
  deleteRecordsV2,
  describeConfigsV4,
  describeGroupsV5,
  describeProducersV0,
  describeTransactionsV0,
  endTxnV4,
  fetchV17,
  findCoordinatorV6,
  heartbeatV4,
  initProducerIdV4,
  joinGroupV9,
  leaveGroupV5,
  listOffsetsV9,
  listTransactionsV1,
  metadataV12,
  offsetFetchV8,
  produceV11,
  syncGroupV5,
  txnOffsetCommitV4,
} = kafka;

// Classes, used as types too.
export const ConnectionPool = kafka.ConnectionPool;
export type ConnectionPool = Kafka.ConnectionPool;
export const NumericMap = kafka.NumericMap;
export type NumericMap = Kafka.NumericMap;
export const Writer = kafka.Writer;
export type Writer = Kafka.Writer;

/** The client's Admin class, loaded with the whole package on first use (preflight checks, group offsets, topic commands). */
export async function loadAdmin(): Promise<typeof Kafka.Admin> {
  return (await import('@platformatic/kafka')).Admin;
}
