import { createRequire } from 'node:module';
import type protobufModule from 'protobufjs';
import type { ResolvedReference } from './schema-registry-client.ts';

let loaded: typeof protobufModule | undefined;

/** protobufjs, required on first use: a job without Protobuf (and every worker thread of one) does not load it. */
export function protobuf(): typeof protobufModule {
  loaded ??= createRequire(import.meta.url)('protobufjs') as typeof protobufModule;
  return loaded;
}

/** A .proto file parsed with the schemas it imports: its messages in the order message indexes count them. */
export interface ParsedProto {
  root: protobufModule.Root;
  /** The file's top-level messages, in declaration order (message index [i] is messages[i]). */
  messages: protobufModule.Type[];
}

/** The well-known types protobufjs carries (google/protobuf/timestamp.proto, ...): an import of one needs no registry reference. */
const wellKnown = (name: string): boolean => name.startsWith('google/protobuf/') && protobuf().common.get(name) !== null;

/**
 * Parses `text` (a .proto, field names kept as written) with the schemas it imports: each import
 * is a registry reference (`references`, fetched by the client) or one of Google's well-known
 * types; any other import is an error naming it. Throws (saying why) when the schema does not
 * parse or a type does not resolve.
 */
export function parseProto(text: string, references: readonly ResolvedReference[] = []): ParsedProto {
  const pb = protobuf();
  const root = new pb.Root();
  const main = pb.parse(text, root, { keepCase: true });
  const container = main.package === undefined ? root : root.lookup(main.package);
  const messages = container instanceof pb.Namespace ? messagesOf(container) : [];
  const imports = [...(main.imports ?? []), ...(main.weakImports ?? [])];
  const byName = new Map(references.map((reference) => [reference.name, reference]));
  for (const reference of references) {
    if (reference.schemaType !== 'PROTOBUF') throw new Error(`the reference "${reference.name}" is a ${reference.schemaType} schema, not Protobuf`);
    const parsed = pb.parse(reference.schema, root, { keepCase: true });
    imports.push(...(parsed.imports ?? []), ...(parsed.weakImports ?? []));
  }
  const added = new Set<string>();
  for (const name of imports) {
    if (byName.has(name) || added.has(name)) continue;
    if (!wellKnown(name))
      throw new Error(
        `the schema imports "${name}", which is neither one of its registry references (${[...byName.keys()].map((key) => `"${key}"`).join(', ') || 'it has none'}) nor a well-known google/protobuf type`,
      );
    added.add(name);
    const json = pb.common.get(name) as { nested?: Record<string, protobufModule.AnyNestedObject> };
    if (json.nested !== undefined) root.addJSON(json.nested);
  }
  root.resolveAll();
  if (messages.length === 0) throw new Error('the schema declares no message');
  return { root, messages };
}

/** A namespace's messages (not its enums, services or nested namespaces), in declaration order. */
function messagesOf(namespace: protobufModule.NamespaceBase): protobufModule.Type[] {
  const Type = protobuf().Type;
  return namespace.nestedArray.filter((nested): nested is protobufModule.Type => nested instanceof Type);
}

/** The message the indexes point at: [i] the file's i-th message, [i, j] its j-th nested message, ... */
export function messageAt(proto: ParsedProto, indexes: readonly number[]): protobufModule.Type {
  let candidates = proto.messages;
  let found: protobufModule.Type | undefined;
  for (const index of indexes) {
    found = candidates[index];
    if (found === undefined)
      throw new Error(
        `message indexes [${indexes.join(', ')}] point past the schema's messages${candidates === proto.messages ? '' : ` nested in ${found ?? 'the message'}`} (${candidates.length} there)`,
      );
    candidates = messagesOf(found);
  }
  return found as protobufModule.Type;
}

/** The message indexes of `type` in the file (the inverse of messageAt). */
export function indexesOf(proto: ParsedProto, type: protobufModule.Type): number[] {
  const path: protobufModule.Type[] = [];
  for (let at: protobufModule.NamespaceBase | null = type; at instanceof protobuf().Type; at = at.parent) path.unshift(at);
  const indexes: number[] = [];
  let candidates = proto.messages;
  for (const step of path) {
    const index = candidates.indexOf(step);
    if (index < 0) throw new Error(`message ${type.fullName.slice(1)} is not declared in the schema's own file (it comes from an import)`);
    indexes.push(index);
    candidates = messagesOf(step);
  }
  return indexes;
}

/** The message named `name` (full name, or as declared in the file's package); its full name, without the leading dot, in errors. */
export function messageNamed(proto: ParsedProto, name: string): protobufModule.Type {
  const found = proto.root.lookup(name.startsWith('.') ? name : `.${name}`) ?? findByShortName(proto, name);
  if (!(found instanceof protobuf().Type)) {
    const names = allMessages(proto).map((type) => type.fullName.slice(1));
    throw new Error(`the schema declares no message "${name}" (it declares ${names.join(', ')})`);
  }
  return found;
}

function findByShortName(proto: ParsedProto, name: string): protobufModule.ReflectionObject | null {
  return (
    allMessages(proto).find(
      (type) => type.fullName.slice(1).endsWith(name) && type.fullName.slice(1).split('.').slice(-name.split('.').length).join('.') === name,
    ) ?? null
  );
}

function allMessages(proto: ParsedProto): protobufModule.Type[] {
  const out: protobufModule.Type[] = [];
  const visit = (types: protobufModule.Type[]) => {
    for (const type of types) {
      out.push(type);
      visit(messagesOf(type));
    }
  };
  visit(proto.messages);
  return out;
}
