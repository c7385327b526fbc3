/**
 * The files of a new Weir project (`weir init`): a job that counts words exactly once from one
 * Kafka topic into another, its logic in a helper module with a test of its own, a tsconfig that
 * accepts only what Node's type stripping runs, and a README of three commands.
 */
export function projectFiles(name: string, weirVersion: string): Record<string, string> {
  return {
    'package.json': `${JSON.stringify(
      {
        name,
        private: true,
        type: 'module',
        engines: { node: '>=22.18.0' },
        scripts: {
          start: 'weir run job.ts --config weir.config.json',
          test: 'node --test',
          typecheck: 'tsc -p tsconfig.json',
        },
        dependencies: { 'weir-streams': `^${weirVersion}` },
        devDependencies: { typescript: '^7.0.0', '@types/node': '^24.0.0' },
      },
      null,
      2,
    )}\n`,
    // Node runs .ts files by stripping their types: no enums, namespaces or parameter properties
    // (erasableSyntaxOnly says so at once), and imports name the .ts file they mean.
    'tsconfig.json': `${JSON.stringify(
      {
        compilerOptions: {
          target: 'es2023',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          allowImportingTsExtensions: true,
          rewriteRelativeImportExtensions: true,
          erasableSyntaxOnly: true,
          verbatimModuleSyntax: true,
          noEmit: true,
          strict: true,
          skipLibCheck: true,
          types: ['node'],
        },
        include: ['*.ts'],
      },
      null,
      2,
    )}\n`,
    'weir.config.json': `${JSON.stringify({ parallelism: 2, checkpointing: { interval: '1s', storage: '.weir/checkpoints' } }, null, 2)}\n`,
    '.gitignore': 'node_modules/\n.weir/\n',
    'words.ts': `/** The job's logic, apart from Kafka, so a test checks it in milliseconds (words.test.ts). */

/** An input line: {"seq": 0, "text": "to be or not to be"}. */
export interface Line {
  seq: number;
  text: string;
}

/** A word of a line, with the line's position, so every output record is traceable to its input. */
export interface Word {
  seq: number;
  word: string;
}

/** What the job writes for each word: how often it has been seen so far. */
export interface WordCount extends Word {
  count: number;
}

/** The words of a line, lower case, without punctuation. */
export function wordsOf(line: Line): Word[] {
  return line.text
    .toLowerCase()
    .split(/[^\\p{L}\\p{N}']+/u)
    .filter((word) => word !== '')
    .map((word) => ({ seq: line.seq, word }));
}
`,
    'words.test.ts': `import assert from 'node:assert/strict';
import { test } from 'node:test';
import { wordsOf } from './words.ts';

test('a line becomes its words, lower case, without punctuation', () => {
  assert.deepEqual(wordsOf({ seq: 7, text: 'To be, or not to be!' }), [
    { seq: 7, word: 'to' },
    { seq: 7, word: 'be' },
    { seq: 7, word: 'or' },
    { seq: 7, word: 'not' },
    { seq: 7, word: 'to' },
    { seq: 7, word: 'be' },
  ]);
});
`,
    'job.ts': `/**
 * Lines in (topic "lines", JSON {"seq", "text"}), a running count per word out (topic
 * "word-counts", JSON {"seq", "word", "count"} keyed by word), exactly once: the count of a word is
 * keyed state, checkpointed with the source's offsets, and the sink commits its transaction
 * when the checkpoint completes.
 */
import { defineJob, kafkaDeserializers, kafkaSink, kafkaSource, type ValueState, valueState } from 'weir-streams';
import { type Line, type WordCount, wordsOf } from './words.ts';

export default defineJob({
  name: '${name.replace(/'/g, '')}',
  build(env) {
    // build() runs once per subtask, in its worker thread: this handle is that subtask's.
    let count: ValueState<number>;
    env
      .fromSource(kafkaSource<Line>({ topics: ['lines'], deserializer: kafkaDeserializers.json }), { uid: 'lines' })
      .flatMap(wordsOf, { uid: 'words' })
      .keyBy((word) => word.word)
      .process<WordCount>(
        {
          open(context) {
            count = context.getState(valueState<number>('count'));
          },
          processElement(word, _context, out) {
            const seen = (count.value() ?? 0) + 1;
            count.update(seen);
            out.collect({ ...word, count: seen });
          },
        },
        { uid: 'count' },
      )
      .sinkTo(
        kafkaSink<WordCount>({
          topic: 'word-counts',
          serializer: (count) => ({ key: count.word, value: JSON.stringify(count) }),
          deliveryGuarantee: 'exactly-once',
        }),
        { uid: 'word-counts' },
      );
  },
});
`,
    'README.md': `# ${name}

A Weir job: lines from the Kafka topic \`lines\`, a running count per word into \`word-counts\`,
exactly once.

\`\`\`sh
npm install   # weir-streams is not on the npm registry yet: npm install <the tarball npm pack writes in a clone of Weir>
npx weir kafka start && npx weir topic create lines --partitions 2 && npx weir topic create word-counts --partitions 2
npm start
\`\`\`

Then feed it (\`echo '{"seq":0,"text":"to be or not to be"}' | npx weir produce lines\`) and watch
it (\`npx weir consume word-counts --follow\`, and the dashboard at http://127.0.0.1:8081/).
\`npm test\` runs the job's own test, \`npm run typecheck\` its types. The job is \`job.ts\`, its
logic \`words.ts\`, its settings \`weir.config.json\`. Jobs are plain TypeScript that Node runs
without a build: the rules are in Weir's docs/writing-a-job.md.
`,
  };
}
