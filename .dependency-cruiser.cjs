// The layers of src/ and the rules that keep imports running one way (docs/architecture.md draws
// them). `npm run lint` runs dependency-cruiser with this file, so CI fails on an import against the
// order or on a cycle, naming the importing file and the imported one.
//
// LAYERS lists the folders of src/, lowest row first. A folder may import only folders on lower
// rows; folders on the same row never import each other. src/index.ts (the package entry) may
// import every layer but cli/.
const LAYERS = [
  ['core'],
  ['state'],
  ['graph'],
  ['checkpoint'],
  ['runtime', 'connectors'],
  ['api', 'local-kafka', 'audit', 'cluster'],
  ['web', 'demo', 'testing'],
  ['cli'],
];

// Inside runtime/ the same rule, one level down.
const RUNTIME_LAYERS = [['io', 'watermarks', 'metrics', 'operators'], ['deployment'], ['tasks'], ['taskexecutor', 'jobmaster']];

const oneOf = (folders) => `(${folders.join('|')})`;

function layerRules(layers, base, what) {
  const rules = [];
  layers.forEach((row, index) => {
    const lower = layers.slice(0, index).flat();
    for (const folder of row) {
      const notAllowed = layers.flat().filter((other) => other !== folder && !lower.includes(other));
      if (notAllowed.length === 0) continue;
      rules.push({
        name: `${what}-${folder}`,
        severity: 'error',
        comment:
          lower.length === 0
            ? `${base}${folder}/ is the lowest layer: it imports no other ${what} (docs/architecture.md)`
            : `${base}${folder}/ may import only ${lower.map((name) => `${base}${name}/`).join(', ')} (docs/architecture.md)`,
        from: { path: `^${base}${folder}/` },
        to: { path: `^${base}${oneOf(notAllowed)}/` },
      });
    }
  });
  return rules;
}

const placed = LAYERS.flat();

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'files import each other in a circle: move what both need into a lower file',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-circular-folders',
      severity: 'error',
      comment: 'folders import each other in a circle (through different files): one of them belongs below the other',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    ...layerRules(LAYERS, 'src/', 'layer'),
    ...layerRules(RUNTIME_LAYERS, 'src/runtime/', 'runtime'),
    {
      name: 'runtime-folders',
      severity: 'error',
      comment: `every file of src/runtime/ belongs to one of its folders: ${RUNTIME_LAYERS.flat().join(', ')}`,
      from: { path: '^src/runtime/[^/]+$' },
      to: {},
    },
    {
      name: 'entry-not-cli',
      severity: 'error',
      comment: 'the package entry (src/index.ts) exports the API, never the command line',
      from: { path: '^src/index\\.ts$' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'unplaced-folder',
      severity: 'error',
      comment: `every file of src/ is in a layer (${placed.join(', ')}) or is src/index.ts: place a new folder in LAYERS and in docs/architecture.md`,
      from: { path: '^src/', pathNot: `^src/(${oneOf(placed)}/|index\\.ts$)` },
      to: {},
    },
    {
      name: 'no-upward-from-src',
      severity: 'error',
      comment: 'src/ never imports the tests, the benchmarks or the scripts',
      from: { path: '^src/' },
      to: { path: '^(test|bench|scripts|examples)/' },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'an import that does not resolve to a file',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    parser: 'swc',
    tsPreCompilationDeps: false,
    enhancedResolveOptions: { conditionNames: ['import', 'node', 'default'], exportsFields: ['exports'], mainFields: ['module', 'main'] },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist)/' },
    moduleSystems: ['es6'],
  },
};

// For the test that keeps docs/architecture.md's layer table and these rules equal.
Object.defineProperty(module.exports, 'layers', { value: { LAYERS, RUNTIME_LAYERS }, enumerable: false });
