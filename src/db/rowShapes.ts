/**
 * Rows of named statements as objects, built from the driver's arrays (rowMode 'array') by one object literal per
 * statement, made from the statement's column names the first time it answers. node-postgres builds each row a
 * property at a time from a copy of an empty template, several times slower than the literal for a contract's
 * columns, on every API request (each reads a contract). The objects are the same: one property per column, in the
 * statement's order, the last of two columns of one name winning.
 *
 * The literal is generated code, written only from the column names PostgreSQL describes for svc's own statements
 * (each as a JSON string, so any name is a property name and nothing else).
 */
type Build = (values: unknown[]) => Record<string, unknown>;

function builderOf(names: readonly string[]): Build {
  const props = names.map((name, i) => `${name === '__proto__' ? `["__proto__"]` : JSON.stringify(name)}: v[${i}]`);
  return new Function('v', `return { ${props.join(', ')} };`) as Build;
}

export class RowShapes {
  private readonly byStatement = new Map<string, { names: string[]; build: Build }>();

  /** The rows of statement `name` as objects, given its columns (`fields`, in order) and its rows as arrays. */
  objects<T>(name: string, fields: readonly { name: string }[], rows: unknown[][]): T[] {
    let shape = this.byStatement.get(name);
    if (!shape || !sameNames(shape.names, fields)) {
      const names = fields.map((f) => f.name);
      shape = { names, build: builderOf(names) };
      this.byStatement.set(name, shape);
    }
    const out = new Array<T>(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = shape.build(rows[i]) as T;
    return out;
  }
}

function sameNames(names: readonly string[], fields: readonly { name: string }[]): boolean {
  if (names.length !== fields.length) return false;
  for (let i = 0; i < names.length; i++) if (names[i] !== fields[i].name) return false;
  return true;
}
