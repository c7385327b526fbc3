import { WeirError } from '../../../core/errors/weir-error.ts';
import { STORAGE_SETTING } from '../storage-errors.ts';

/** An object-store place: a bucket and a key prefix (no leading or trailing slash; '' for the bucket's root). */
export interface S3Url {
  bucket: string;
  key: string;
}

export const S3_SCHEME = 's3://';

export function isS3Url(text: string): boolean {
  return typeof text === 'string' && text.startsWith(S3_SCHEME);
}

// Amazon's bucket naming rules (general purpose buckets): 3 to 63 lowercase letters, digits, dots and hyphens.
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** Parses `s3://bucket/prefix`, refusing what is not one with the setting's name and the fix. */
export function parseS3Url(text: string): S3Url {
  const rest = text.slice(S3_SCHEME.length);
  const slash = rest.indexOf('/');
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  const key = (slash < 0 ? '' : rest.slice(slash + 1)).replace(/\/+$/, '');
  const segments = key === '' ? [] : key.split('/');
  if (!BUCKET.test(bucket) || segments.some((segment) => segment === '' || segment === '.' || segment === '..')) {
    throw new WeirError('INVALID_CHECKPOINT_STORAGE', `${STORAGE_SETTING}: ${JSON.stringify(text)} is not an S3 location`, {
      hint: 'give s3://<bucket>/<prefix>, e.g. s3://my-bucket/weir/payments (a bucket name is 3 to 63 lowercase letters, digits, dots and hyphens)',
    });
  }
  return { bucket, key };
}

export function formatS3Url(url: S3Url): string {
  return `${S3_SCHEME}${url.bucket}${url.key === '' ? '' : `/${url.key}`}`;
}

/** A key under a prefix. */
export function childKey(prefix: string, ...names: string[]): string {
  return [prefix, ...names].filter((part) => part !== '').join('/');
}
