/**
 * Checks at the public boundary, in the style of better-sqlite3: a wrong type is a TypeError, a value of the
 * right type out of its range a RangeError, each naming the exact option (`Expected options.sessionsDir to be
 * a string`). An absent option (undefined) is always allowed: its default applies.
 */

/** The errors these checks threw: a CLI tells a bad option (usage, exit 2) from a TypeError thrown deeper in. */
const optionErrors = new WeakSet<Error>();

/** A TypeError naming a bad option, known to `isOptionError`. */
export function optionTypeError(message: string): TypeError {
  const err = new TypeError(message);
  optionErrors.add(err);
  return err;
}

/** A RangeError naming a bad option, known to `isOptionError`. */
export function optionRangeError(message: string): RangeError {
  const err = new RangeError(message);
  optionErrors.add(err);
  return err;
}

/** Whether `err` came from an options check (a wrong type or range), not from a failure after it. */
export function isOptionError(err: unknown): err is TypeError | RangeError {
  return err instanceof Error && optionErrors.has(err);
}

/** `value` must be a plain object (not null, not an array). */
export function expectObject(value: unknown, name: string): asserts value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw optionTypeError(`Expected ${name} to be an object`);
}

/** An options argument: undefined (the defaults) or an object. */
export function expectOptions(value: unknown, name = 'options'): Record<string, unknown> {
  if (value === undefined) return {};
  expectObject(value, name);
  return value;
}

export function expectString(value: unknown, name: string, { nonEmpty = false } = {}): void {
  if (value === undefined) return;
  if (typeof value !== 'string') throw optionTypeError(`Expected ${name} to be a string`);
  if (nonEmpty && value.trim() === '') throw optionRangeError(`Expected ${name} to be a non-empty string`);
}

/** A boolean; `required`: undefined is refused too. */
export function expectBoolean(value: unknown, name: string, { required = false } = {}): void {
  if ((value !== undefined || required) && typeof value !== 'boolean')
    throw optionTypeError(`Expected ${name} to be a boolean`);
}

/** A function; `required`: undefined is refused too. */
export function expectFunction(value: unknown, name: string, { required = false } = {}): void {
  if ((value !== undefined || required) && typeof value !== 'function')
    throw optionTypeError(`Expected ${name} to be a function`);
}

/**
 * A finite number at least `min` (and at most `max`); `integer` requires a whole number; `required`: undefined
 * is refused too.
 */
export function expectNumber(
  value: unknown,
  name: string,
  { min = Number.NEGATIVE_INFINITY, max = Number.POSITIVE_INFINITY, integer = false, required = false } = {},
): void {
  if (value === undefined && !required) return;
  if (typeof value !== 'number' || Number.isNaN(value))
    throw optionTypeError(`Expected ${name} to be a number`);
  const what = integer ? 'an integer' : 'a finite number';
  if (!Number.isFinite(value) || (integer && !Number.isInteger(value)))
    throw optionRangeError(`Expected ${name} to be ${what}`);
  if (value < min || value > max) {
    const range = max === Number.POSITIVE_INFINITY ? `at least ${min}` : `between ${min} and ${max}`;
    throw optionRangeError(`Expected ${name} to be ${what} ${range}`);
  }
}

/** One of the given strings (a TypeError when not a string, a RangeError when another string). */
export function expectOneOf(value: unknown, name: string, allowed: readonly string[]): void {
  if (value === undefined) return;
  const list = allowed.map((a) => `"${a}"`).join(', ');
  if (typeof value !== 'string') throw optionTypeError(`Expected ${name} to be one of ${list}`);
  if (!allowed.includes(value)) throw optionRangeError(`Expected ${name} to be one of ${list}`);
}

/** An array whose every item passes `item` (called with `name[i]`). */
export function expectArray(value: unknown, name: string, item?: (v: unknown, name: string) => void): void {
  if (value === undefined) return;
  if (!Array.isArray(value)) throw optionTypeError(`Expected ${name} to be an array`);
  if (item) for (let i = 0; i < value.length; i++) item(value[i], `${name}[${i}]`);
}

/** An item that must be a string (an array's entry: undefined is not allowed). */
export function expectStringItem(value: unknown, name: string): void {
  if (typeof value !== 'string') throw optionTypeError(`Expected ${name} to be a string`);
}

/** A string or a RegExp (redaction keys). */
export function expectStringOrRegExp(value: unknown, name: string): void {
  if (typeof value !== 'string' && !(value instanceof RegExp))
    throw optionTypeError(`Expected ${name} to be a string or a RegExp`);
}

export function expectRegExp(value: unknown, name: string): void {
  if (!(value instanceof RegExp)) throw optionTypeError(`Expected ${name} to be a RegExp`);
}

/** A required non-empty string (a path, an id, a URL, a command): present, a string, not blank. */
export function expectNonEmptyString(value: unknown, name: string): void {
  if (typeof value !== 'string') throw optionTypeError(`Expected ${name} to be a string`);
  if (value.trim() === '') throw optionRangeError(`Expected ${name} to be a non-empty string`);
}

/**
 * An object with these methods (a recorder a proxy writes to, a stream): each a function, named
 * `name.method` when it is not.
 */
export function expectMethods(value: unknown, name: string, methods: readonly string[]): void {
  expectObject(value, name);
  for (const method of methods)
    if (typeof value[method] !== 'function')
      throw optionTypeError(`Expected ${name}.${method} to be a function`);
}

/** An object whose every own value passes `item` (called with `name.key`, or `name["odd key"]`). */
export function expectRecord(value: unknown, name: string, item: (v: unknown, name: string) => void): void {
  if (value === undefined) return;
  expectObject(value, name);
  for (const [key, v] of Object.entries(value)) item(v, memberName(name, key));
}

/** `name.key` when the key reads as an identifier, else `name["key"]`. */
function memberName(name: string, key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${name}.${key}` : `${name}[${JSON.stringify(key)}]`;
}

/** An instance of `type` (a SessionReader): `Expected reader to be a SessionReader`. */
export function expectInstance<T>(
  value: unknown,
  name: string,
  type: { prototype: T; name: string },
): asserts value is T {
  if (
    value === null ||
    typeof value !== 'object' ||
    !Object.prototype.isPrototypeOf.call(type.prototype, value)
  )
    throw optionTypeError(`Expected ${name} to be a ${type.name}`);
}
