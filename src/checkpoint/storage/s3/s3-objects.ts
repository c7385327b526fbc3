import type { S3Client } from '@aws-sdk/client-s3';
import type { ErrorCode } from '../../../core/errors/error-code.ts';
import { WeirError } from '../../../core/errors/weir-error.ts';
import { errorMessage, STORAGE_SETTING } from '../storage-errors.ts';
import { formatS3Url } from './s3-url.ts';

type Sdk = typeof import('@aws-sdk/client-s3');

/** An object and its size, as a listing gives it. */
export interface ListedObject {
  key: string;
  size: number;
}

/** A write's answer: the new object's ETag, or 'precondition-failed' when its condition did not hold. */
export type PutResult = { etag: string } | 'precondition-failed';

/**
 * The object operations the S3 checkpoint storage needs, on one bucket, through `@aws-sdk/client-s3`
 * (loaded on first use, so a job with a folder for its checkpoints never loads it). The client is
 * configured the way the AWS SDK is everywhere: AWS_REGION (or AWS_DEFAULT_REGION, or the profile),
 * the default credential chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, web
 * identity, the instance's role...), and AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL for an
 * S3-compatible server (MinIO, S3Proxy, Ceph, R2), which is then addressed path-style and sent no
 * checksum headers it might not know (the storage checks each state file's SHA-256 itself).
 * Writes may be conditional (If-None-Match: * to create once, If-Match to replace what was read):
 * S3 has had them since 2024, and the lock and the write-once state files rely on them.
 */
/**
 * How long an S3 request's socket may stay idle before the request fails (and is retried): 30 s,
 * room for a server that assembles a large multipart upload before it answers;
 * `WEIR_S3_SOCKET_TIMEOUT_MS` for tests.
 */
function s3SocketTimeoutMs(): number {
  const value = Number(process.env.WEIR_S3_SOCKET_TIMEOUT_MS);
  return Number.isFinite(value) && value > 0 ? value : 30_000;
}

export class S3Objects {
  readonly bucket: string;
  #client: Promise<{ sdk: Sdk; client: S3Client }> | undefined;

  constructor(bucket: string) {
    this.bucket = bucket;
  }

  async put(key: string, body: Uint8Array | string, condition: { ifNoneMatch?: '*'; ifMatch?: string } = {}): Promise<PutResult> {
    const { sdk, client } = await this.#open();
    try {
      const answer = await client.send(
        new sdk.PutObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Body: typeof body === 'string' ? Buffer.from(body, 'utf8') : body,
          ...(condition.ifNoneMatch === undefined ? {} : { IfNoneMatch: condition.ifNoneMatch }),
          ...(condition.ifMatch === undefined ? {} : { IfMatch: condition.ifMatch }),
        }),
      );
      return { etag: answer.ETag ?? '' };
    } catch (error) {
      // 409: a concurrent conditional write to the same key won (S3's ConditionalRequestConflict).
      const conditional = condition.ifNoneMatch !== undefined || condition.ifMatch !== undefined;
      if (conditional && (status(error) === 412 || status(error) === 409)) return 'precondition-failed';
      throw this.#failure('STATE_WRITE_FAILED', 'write', key, error);
    }
  }

  /** Begins a multipart upload of `key` (a state file written as it is produced); returns its upload id. */
  async beginUpload(key: string): Promise<string> {
    const { sdk, client } = await this.#open();
    try {
      const answer = await client.send(new sdk.CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key }));
      if (answer.UploadId === undefined) throw new Error('the answer has no UploadId');
      return answer.UploadId;
    } catch (error) {
      throw this.#failure('STATE_WRITE_FAILED', 'begin an upload of', key, error);
    }
  }

  /** Uploads part `partNumber` (from 1; every part but the last at least 5 MiB); returns its ETag. */
  async uploadPart(key: string, uploadId: string, partNumber: number, body: Uint8Array): Promise<string> {
    const { sdk, client } = await this.#open();
    try {
      const answer = await client.send(new sdk.UploadPartCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, PartNumber: partNumber, Body: body }));
      return answer.ETag ?? '';
    } catch (error) {
      throw this.#failure('STATE_WRITE_FAILED', `upload part ${partNumber} of`, key, error);
    }
  }

  /** Completes a multipart upload: the object exists from now on (with If-None-Match: * only if none did). */
  async completeUpload(
    key: string,
    uploadId: string,
    parts: readonly { partNumber: number; etag: string }[],
    condition: { ifNoneMatch?: '*' } = {},
  ): Promise<PutResult> {
    const { sdk, client } = await this.#open();
    try {
      const answer = await client.send(
        new sdk.CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: key,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts.map((part) => ({ PartNumber: part.partNumber, ETag: part.etag })) },
          ...(condition.ifNoneMatch === undefined ? {} : { IfNoneMatch: condition.ifNoneMatch }),
        }),
      );
      return { etag: answer.ETag ?? '' };
    } catch (error) {
      if (condition.ifNoneMatch !== undefined && (status(error) === 412 || status(error) === 409)) return 'precondition-failed';
      throw this.#failure('STATE_WRITE_FAILED', 'complete the upload of', key, error);
    }
  }

  /** Gives a multipart upload up (its parts are deleted), best effort. */
  async abortUpload(key: string, uploadId: string): Promise<void> {
    const { sdk, client } = await this.#open();
    await client.send(new sdk.AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId })).catch(() => {});
  }

  /** The object's bytes and ETag; undefined when there is none. */
  async get(key: string): Promise<{ body: Buffer; etag: string } | undefined> {
    const { sdk, client } = await this.#open();
    try {
      const answer = await client.send(new sdk.GetObjectCommand({ Bucket: this.bucket, Key: key }));
      const bytes = await answer.Body?.transformToByteArray();
      return { body: Buffer.from(bytes ?? new Uint8Array()), etag: answer.ETag ?? '' };
    } catch (error) {
      if (status(error) === 404 && nameOf(error) !== 'NoSuchBucket') return undefined;
      throw this.#failure('CHECKPOINT_READ_FAILED', 'read', key, error);
    }
  }

  async exists(key: string): Promise<boolean> {
    const { sdk, client } = await this.#open();
    try {
      await client.send(new sdk.HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return true;
    } catch (error) {
      if (status(error) === 404) return false;
      throw this.#failure('CHECKPOINT_READ_FAILED', 'look up', key, error);
    }
  }

  /** The objects under `prefix` (every one, page by page); with a delimiter, also the "folders" one level down. */
  async list(prefix: string, delimiter?: string): Promise<{ objects: ListedObject[]; folders: string[] }> {
    const { sdk, client } = await this.#open();
    const objects: ListedObject[] = [];
    const folders: string[] = [];
    let token: string | undefined;
    try {
      do {
        const page = await client.send(
          new sdk.ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: prefix,
            ...(delimiter === undefined ? {} : { Delimiter: delimiter }),
            ...(token === undefined ? {} : { ContinuationToken: token }),
          }),
        );
        for (const entry of page.Contents ?? []) if (entry.Key !== undefined) objects.push({ key: entry.Key, size: entry.Size ?? 0 });
        for (const entry of page.CommonPrefixes ?? []) if (entry.Prefix !== undefined) folders.push(entry.Prefix);
        token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
      } while (token !== undefined);
    } catch (error) {
      throw this.#failure('CHECKPOINT_STORAGE_FAILED', 'list', prefix, error);
    }
    return { objects, folders };
  }

  /**
   * Deletes these objects; objects already gone are fine. One DeleteObject each, 16 at a time:
   * DeleteObjects needs a checksum header that S3-compatible servers do not all implement, and a
   * checkpoint's location holds a few objects per subtask.
   */
  async delete(keys: readonly string[]): Promise<void> {
    const { sdk, client } = await this.#open();
    for (let i = 0; i < keys.length; i += 16) {
      await Promise.all(
        keys.slice(i, i + 16).map(async (key) => {
          try {
            await client.send(new sdk.DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
          } catch (error) {
            if (status(error) === 404 && nameOf(error) !== 'NoSuchBucket') return;
            throw this.#failure('CHECKPOINT_DISCARD_FAILED', 'delete', key, error);
          }
        }),
      );
    }
  }

  /** Checks the bucket is there and these credentials reach it. */
  async checkBucket(): Promise<void> {
    const { sdk, client } = await this.#open();
    try {
      await client.send(new sdk.HeadBucketCommand({ Bucket: this.bucket }));
    } catch (error) {
      if (status(error) === 404) {
        throw new WeirError('CHECKPOINT_STORAGE_FAILED', `${STORAGE_SETTING}: the bucket "${this.bucket}" does not exist${endpointText()}`, {
          hint: `create the bucket first (aws s3 mb s3://${this.bucket}), or check its name and AWS_REGION`,
          fault: 'user',
          cause: error,
        });
      }
      throw this.#failure('CHECKPOINT_STORAGE_FAILED', 'reach the bucket of', '', error);
    }
  }

  close(): void {
    void this.#client?.then(({ client }) => client.destroy()).catch(() => {});
    this.#client = undefined;
  }

  #open(): Promise<{ sdk: Sdk; client: S3Client }> {
    this.#client ??= import('@aws-sdk/client-s3').then((sdk) => {
      const endpoint = process.env.AWS_ENDPOINT_URL_S3 || process.env.AWS_ENDPOINT_URL || undefined;
      const region = process.env.AWS_REGION || process.env.AWS_DEFAULT_REGION || (endpoint === undefined ? undefined : 'us-east-1');
      const client = new sdk.S3Client({
        ...(region === undefined ? {} : { region }),
        // The SDK waits forever by default: a request the server never answers would hold a checkpoint until the task's
        // transaction times out. A connection that takes 10 s, or a socket idle 30 s, fails the request; the SDK retries it.
        requestHandler: { connectionTimeout: 10_000, socketTimeout: s3SocketTimeoutMs() },
        ...(endpoint === undefined
          ? {}
          : { endpoint, forcePathStyle: true, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' }),
      });
      return { sdk, client };
    });
    return this.#client;
  }

  #failure(code: ErrorCode, what: string, key: string, error: unknown): WeirError {
    const where = formatS3Url({ bucket: this.bucket, key });
    const name = nameOf(error);
    const code403 = status(error) === 403 || ['AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'ExpiredToken'].includes(name);
    const missingCredentials = /credential/i.test(errorMessage(error)) && status(error) === undefined;
    const missingRegion = /region is missing/i.test(errorMessage(error));
    const unreachable = ['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'ECONNRESET', 'EHOSTUNREACH'].includes((error as { code?: string }).code ?? name);
    const hint = missingRegion
      ? 'set AWS_REGION (the bucket’s region), as for any AWS tool'
      : code403 || missingCredentials
        ? 'check the AWS credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or the instance role) and that they may read and write the bucket'
        : unreachable
          ? `check that the object store is reachable${endpointText()} (AWS_ENDPOINT_URL for an S3-compatible server)`
          : `check ${STORAGE_SETTING} and the object store's health`;
    return new WeirError(code, `cannot ${what} ${where}${endpointText()}: ${name === 'Error' || name === '' ? '' : `${name}: `}${errorMessage(error)}`, {
      fault: code403 || missingCredentials || missingRegion ? 'user' : 'external',
      retriable: !(code403 || missingCredentials || missingRegion),
      hint,
      cause: error,
    });
  }
}

function status(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
}

function nameOf(error: unknown): string {
  return error instanceof Error ? error.name : '';
}

function endpointText(): string {
  const endpoint = process.env.AWS_ENDPOINT_URL_S3 || process.env.AWS_ENDPOINT_URL;
  return endpoint ? ` (at ${endpoint})` : '';
}
