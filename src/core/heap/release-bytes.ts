/**
 * Frees the memory of bytes nothing will read again at once, instead of at a later garbage
 * collection: when `bytes` spans the whole of its ArrayBuffer (its own memory, as a snapshot's
 * serialized pieces and the snapshot itself are, never a slice of Node's shared Buffer pool), the
 * buffer is transferred to a new empty one (`ArrayBuffer.prototype.transfer(0)`), which detaches it
 * and lets V8 free its backing store now. A checkpoint's snapshot is hundreds of MB at 10M keys:
 * left to the collector, each one stays resident until a full collection, which V8 runs late when
 * external memory counts within its heap limit (bin/weir.js), and which is an atomic pause of the
 * task otherwise. Anything else (a slice, a shared or resizable buffer) is left to the collector.
 * The caller must hold the only reference that will be used: `bytes` reads as empty afterwards.
 */
export function releaseBytes(bytes: Uint8Array): void {
  const buffer = bytes.buffer;
  if (!(buffer instanceof ArrayBuffer) || buffer.resizable || buffer.detached) return;
  if (bytes.byteOffset !== 0 || bytes.byteLength !== buffer.byteLength || buffer.byteLength === 0) return;
  buffer.transfer(0);
}
