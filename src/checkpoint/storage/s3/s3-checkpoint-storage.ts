import { randomBytes } from 'node:crypto';
import { WeirError } from '../../../core/errors/weir-error.ts';
import {
  assertCheckpointId,
  checkpointFolderName,
  parseCheckpointFolderName,
  parseSavepointFolderName,
  SAVEPOINTS_FOLDER,
  savepointFolderName,
} from '../checkpoint-folder-name.ts';
import type { CheckpointLocation } from '../checkpoint-location.ts';
import { type CheckpointMetadata, describeSchemaIssues, METADATA_FILE_NAME, type StateHandle, stateHandleSchema } from '../checkpoint-metadata.ts';
import type { CheckpointStorage, StateFileWriter, StoredCheckpointMetadata } from '../checkpoint-storage.ts';
import { COMMITTED_FILE_NAME, metadataText, storedMetadata } from '../metadata-files.ts';
import { type StateKind, stateFileName } from '../state-file-name.ts';
import { sha256, sha256InSlices } from '../state-files.ts';
import { fencedWrite, LOCK_FILE_NAME, type LockOptions, type StorageLock } from '../storage-lock.ts';
import { S3Objects } from './s3-objects.ts';
import { openS3StateFile } from './s3-state-upload.ts';
import { S3StorageLock } from './s3-storage-lock.ts';
import { childKey, formatS3Url, parseS3Url, type S3Url } from './s3-url.ts';

/**
 * Checkpoints and savepoints in an S3 bucket (or any S3-compatible store), with the layout of the
 * folder storage under a key prefix:
 *
 *   s3://<bucket>/<prefix>/
 *     chk-<N>/<operatorUid>-<subtask>.keyed|.operator, chk-<N>/_metadata
 *     savepoints/savepoint-<N>-<hex>/..., plus _committed
 *     _lock
 *
 * The contract's guarantees hold through S3's own: a PUT is atomic (an object is there whole or
 * not at all) and strongly consistent for reads and listings after it, so `_metadata`, written
 * last, completes a checkpoint in one step. State files and `_metadata` are written with
 * If-None-Match: * (written once: a second write is refused, never an overwrite), and read back
 * only when their size and SHA-256 match the handle. A location is discarded `_metadata` first.
 */
export class S3CheckpointStorage implements CheckpointStorage {
  readonly root: string;
  readonly #url: S3Url;
  readonly #objects: S3Objects;
  /** This process's lock of the storage, once taken: it fences the writes that make or unmake checkpoints. */
  #lock: StorageLock | undefined;

  constructor(setting: string) {
    this.#url = parseS3Url(setting);
    this.root = formatS3Url(this.#url);
    this.#objects = new S3Objects(this.#url.bucket);
  }

  /** Checks the bucket is reachable and writable (a probe object, written and deleted). */
  async initialize(): Promise<void> {
    await this.#objects.checkBucket();
    const probe = childKey(this.#url.key, `_probe-${randomBytes(6).toString('hex')}`);
    await this.#objects.put(probe, '');
    await this.#objects.delete([probe]);
  }

  async lock(options: LockOptions): Promise<StorageLock> {
    this.#lock = await S3StorageLock.acquire(this.#objects, this.root, childKey(this.#url.key, LOCK_FILE_NAME), options);
    return this.#lock;
  }

  async verifyLock(): Promise<void> {
    await this.#lock?.verify();
  }

  checkpointLocation(checkpointId: number): CheckpointLocation {
    assertCheckpointId(checkpointId);
    return { kind: 'checkpoint', checkpointId, path: `${this.root}/${checkpointFolderName(checkpointId)}` };
  }

  savepointLocation(checkpointId: number): CheckpointLocation {
    assertCheckpointId(checkpointId);
    return { kind: 'savepoint', checkpointId, path: `${this.root}/${SAVEPOINTS_FOLDER}/${savepointFolderName(checkpointId, randomBytes(6).toString('hex'))}` };
  }

  async writeState(location: CheckpointLocation, operatorUid: string, subtaskIndex: number, kind: StateKind, bytes: Uint8Array): Promise<StateHandle> {
    const name = stateNameOf(operatorUid, subtaskIndex, kind);
    const written = await this.#objects.put(childKey(this.#keyOf(location.path), name), bytes, { ifNoneMatch: '*' });
    if (written === 'precondition-failed') {
      throw new WeirError('STATE_FILE_EXISTS', `state file ${location.path}/${name} already exists: the same subtask's state was written twice`, {
        fault: 'internal',
      });
    }
    return { path: name, size: bytes.byteLength, sha256: await sha256InSlices(bytes) };
  }

  async openState(location: CheckpointLocation, operatorUid: string, subtaskIndex: number, kind: StateKind): Promise<StateFileWriter> {
    const name = stateNameOf(operatorUid, subtaskIndex, kind);
    return openS3StateFile(this.#objects, childKey(this.#keyOf(location.path), name), `${location.path}/${name}`, name);
  }

  async readState(location: CheckpointLocation | string, handle: StateHandle): Promise<Uint8Array> {
    const folder = typeof location === 'string' ? location.replace(/\/+$/, '') : location.path;
    const valid = stateHandleSchema.safeParse(handle);
    if (!valid.success) {
      throw new WeirError('INVALID_STATE_HANDLE', `a state handle for ${folder} is invalid: ${describeSchemaIssues(valid.error)}`, { fault: 'internal' });
    }
    // A file an incremental checkpoint shares with an earlier one is in that one's folder, beside this one.
    const holder = handle.checkpoint === undefined ? folder : `${folder.slice(0, folder.lastIndexOf('/'))}/${checkpointFolderName(handle.checkpoint)}`;
    const file = `${holder}/${handle.path}`;
    const hint = `the checkpoint in ${folder} is damaged; restore from another checkpoint or savepoint`;
    const object = await this.#objects.get(childKey(this.#keyOf(holder), handle.path));
    if (object === undefined) throw new WeirError('STATE_FILE_MISSING', `state file ${file} is missing`, { fault: 'external', hint });
    if (object.body.byteLength !== handle.size) {
      throw new WeirError(
        'STATE_FILE_CORRUPT',
        `state file ${file} is corrupt: size mismatch (expected ${handle.size} bytes, found ${object.body.byteLength})`,
        {
          fault: 'external',
          hint,
        },
      );
    }
    const actual = sha256(object.body);
    if (actual !== handle.sha256) {
      throw new WeirError('STATE_FILE_CORRUPT', `state file ${file} is corrupt: sha256 mismatch (expected ${handle.sha256}, found ${actual})`, {
        fault: 'external',
        hint,
      });
    }
    return object.body;
  }

  /**
   * Writes `_metadata` once (If-None-Match: *), fenced by the storage's lock: S3 cannot make a PUT
   * conditional on another object, so the lock is read right before the PUT and again right after
   * it, and a process that lost it meanwhile deletes the `_metadata` it wrote (storage-lock.ts fencedWrite).
   */
  async commitMetadata(location: CheckpointLocation, metadata: CheckpointMetadata): Promise<void> {
    const text = metadataText(location, metadata);
    const key = childKey(this.#keyOf(location.path), METADATA_FILE_NAME);
    await fencedWrite(
      this.#lock,
      async () => {
        const written = await this.#objects.put(key, text, { ifNoneMatch: '*' });
        if (written === 'precondition-failed') {
          throw new WeirError(
            'CHECKPOINT_ALREADY_COMPLETED',
            `${location.path}/${METADATA_FILE_NAME} already exists: ${location.kind} ${location.checkpointId} was completed before`,
            { fault: 'internal' },
          );
        }
      },
      () => this.#objects.delete([key]),
    );
  }

  async readMetadata(path: string): Promise<StoredCheckpointMetadata> {
    const trimmed = path.replace(/\/+$/, '');
    const folder = trimmed.endsWith(`/${METADATA_FILE_NAME}`) ? trimmed.slice(0, -METADATA_FILE_NAME.length - 1) : trimmed;
    const folderKey = this.#keyOf(folder);
    const file = `${folder}/${METADATA_FILE_NAME}`;
    const object = await this.#objects.get(childKey(folderKey, METADATA_FILE_NAME));
    if (object === undefined) {
      const anything = (await this.#objects.list(`${folderKey}/`)).objects.length > 0;
      if (anything) {
        throw new WeirError('CHECKPOINT_NOT_COMPLETED', `no ${METADATA_FILE_NAME} in ${folder}: it is not a completed checkpoint or savepoint`, {
          hint: 'a checkpoint that was aborted or still running has no _metadata; give a completed one (`weir checkpoints list` shows them)',
        });
      }
      throw new WeirError('CHECKPOINT_NOT_FOUND', `no checkpoint or savepoint at ${folder}: nothing is stored there`, {
        hint: 'give the location of a chk-<N> folder or a savepoint folder; `weir checkpoints list` shows the checkpoints of a job',
      });
    }
    return storedMetadata(object.body.toString('utf8'), file, folder, folder.slice(folder.lastIndexOf('/') + 1));
  }

  hasMetadata(location: CheckpointLocation): Promise<boolean> {
    return this.#objects.exists(childKey(this.#keyOf(location.path), METADATA_FILE_NAME));
  }

  async listLocations(kind: CheckpointLocation['kind']): Promise<CheckpointLocation[]> {
    const parentKey = kind === 'checkpoint' ? this.#url.key : childKey(this.#url.key, SAVEPOINTS_FOLDER);
    const parse = kind === 'checkpoint' ? parseCheckpointFolderName : parseSavepointFolderName;
    const { folders } = await this.#objects.list(parentKey === '' ? '' : `${parentKey}/`, '/');
    const locations: CheckpointLocation[] = [];
    for (const prefix of folders) {
      const name = prefix.replace(/\/$/, '').slice(prefix.replace(/\/$/, '').lastIndexOf('/') + 1);
      const checkpointId = parse(name);
      if (checkpointId !== undefined) locations.push({ kind, checkpointId, path: formatS3Url({ bucket: this.#url.bucket, key: childKey(parentKey, name) }) });
    }
    return locations.sort((a, b) => a.checkpointId - b.checkpointId);
  }

  async sizeOf(location: CheckpointLocation): Promise<number> {
    const { objects } = await this.#objects.list(`${this.#keyOf(location.path)}/`);
    return objects.reduce((total, object) => total + object.size, 0);
  }

  async markCommitted(location: CheckpointLocation): Promise<void> {
    await this.#lock?.verify();
    await this.#objects.put(childKey(this.#keyOf(location.path), COMMITTED_FILE_NAME), `${new Date().toISOString()}\n`);
  }

  isMarkedCommitted(path: string): Promise<boolean> {
    return this.#objects.exists(childKey(this.#keyOf(path.replace(/\/+$/, '')), COMMITTED_FILE_NAME));
  }

  /** Deletes a location of this storage, `_metadata` first (so a crash half-way leaves an incomplete location, never a checkpoint with state missing). */
  async discard(location: CheckpointLocation): Promise<void> {
    const key = this.#ownKey(location);
    // A process that lost the lock deletes nothing: the storage may hold the new owner's checkpoints.
    await this.#lock?.verify();
    await this.#objects.delete([childKey(key, METADATA_FILE_NAME)]);
    const { objects } = await this.#objects.list(`${key}/`);
    await this.#objects.delete(objects.map((object) => object.key));
  }

  /** Deletes a checkpoint's `_metadata` only: its state files stay for the checkpoints that name them (retention). */
  async discardMetadata(location: CheckpointLocation): Promise<void> {
    const key = this.#ownKey(location);
    await this.#lock?.verify();
    await this.#objects.delete([childKey(key, METADATA_FILE_NAME)]);
  }

  /** The key of a location's folder in this storage; refuses anything else. */
  #ownKey(location: CheckpointLocation): string {
    const key = this.#keyOf(location.path);
    const expected =
      location.kind === 'checkpoint'
        ? childKey(this.#url.key, checkpointFolderName(location.checkpointId))
        : key.startsWith(`${childKey(this.#url.key, SAVEPOINTS_FOLDER)}/`) &&
            parseSavepointFolderName(key.slice(key.lastIndexOf('/') + 1)) === location.checkpointId
          ? key
          : undefined;
    if (key !== expected) {
      throw new WeirError(
        'DISCARD_REFUSED',
        `refusing to delete ${location.path}: it is not ${location.kind} ${location.checkpointId}'s folder in ${this.root}`,
        {
          fault: 'internal',
        },
      );
    }
    return key;
  }

  /** The other "folders" under this storage's parent prefix (none for a storage at the bucket's root). */
  async neighbours(): Promise<string[]> {
    const key = this.#url.key;
    if (key === '') return [];
    const slash = key.lastIndexOf('/');
    const parentKey = slash < 0 ? '' : key.slice(0, slash + 1);
    const { folders } = await this.#objects.list(parentKey, '/');
    return folders
      .map((prefix) => prefix.replace(/\/$/, ''))
      .filter((folder) => folder !== key)
      .map((folder) => formatS3Url({ bucket: this.#url.bucket, key: folder }));
  }

  /** The key of an `s3://` location of this storage's bucket. */
  #keyOf(path: string): string {
    const url = parseS3Url(path);
    if (url.bucket !== this.#url.bucket) {
      throw new WeirError('INVALID_CHECKPOINT_STORAGE', `${path} is not in the bucket of the checkpoint storage ${this.root}`, { fault: 'internal' });
    }
    return url.key;
  }
}

/** The name of one subtask's state file, once what writeState was given is checked. */
function stateNameOf(operatorUid: string, subtaskIndex: number, kind: StateKind): string {
  if (typeof operatorUid !== 'string' || operatorUid === '' || !Number.isSafeInteger(subtaskIndex) || subtaskIndex < 0) {
    throw new WeirError('INVALID_STATE_WRITE', `writeState was given operator "${operatorUid}" subtask ${subtaskIndex}`, { fault: 'internal' });
  }
  return stateFileName(operatorUid, subtaskIndex, kind);
}
