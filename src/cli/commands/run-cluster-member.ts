import { ClusterMember, type ClusterMemberOptions } from '../../cluster/cluster-member.ts';
import { clusterMemberClient } from '../../cluster/cluster-member-client.ts';
import type { RestServer } from '../../web/rest-server.ts';

/**
 * `weir run --cluster <id>`: this process is a member of the cluster until SIGTERM or SIGINT
 * (it then leaves the group: its tasks stop, their open transactions are aborted, and the other
 * members take them over), until `weir stop --cluster` stopped the cluster with a savepoint, until
 * every task of the cluster has ended (bounded input: each committed its final checkpoint, whose
 * record says so; cluster-end-watch.ts), or until its membership cannot go on (the error says why).
 */
export async function runClusterMember(options: ClusterMemberOptions, server: RestServer | undefined): Promise<void> {
  const log = (line: string) => options.log.info(line);
  const member = await ClusterMember.start(options).catch(async (error: unknown) => {
    await server?.close();
    throw error;
  });
  // Left once a signal's leave is done, or failed once the membership cannot go on (then left too).
  let leaving: Promise<void> | undefined;
  const left = Promise.withResolvers<void>();
  const leaveCluster = () => member.close();
  const leave = (signal: NodeJS.Signals) => {
    if (leaving !== undefined) {
      log(`${signal} again: exiting now`);
      process.exit(130);
    }
    log(`${signal}: leaving the cluster (this member's tasks go to the others)`);
    leaving = leaveCluster();
    leaving.then(left.resolve, left.reject);
  };
  process.on('SIGTERM', leave);
  process.on('SIGINT', leave);
  // `weir stop --cluster`: the stopping savepoint is done (every task committed its part and nothing after it).
  void member.stopped.then((id) => {
    if (leaving !== undefined) return;
    log(`savepoint ${id} stopped the cluster: leaving it`);
    leaving = leaveCluster();
    leaving.then(left.resolve, left.reject);
  });
  // Bounded input: every task's latest record says it ended (its final checkpoint is committed): the job is done.
  void member.ended.then(() => {
    if (leaving !== undefined) return;
    log(`every task of cluster "${member.id}" ended: leaving`);
    leaving = leaveCluster();
    leaving.then(left.resolve, left.reject);
  });
  member.failed.catch((error: unknown) => {
    void leaveCluster().finally(() => left.reject(error));
  });
  server?.attach(
    clusterMemberClient(
      member,
      left.promise.catch(() => {}),
    ),
    { cluster: () => member.clusterStatus(), notReady: () => member.notReady() },
  );
  try {
    await left.promise;
    console.log(`member of cluster "${member.id}" left`);
    // Everything of the member is closed; should a client library still hold a handle, do not wait on it.
    setTimeout(() => process.exit(process.exitCode ?? 0), 5000).unref();
  } finally {
    process.off('SIGTERM', leave);
    process.off('SIGINT', leave);
    await server?.close();
  }
}
