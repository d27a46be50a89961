import fs from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { MaskRuleError, parseMaskArg, parseMaskRules, parseMaskRulesText } from '../../src/mask/rules.js';

const schema = JSON.parse(
  fs.readFileSync(new URL('../../schema/mask-rules.schema.json', import.meta.url), 'utf8'),
);
const validate = new Ajv2020({ allErrors: true }).compile(schema);

const GOOD = {
  rules: [
    { window: { title: 'KeePass' }, label: 'vault' },
    { window: { process: 'outlook.exe' }, element: { by: 'AutomationId', value: 'Body' } },
    { element: { value: 'Password' } },
    { window: { className: '#32770', handle: 42 }, rect: { x: 0, y: 120, width: 640, height: 40 } },
  ],
};

const BAD: Array<[unknown, RegExp]> = [
  [{ rules: [{ rect: { x: 0, y: 0, width: 1, height: 1 } }] }, /needs a window or an element/],
  [
    {
      rules: [{ window: { title: 'a' }, element: { value: 'b' }, rect: { x: 0, y: 0, width: 1, height: 1 } }],
    },
    /both rect and element/,
  ],
  [{ rules: [{ window: {} }] }, /names no window/],
  [{ rules: [{ window: { title: ' ' } }] }, /window.title must be a non-empty string/],
  [{ rules: [{ element: { by: 'xpath', value: 'x' } }] }, /by must be name, automationid or classname/],
  [
    { rules: [{ window: { title: 'a' }, rect: { x: -1, y: 0, width: 1, height: 1 } }] },
    /rect.x must be an integer >= 0/,
  ],
  [{ rules: [{ windows: { title: 'a' } }] }, /windows is not a rule field/],
  [{ rule: [] }, /must be \{"rules": \[...\]\}|rule is not a rules-file field/],
];

describe('mask rules', () => {
  it('a good rules file is valid by the schema and parses to the same rules', () => {
    expect(validate(GOOD)).toBe(true);
    const rules = parseMaskRules(GOOD);
    expect(rules).toHaveLength(4);
    expect(rules[1]!.element).toEqual({ by: 'automationid', value: 'Body' });
  });

  it('bad rules: the schema refuses each, and the parser says which field and why', () => {
    for (const [doc, message] of BAD) {
      expect(validate(doc), JSON.stringify(doc)).toBe(false);
      expect(() => parseMaskRules(doc)).toThrow(message);
      expect(() => parseMaskRules(doc)).toThrow(MaskRuleError);
    }
    expect(() => parseMaskRulesText('{nope', 'rules.json')).toThrow(/rules.json: not JSON/);
  });

  it('--mask text: window, element and rectangle forms', () => {
    expect(parseMaskArg('window=Sign in')).toEqual({ window: { title: 'Sign in' } });
    expect(parseMaskArg('window=Sign in;by=automationid;value=PasswordBox;label=pw')).toEqual({
      window: { title: 'Sign in' },
      element: { by: 'automationid', value: 'PasswordBox' },
      label: 'pw',
    });
    expect(parseMaskArg('process=keepass;rect=0,40,300,24')).toEqual({
      window: { process: 'keepass' },
      rect: { x: 0, y: 40, width: 300, height: 24 },
    });
    expect(() => parseMaskArg('rect=1,2,3')).toThrow(/rect must be x,y,width,height/);
    expect(() => parseMaskArg('colour=red')).toThrow(/unknown key colour/);
    expect(() => parseMaskArg('window')).toThrow(/not key=value/);
  });
});
