import { MAX_STATEMENT_PARAMETERS, type PostgresRow } from './postgres-sink-options.ts';

/** An identifier quoted for SQL: the exact name, whatever its case or characters. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** `name` or `schema.name` as the sink's `table` option gives it, split into its parts. */
export function tableParts(table: string): { schema: string | undefined; name: string } {
  const dot = table.indexOf('.');
  return dot < 0 ? { schema: undefined, name: table } : { schema: table.slice(0, dot), name: table.slice(dot + 1) };
}

/** The table quoted for SQL: `"name"` or `"schema"."name"`. */
export function quoteTable(table: string): string {
  const { schema, name } = tableParts(table);
  return schema === undefined ? quoteIdentifier(name) : `${quoteIdentifier(schema)}.${quoteIdentifier(name)}`;
}

/** One INSERT statement of a batch: its text (the same for every full chunk, so it can be prepared once) and its parameters. */
export interface InsertStatement {
  /** Set for chunks of the full size: the name the statement is prepared under on its connection. */
  name: string | undefined;
  text: string;
  values: unknown[];
}

/**
 * The multi-row INSERTs a batch of rows is written with: `INSERT INTO t (c1, c2) VALUES ($1, $2),
 * ($3, $4), ...`, at most `rowsPerStatement` rows each (fewer when the columns would pass
 * PostgreSQL's 65535 parameters); in upsert mode followed by `ON CONFLICT (key) DO UPDATE SET c =
 * EXCLUDED.c, ...` (DO NOTHING when every column is a key column), and a batch keeps only the last
 * row of each key (one statement may not update a row twice).
 */
export class InsertStatements {
  readonly #columns: readonly string[];
  readonly #key: readonly string[] | undefined;
  readonly #head: string;
  readonly #tail: string;
  readonly rowsPerStatement: number;
  #fullText: string | undefined;

  constructor(table: string, columns: readonly string[], key: readonly string[] | undefined, batchSize: number) {
    this.#columns = columns;
    this.#key = key;
    this.rowsPerStatement = Math.max(1, Math.min(batchSize, Math.floor(MAX_STATEMENT_PARAMETERS / columns.length)));
    this.#head = `INSERT INTO ${quoteTable(table)} (${columns.map(quoteIdentifier).join(', ')}) VALUES `;
    if (key === undefined) {
      this.#tail = '';
    } else {
      const updated = columns.filter((column) => !key.includes(column));
      this.#tail =
        ` ON CONFLICT (${key.map(quoteIdentifier).join(', ')}) ` +
        (updated.length === 0
          ? 'DO NOTHING'
          : `DO UPDATE SET ${updated.map((column) => `${quoteIdentifier(column)} = EXCLUDED.${quoteIdentifier(column)}`).join(', ')}`);
    }
  }

  /** The statements that write these rows, in order. */
  statements(rows: readonly PostgresRow[]): InsertStatement[] {
    const written = this.#key === undefined ? rows : lastRowPerKey(rows, this.#key);
    const statements: InsertStatement[] = [];
    const columns = this.#columns;
    const width = columns.length;
    for (let start = 0; start < written.length; start += this.rowsPerStatement) {
      const count = Math.min(this.rowsPerStatement, written.length - start);
      const values = new Array<unknown>(count * width);
      for (let i = 0; i < count; i++) {
        const row = written[start + i] as PostgresRow;
        for (let c = 0; c < width; c++) values[i * width + c] = row[columns[c] as string] ?? null;
      }
      const full = count === this.rowsPerStatement;
      statements.push({ name: full ? `weir_insert_${count}` : undefined, text: full ? this.#full() : this.#text(count), values });
    }
    return statements;
  }

  #full(): string {
    this.#fullText ??= this.#text(this.rowsPerStatement);
    return this.#fullText;
  }

  #text(rows: number): string {
    const width = this.#columns.length;
    const tuples = new Array<string>(rows);
    for (let i = 0; i < rows; i++) {
      const placeholders = new Array<string>(width);
      for (let c = 0; c < width; c++) placeholders[c] = `$${i * width + c + 1}`;
      tuples[i] = `(${placeholders.join(', ')})`;
    }
    return `${this.#head}${tuples.join(', ')}${this.#tail}`;
  }
}

/** The rows with only the last of each key kept, in the order of those last rows. */
export function lastRowPerKey(rows: readonly PostgresRow[], key: readonly string[]): PostgresRow[] {
  const last = new Map<string, number>();
  const ids = new Array<string>(rows.length);
  const single = key.length === 1 ? (key[0] as string) : undefined;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as PostgresRow;
    const id = single === undefined ? JSON.stringify(key.map((column) => keyText(row[column]))) : keyText(row[single]);
    ids[i] = id;
    last.set(id, i);
  }
  if (last.size === rows.length) return rows as PostgresRow[];
  const kept: PostgresRow[] = [];
  for (let i = 0; i < rows.length; i++) if (last.get(ids[i] as string) === i) kept.push(rows[i] as PostgresRow);
  return kept;
}

/** A key value as text the way PostgreSQL compares it after pg sends it as text (1 and '1' are one key of an int column). */
function keyText(value: unknown): string {
  if (value === null || value === undefined) return '\0null';
  if (value instanceof Date) return value.toISOString();
  if (Buffer.isBuffer(value)) return `\0bytes:${value.toString('hex')}`;
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}
