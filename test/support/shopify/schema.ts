import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import {
  buildClientSchema,
  GraphQLError,
  GraphQLScalarType,
  Kind,
  NoDeprecatedCustomRule,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type GraphQLSchema,
  type ValidationRule,
} from 'graphql';

/** The Admin API version the stand-in models, and the only one it answers on. */
export const ADMIN_API_VERSION = '2026-10';

const SCHEMA_FILE = `node_modules/@shopify/dev-mcp/dist/data/admin_${ADMIN_API_VERSION}.json.gz`;

let cached: GraphQLSchema | undefined;

/**
 * The platform's real Admin GraphQL schema, built from the introspection JSON that `@shopify/dev-mcp` ships.
 * The package's `exports` hide its data files from resolution, so the file is found by walking up to node_modules.
 */
export function adminSchema(): GraphQLSchema {
  if (cached) return cached;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  let file: string | undefined;
  for (;;) {
    const candidate = path.join(dir, SCHEMA_FILE);
    if (existsSync(candidate)) {
      file = candidate;
      break;
    }
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  if (!file) throw new Error(`Admin schema not found (${SCHEMA_FILE}): is the devDependency @shopify/dev-mcp installed?`);
  const introspection = JSON.parse(gunzipSync(readFileSync(file)).toString('utf8'));
  const schema = buildClientSchema(introspection.data ?? introspection);
  tightenScalars(schema);
  cached = schema;
  return schema;
}

const DATE_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)?)?$/;

/**
 * A client schema's custom scalars accept anything. The platform rejects a malformed DateTime, URL or Decimal
 * before running the operation, so the stand-in does too (the error names the variable, as graphql-js words it).
 */
function tightenScalars(schema: GraphQLSchema): void {
  const check = (name: string, ok: (v: unknown) => boolean, what: string) => {
    const type = schema.getType(name) as GraphQLScalarType | undefined;
    if (!type) return;
    const parseValue = (v: unknown) => {
      if (!ok(v)) throw new GraphQLError(`${JSON.stringify(v)} is not a valid ${what}`);
      return v;
    };
    Object.assign(type, {
      parseValue,
      parseLiteral: (node: { kind: string; value?: string }) => {
        if (node.kind !== Kind.STRING && node.kind !== Kind.INT && node.kind !== Kind.FLOAT) {
          throw new GraphQLError(`${name} must be a string`);
        }
        return parseValue(node.kind === Kind.STRING ? node.value : Number(node.value));
      },
    });
  };
  check('DateTime', (v) => typeof v === 'string' && DATE_TIME.test(v) && !Number.isNaN(Date.parse(v)), 'ISO-8601 DateTime');
  check('URL', (v) => typeof v === 'string' && URL.canParse(v), 'URL');
  check('Decimal', (v) => (typeof v === 'string' || typeof v === 'number') && /^-?\d+(\.\d+)?$/.test(String(v)), 'Decimal');
}

/**
 * Validates a GraphQL document (query or mutation text) against the real Admin schema: syntax, field and argument
 * names, types, required arguments, variables. Returns no errors for a document the platform would accept.
 * `noDeprecated` also reports every deprecated field, argument or enum value the document uses.
 */
export function validateAgainstAdminSchema(
  document: string,
  options: { noDeprecated?: boolean } = {},
): readonly GraphQLError[] {
  let doc: DocumentNode;
  try {
    doc = parse(document);
  } catch (err) {
    return [err as GraphQLError];
  }
  const rules = options.noDeprecated ? [...specifiedRules, NoDeprecatedCustomRule] : specifiedRules;
  return validate(adminSchema(), doc, rules);
}

/** An error as the platform words it in a response body. */
export type PlatformError = {
  message: string;
  locations?: { line: number; column: number }[];
  path?: (string | number)[];
  extensions?: Record<string, unknown>;
};

/**
 * The platform (graphql-ruby) tags each static-validation error with a code naming the rule; the common ones are
 * mapped here, the rest fall back to a generic code. svc should branch on `THROTTLED` and on the presence of
 * `errors`, not on these codes.
 */
const RULE_CODES: Record<string, string> = {
  FieldsOnCorrectTypeRule: 'undefinedField',
  KnownArgumentNamesRule: 'argumentNotAccepted',
  ProvidedRequiredArgumentsRule: 'missingRequiredArguments',
  NoUnusedVariablesRule: 'variableNotUsed',
  NoUndefinedVariablesRule: 'variableNotDefined',
  KnownTypeNamesRule: 'undefinedType',
  ScalarLeafsRule: 'selectionMismatch',
  ValuesOfCorrectTypeRule: 'argumentLiteralsIncompatible',
  VariablesInAllowedPositionRule: 'variableMismatch',
  OverlappingFieldsCanBeMergedRule: 'fieldConflict',
  KnownFragmentNamesRule: 'undefinedFragment',
  NoUnusedFragmentsRule: 'useAndDefineFragment',
};

type Checked = { document: DocumentNode; errors: [] } | { document?: undefined; errors: PlatformError[] };
/** Checked documents by their text: a client sends the same few documents again and again (as servers do, each is
 * parsed and validated once; validating against a schema this large costs milliseconds). */
const checkedDocuments = new Map<string, Checked>();

/** Parses and validates a request's document; errors come back in the platform's shape, each with a code. */
export function checkDocument(source: string): Checked {
  let checked = checkedDocuments.get(source);
  if (!checked) {
    checked = checkUncached(source);
    if (checkedDocuments.size >= 1000) checkedDocuments.clear();
    checkedDocuments.set(source, checked);
  }
  return checked;
}

function checkUncached(source: string): Checked {
  let document: DocumentNode;
  try {
    document = parse(source);
  } catch (err) {
    const e = err as GraphQLError;
    return { errors: [{ message: e.message, locations: e.locations ? [...e.locations] : undefined, extensions: { code: 'parseError' } }] };
  }
  const schema = adminSchema();
  if (validate(schema, document).length === 0) return { document, errors: [] };
  const errors: PlatformError[] = [];
  for (const rule of specifiedRules as ValidationRule[]) {
    for (const e of validate(schema, document, [rule])) {
      errors.push({
        message: e.message,
        locations: e.locations ? [...e.locations] : undefined,
        extensions: { code: RULE_CODES[rule.name] ?? 'GRAPHQL_VALIDATION_FAILED' },
      });
    }
  }
  return { errors };
}
