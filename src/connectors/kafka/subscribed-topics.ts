import type { ClusterConnections, TopicInfo } from './cluster-connections.ts';

/** The topics a subscription names: the listed ones (each must exist), or every topic matching the pattern, sorted by name. */
export async function subscribedTopics(connections: ClusterConnections, topics: string[] | RegExp): Promise<TopicInfo[]> {
  if (Array.isArray(topics)) return Promise.all([...topics].sort().map((topic) => connections.topic(topic)));
  const metadata = await connections.metadata(null);
  const names = metadata.topics
    .filter((topic) => !topic.isInternal && typeof topic.name === 'string' && topics.test(topic.name))
    .map((topic) => topic.name as string)
    .sort();
  return Promise.all(names.map((name) => connections.topic(name)));
}
