import { closeSync, fstatSync, openSync, readSync, writeSync } from 'node:fs';

/** lmdb's MDB_MAGIC, the first field of a meta page's MDB_meta. */
const MDB_MAGIC = 0xbeefc0de;
/** Bytes of the page header before a meta page's MDB_meta in lmdb-js 3.5's lmdb (page number, txnid, pad, flags, bounds). */
const PAGE_HEADER_BYTES = 24;
/** Offsets in MDB_meta (64-bit): the page size (the free database's md_pad) and the txnid that committed it. */
const META_PSIZE = 24;
const META_LAST_PAGE = 120;
const META_TXNID = 128;

/**
 * Makes a compacted lmdb copy (lmdb-js `backup(path, true)`, a base's file) safe to write into, in
 * place, before lmdb opens it. lmdb-js 3.5's lmdb writes the copy's meta page 1 with the source's
 * txnid (made odd) where upstream LMDB writes 1, while every copied page says txnid 1; once a
 * reopened copy's writes reuse freed pages, lmdb then crashes the process (a segmentation fault, or
 * `Assertion 'key.mv_size > 0' failed in mdb_page_alloc()`, from about 100k keys; also on dropping a
 * large database, lmdb-js issue 317). With meta page 1's txnid set to 1, as upstream LMDB writes it,
 * the same copies took a million random writes and deletions and read back exactly.
 *
 * Returns whether the file is such a copy, now writable: both meta pages with lmdb's magic, meta
 * page 0 as a compacting copy writes it (txnid 0, last page 1), meta page 1 with an odd txnid and a
 * last page inside the file. Otherwise the file is left as it is and false returned (the caller
 * loads it instead of writing into it).
 */
export function repairCompactedCopy(file: string): boolean {
  const fd = openSync(file, 'r+');
  try {
    const head = Buffer.alloc(PAGE_HEADER_BYTES + META_TXNID + 8);
    if (readSync(fd, head, 0, head.length, 0) !== head.length || head.readUInt32LE(PAGE_HEADER_BYTES) !== MDB_MAGIC) return false;
    const pageSize = head.readUInt32LE(PAGE_HEADER_BYTES + META_PSIZE);
    if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) return false;
    // Meta page 0 as a compacting copy leaves it: txnid 0, last page 1 (the two meta pages).
    if (head.readBigUInt64LE(PAGE_HEADER_BYTES + META_TXNID) !== 0n || head.readBigUInt64LE(PAGE_HEADER_BYTES + META_LAST_PAGE) !== 1n) return false;
    const meta = Buffer.alloc(head.length);
    if (readSync(fd, meta, 0, meta.length, pageSize) !== meta.length || meta.readUInt32LE(PAGE_HEADER_BYTES) !== MDB_MAGIC) return false;
    // Meta page 1: an odd txnid (the copy's, made odd; 1 once repaired) and a last page inside the file.
    const txnid = meta.readBigUInt64LE(PAGE_HEADER_BYTES + META_TXNID);
    const lastPage = meta.readBigUInt64LE(PAGE_HEADER_BYTES + META_LAST_PAGE);
    if (txnid % 2n !== 1n || lastPage < 1n || (lastPage + 1n) * BigInt(pageSize) > BigInt(fstatSync(fd).size)) return false;
    if (txnid === 1n) return true;
    const field = Buffer.alloc(8);
    field.writeBigUInt64LE(1n);
    writeSync(fd, field, 0, 8, pageSize + PAGE_HEADER_BYTES + META_TXNID);
    return true;
  } finally {
    closeSync(fd);
  }
}
