import { ClusterMember, type ClusterMemberOptions } from '../../cluster/cluster-member.ts';

/**
 * `weir run --cluster <id>`: this process is a member of the cluster until SIGTERM or SIGINT
 * (it then leaves the group: its tasks stop, their open transactions are aborted, and the other
 * members take them over), or until its membership cannot go on (the error says why).
 */
export async function runClusterMember(options: ClusterMemberOptions): Promise<void> {
  const log = (line: string) => options.log.info(line);
  const member = await ClusterMember.start(options);
  let leaving: Promise<void> | undefined;
  const leave = (signal: NodeJS.Signals) => {
    if (leaving !== undefined) {
      log(`${signal} again: exiting now`);
      process.exit(130);
    }
    log(`${signal}: leaving the cluster (this member's tasks go to the others)`);
    leaving = member.close();
  };
  process.on('SIGTERM', leave);
  process.on('SIGINT', leave);
  const left = new Promise<void>((resolve, reject) => {
    const wait = setInterval(() => {
      if (leaving === undefined) return;
      clearInterval(wait);
      leaving.then(resolve, reject);
    }, 100);
    member.failed.catch((error: unknown) => {
      clearInterval(wait);
      void member.close().finally(() => reject(error));
    });
  });
  try {
    await left;
    console.log(`member of cluster "${member.status().cluster}" left`);
  } finally {
    process.off('SIGTERM', leave);
    process.off('SIGINT', leave);
  }
}
