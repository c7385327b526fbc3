/** Where one checkpoint or savepoint lives: its folder, what it is, and its checkpoint id. */
export interface CheckpointLocation {
  kind: 'checkpoint' | 'savepoint';
  checkpointId: number;
  /** The absolute path of the folder (`<checkpoint dir>/chk-<N>` or `<checkpoint dir>/savepoints/savepoint-<N>-<hex>`). */
  path: string;
  /**
   * With incremental checkpoints: the latest completed checkpoint when this one was triggered,
   * which the tasks' keyed snapshots may add to (its files are kept while it or a checkpoint that
   * adds to it is retained).
   */
  incrementalBase?: number;
}
