import { createHash } from 'node:crypto';
import { WeirError } from '../../../core/errors/weir-error.ts';
import { releaseBytes } from '../../../core/heap/release-bytes.ts';
import type { StateFileWriter } from '../checkpoint-storage.ts';
import { hashInSlices } from '../state-files.ts';
import type { S3Objects } from './s3-objects.ts';

/** Bytes per part of a state file's multipart upload (S3 takes 5 MiB at least, but for the last). */
export const STATE_PART_BYTES = 8 * 1024 * 1024;

/**
 * A state file uploaded to S3 as it is produced (a multipart upload: the pieces gather into parts
 * of {@link STATE_PART_BYTES}, each uploaded once full, so at most about one part is held), hashed
 * as it goes. A file smaller than one part is one PutObject at the end. Written once: refused when
 * the object exists at the start (STATE_FILE_EXISTS), and the upload completes only if none was
 * made meanwhile (If-None-Match: *). `abort` gives the upload up (its parts deleted).
 */
export function openS3StateFile(objects: S3Objects, key: string, where: string, name: string): StateFileWriter {
  const hash = createHash('sha256');
  let size = 0;
  let part: Uint8Array[] = [];
  let partBytes = 0;
  let uploadId: string | undefined;
  const parts: { partNumber: number; etag: string }[] = [];
  const exists = () =>
    new WeirError('STATE_FILE_EXISTS', `state file ${where} already exists: the same subtask's state was written twice`, { fault: 'internal' });
  const checked = objects.exists(key).then((present) => {
    if (present) throw exists();
  });
  checked.catch(() => {}); // awaited by write and finish
  const takePart = (): Buffer => {
    const body = Buffer.concat(part, partBytes);
    for (const piece of part) releaseBytes(piece); // copied into the part: freed now
    part = [];
    partBytes = 0;
    return body;
  };
  const upload = async (body: Buffer) => {
    uploadId ??= await objects.beginUpload(key);
    const partNumber = parts.length + 1;
    parts.push({ partNumber, etag: await objects.uploadPart(key, uploadId, partNumber, body) });
    releaseBytes(body);
  };
  return {
    write: async (pieces) => {
      await checked;
      size += await hashInSlices(hash, pieces);
      for (const piece of pieces) {
        part.push(piece);
        partBytes += piece.byteLength;
        if (partBytes >= STATE_PART_BYTES) await upload(takePart());
      }
    },
    finish: async () => {
      await checked;
      if (uploadId === undefined) {
        const written = await objects.put(key, takePart(), { ifNoneMatch: '*' });
        if (written === 'precondition-failed') throw exists();
      } else {
        if (partBytes > 0) await upload(takePart());
        const written = await objects.completeUpload(key, uploadId, parts, { ifNoneMatch: '*' });
        if (written === 'precondition-failed') throw exists();
      }
      return { path: name, size, sha256: hash.digest('hex') };
    },
    abort: async () => {
      part = [];
      if (uploadId !== undefined) await objects.abortUpload(key, uploadId);
    },
  };
}
