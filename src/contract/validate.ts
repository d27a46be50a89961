/**
 * Envelope and capture-summary validation: the JSON Schemas in `schema/` (compiled once, on first use) plus
 * the contract's prose rules the schema cannot express. Never throws.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { isRecord } from '../util/json.js';
import { escapePointerSegment, findImageBytes } from './image-bytes.js';
import type { ValidationResult, Violation } from './types.js';

/** Violations reported per value, at most: a hostile value must not make the report itself huge. */
const MAX_VIOLATIONS = 200;
/** Longest code checked char by char; longer codes are a violation on their own. */
const MAX_CODE_LENGTH = 200;

type SchemaName = 'agent-tool-result' | 'capture-summary';
const compiled = new Map<SchemaName, ValidateFunction>();

/** Compiles a schema file once; ajv is loaded synchronously on first use so start-up does not pay for it. */
function validatorFor(name: SchemaName): ValidateFunction {
  const cached = compiled.get(name);
  if (cached) return cached;
  const require = createRequire(import.meta.url);
  const { Ajv2020 } = require('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js');
  // `../../schema` is the package root's schema/ both from src/contract and from dist/contract.
  const file = new URL(`../../schema/${name}.schema.json`, import.meta.url);
  const schema = JSON.parse(readFileSync(file, 'utf8')) as object;
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
  const fn = ajv.compile(schema);
  compiled.set(name, fn);
  return fn;
}

/** Longest object key quoted in a violation path; longer ones (hostile or byte-bearing) are shortened. */
const MAX_KEY_IN_PATH = 200;

/** A key as a pointer segment, shortened when huge so violations never carry megabytes or image bytes. */
function keySegment(key: unknown): string {
  const k = String(key);
  if (k.length <= MAX_KEY_IN_PATH) return escapePointerSegment(k);
  return `${escapePointerSegment(k.slice(0, 32))}...(${k.length} chars)`;
}

/** Turns ajv errors into violations with JSON-pointer paths that point at the offending member. */
function schemaViolations(errors: ErrorObject[] | null | undefined): Violation[] {
  const out: Violation[] = [];
  for (const e of errors ?? []) {
    const params = e.params as Record<string, unknown>;
    switch (e.keyword) {
      case 'if':
        continue; // The failing `then` branch says what is wrong.
      case 'oneOf':
        out.push({
          path: e.instancePath,
          message:
            e.schemaPath === '#/oneOf' && e.instancePath === ''
              ? 'exactly one of artifact or artifactError is required'
              : (e.message ?? 'must match exactly one schema'),
        });
        break;
      case 'additionalProperties':
        out.push({
          path: `${e.instancePath}/${keySegment(params.additionalProperty)}`,
          message: 'property not allowed here',
        });
        break;
      case 'required':
        if (e.schemaPath.startsWith('#/oneOf/')) continue; // Reported once by the oneOf case.
        out.push({
          path: `${e.instancePath}/${keySegment(params.missingProperty)}`,
          message:
            params.missingProperty === 'error' && e.schemaPath.includes('/then/')
              ? 'a failure (ok:false) requires an error'
              : 'required property is missing',
        });
        break;
      case 'false schema':
        out.push({
          path: e.instancePath,
          message:
            e.instancePath === '/error' ? 'a success (ok:true) must not carry an error' : 'not allowed',
        });
        break;
      case 'enum':
        out.push({
          path: e.instancePath,
          message: `must be one of: ${((params.allowedValues as unknown[]) ?? []).join(', ')}`,
        });
        break;
      default:
        out.push({ path: e.instancePath, message: e.message ?? e.keyword });
    }
  }
  return out;
}

/** True for a non-empty kebab-case code: lowercase letters and digits in dash-separated words. */
export function isKebabCase(code: string): boolean {
  if (code.length === 0 || code.length > MAX_CODE_LENGTH) return false;
  let prevDash = true; // Forbids a leading dash.
  for (let i = 0; i < code.length; i++) {
    const c = code.charCodeAt(i);
    if (c === 45) {
      if (prevDash) return false;
      prevDash = true;
    } else if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57)) {
      prevDash = false;
    } else {
      return false;
    }
  }
  return !prevDash;
}

const SELECTOR_MATCHED = 'selector-matched';

function isDigits(s: string): boolean {
  if (s.length === 0 || s.length > 12) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** The contract's prose rules, checked on whatever parts of the value have the right shape. */
function proseViolations(env: Record<string, unknown>): Violation[] {
  const out: Violation[] = [];
  if (env.ok === false && env.result !== undefined && env.result !== null) {
    out.push({ path: '/result', message: 'a failure (ok:false) must omit result or set it to null' });
  }
  if (Array.isArray(env.warnings)) {
    env.warnings.forEach((w, i) => {
      if (isRecord(w) && typeof w.code === 'string' && w.code.length > 0 && !isKebabCase(w.code)) {
        out.push({ path: `/warnings/${i}/code`, message: 'warning code must be kebab-case' });
      }
    });
  }
  const error = env.error;
  if (isRecord(error)) {
    const code = error.code;
    if (typeof code === 'string' && code.length > 0) {
      if (!isKebabCase(code)) out.push({ path: '/error/code', message: 'error code must be kebab-case' });
      if (code === SELECTOR_MATCHED || code.startsWith(`${SELECTOR_MATCHED}-`)) {
        const n = code.slice(SELECTOR_MATCHED.length + 1);
        if (!isDigits(n)) {
          out.push({
            path: '/error/code',
            message: 'selector-matched-N must end with the match count N (e.g. selector-matched-3)',
          });
        }
        if (typeof error.category === 'string' && error.category !== 'ambiguous-selector') {
          out.push({
            path: '/error/category',
            message: 'selector-matched-N belongs to category ambiguous-selector',
          });
        }
      }
    }
    const lastObservation = error.lastObservation;
    if (lastObservation !== undefined && lastObservation !== null) {
      for (const loc of findImageBytes(lastObservation)) {
        out.push({
          path: `/error/lastObservation${loc.path}`,
          message: `lastObservation must not hold image bytes (${loc.form}, ${loc.decodedBytes} bytes); summarize the capture instead`,
        });
      }
      if (isRecord(lastObservation) && lastObservation.kind === 'capture-summary') {
        for (const v of validateCaptureSummary(lastObservation).violations) {
          out.push({ path: `/error/lastObservation${v.path}`, message: `capture-summary: ${v.message}` });
        }
      }
    }
  }
  return out;
}

function cap(violations: Violation[]): Violation[] {
  if (violations.length <= MAX_VIOLATIONS) return violations;
  const kept = violations.slice(0, MAX_VIOLATIONS);
  kept.push({ path: '', message: `${violations.length - MAX_VIOLATIONS} more violations not listed` });
  return kept;
}

function failed(what: string, e: unknown): ValidationResult {
  const name = e instanceof Error ? e.name : typeof e;
  return { valid: false, violations: [{ path: '', message: `${what} could not run (${name})` }] };
}

/** Checks a value against the envelope schema and the contract's prose rules. Never throws. */
export function validateEnvelope(value: unknown): ValidationResult {
  try {
    const fn = validatorFor('agent-tool-result');
    const violations = fn(value) ? [] : schemaViolations(fn.errors);
    if (isRecord(value)) violations.push(...proseViolations(value));
    return { valid: violations.length === 0, violations: cap(violations) };
  } catch (e) {
    return failed('envelope validation', e);
  }
}

/** Checks a value against the capture-summary schema and that it holds no image bytes. Never throws. */
export function validateCaptureSummary(value: unknown): ValidationResult {
  try {
    const fn = validatorFor('capture-summary');
    const violations = fn(value) ? [] : schemaViolations(fn.errors);
    for (const loc of findImageBytes(value)) {
      violations.push({
        path: loc.path,
        message: `a capture summary must not hold image bytes (${loc.form})`,
      });
    }
    return { valid: violations.length === 0, violations: cap(violations) };
  } catch (e) {
    return failed('capture-summary validation', e);
  }
}
