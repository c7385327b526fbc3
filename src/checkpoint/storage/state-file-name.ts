import { createHash } from 'node:crypto';

/**
 * File names for state snapshots: `<encoded operator uid>-<subtask>.<kind>`.
 *
 * Operator uids are free text, so the uid is encoded to be safe on every file system: ASCII letters,
 * digits, `_` and `-` stay, `.` stays except in first position (no hidden files), and every other
 * character becomes `%XX` per UTF-8 byte (as encodeURIComponent does, `%` itself included), so
 * `a/b c:é` becomes `a%2Fb%20c%3A%C3%A9`. The encoding is reversible with
 * {@link decodeOperatorUid}. An encoded uid longer than {@link MAX_ENCODED_UID_LENGTH} is cut and
 * ends in `~` plus a hash of the whole uid, to stay within file-name limits (255 bytes); such a
 * name no longer decodes, which is fine: the metadata records each operator's uid and file paths.
 *
 * Uids that differ only in letter case collide on a case-insensitive file system (macOS, Windows);
 * the storage writes state files exclusively, so such a collision fails loudly instead of
 * overwriting.
 */

export const MAX_ENCODED_UID_LENGTH = 200;

/** `keyed-base`: a disk backend's base written beside the checkpoint that took it (materialized while later checkpoints complete). */
export type StateKind = 'keyed' | 'keyed-base' | 'operator';

export function encodeOperatorUid(uid: string): string {
  let encoded = '';
  for (const byte of new TextEncoder().encode(uid)) {
    const char = String.fromCharCode(byte);
    const safe = /[A-Za-z0-9_-]/.test(char) || (char === '.' && encoded !== '');
    encoded += safe ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  if (encoded.length <= MAX_ENCODED_UID_LENGTH) return encoded;
  let cut = MAX_ENCODED_UID_LENGTH - 17;
  const lastPercent = encoded.lastIndexOf('%', cut - 1);
  if (lastPercent > cut - 3) cut = lastPercent; // never split a %XX
  return `${encoded.slice(0, cut)}~${createHash('sha256').update(uid).digest('hex').slice(0, 16)}`;
}

/** The uid an {@link encodeOperatorUid} result stands for, or undefined when it was shortened. */
export function decodeOperatorUid(encoded: string): string | undefined {
  if (encoded.includes('~')) return undefined;
  return decodeURIComponent(encoded);
}

export function stateFileName(operatorUid: string, subtaskIndex: number, kind: StateKind): string {
  return `${encodeOperatorUid(operatorUid)}-${subtaskIndex}.${kind}`;
}
