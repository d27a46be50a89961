/**
 * Running a user-named command on Windows (src/util/windows-command.ts), checked on any OS: the platform,
 * PATH, PATHEXT and the file test are injected. cmd.exe itself is not here: its parse is modelled below
 * (percent phase of a command line, caret/quote phase, a batch file's `%*` re-read) after dbenham's
 * description of cmd's phases, and the program's argv by the MSVCRT rules.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  batchCommandLine,
  CMD_LINE_LIMIT,
  caretEscape,
  planSpawn,
  quoteForMsvcrt,
  resolveWindowsCommand,
  WindowsCommandLineError,
} from '../../src/util/windows-command.js';

/** NTFS's file test: a real file whose name matches in any case. */
function isFileAnyCase(file: string): boolean {
  const dir = path.dirname(file);
  const base = path.basename(file).toLowerCase();
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return false;
  }
  const found = names.find((n) => n.toLowerCase() === base);
  return found !== undefined && fs.statSync(path.join(dir, found)).isFile();
}

let root: string;
let first: string;
let second: string;
let spaced: string;

beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'mcec-wincmd-'));
  first = path.join(root, 'first');
  second = path.join(root, 'second');
  spaced = path.join(root, 'Program Files', 'nodejs');
  for (const dir of [first, second, spaced, path.join(root, 'work', 'bin')])
    fs.mkdirSync(dir, { recursive: true });
  const touch = (file: string) => fs.writeFileSync(file, '@echo off\r\n');
  touch(path.join(spaced, 'npx.cmd'));
  touch(path.join(first, 'tool.exe'));
  touch(path.join(first, 'both.cmd'));
  touch(path.join(first, 'both.exe'));
  touch(path.join(first, 'Loud.CMD'));
  touch(path.join(first, 'early.cmd'));
  touch(path.join(second, 'early.exe'));
  touch(path.join(second, 'old.bat'));
  touch(path.join(root, 'work', 'bin', 'local.cmd'));
  fs.mkdirSync(path.join(second, 'dir.cmd'));
});

afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

function host(env: NodeJS.ProcessEnv = {}) {
  return {
    platform: 'win32' as const,
    env: { Path: [first, `"${second}"`, '', spaced].join(';'), ...env },
    cwd: path.join(root, 'work'),
    isFile: isFileAnyCase,
  };
}

describe('resolveWindowsCommand: the file cmd.exe would run', () => {
  it('finds a bare name in the PATH directories in order, with PATHEXT extensions in order', () => {
    expect(resolveWindowsCommand('npx', host())).toBe(path.join(spaced, 'npx.CMD'));
    expect(resolveWindowsCommand('tool', host())).toBe(path.join(first, 'tool.EXE'));
    // Same directory: .EXE comes before .CMD in PATHEXT.
    expect(resolveWindowsCommand('both', host())).toBe(path.join(first, 'both.EXE'));
    // An earlier directory wins over a better extension in a later one (libuv would take early.exe).
    expect(resolveWindowsCommand('early', host())).toBe(path.join(first, 'early.CMD'));
    expect(resolveWindowsCommand('old', host())).toBe(path.join(second, 'old.BAT'));
    expect(resolveWindowsCommand('missing', host())).toBeNull();
    // A directory named like a file is not one.
    expect(resolveWindowsCommand('dir', host())).toBeNull();
  });

  it('follows PATHEXT and its order, in any case', () => {
    expect(resolveWindowsCommand('both', host({ PATHEXT: '.cmd;.exe' }))).toBe(path.join(first, 'both.cmd'));
    expect(resolveWindowsCommand('npx', host({ pathext: '.EXE' }))).toBeNull();
    expect(resolveWindowsCommand('loud', host())).toBe(path.join(first, 'loud.CMD'));
    expect(resolveWindowsCommand('NPX', host())).toBe(path.join(spaced, 'NPX.CMD'));
  });

  it('takes a name with a PATHEXT extension as given, on PATH', () => {
    expect(resolveWindowsCommand('npx.cmd', host())).toBe(path.join(spaced, 'npx.cmd'));
    expect(resolveWindowsCommand('both.cmd', host())).toBe(path.join(first, 'both.cmd'));
    expect(resolveWindowsCommand('TOOL.EXE', host())).toBe(path.join(first, 'TOOL.EXE'));
    // Not a PATHEXT extension: the extensions are appended.
    expect(resolveWindowsCommand('tool.js', host())).toBeNull();
  });

  it('looks for a name with a directory part only there, relative to the working directory', () => {
    expect(resolveWindowsCommand('bin/local', host())).toBe(path.join(root, 'work', 'bin', 'local.CMD'));
    expect(resolveWindowsCommand(path.join(first, 'both.cmd'), host())).toBe(path.join(first, 'both.cmd'));
    expect(resolveWindowsCommand(path.join(root, 'work', 'npx'), host())).toBeNull();
    // A bare name is not looked for in the working directory.
    expect(resolveWindowsCommand('local', { ...host(), cwd: path.join(root, 'work', 'bin') })).toBeNull();
  });
});

describe('planSpawn', () => {
  it('runs a batch file through ComSpec with verbatim arguments', () => {
    const plan = planSpawn(
      'npx',
      ['mcec-sim', '--stdio'],
      host({ ComSpec: 'C:\\Windows\\system32\\cmd.exe' }),
    );
    expect(plan.file).toBe('C:\\Windows\\system32\\cmd.exe');
    expect(plan.windowsVerbatimArguments).toBe(true);
    expect(plan.batchFile).toBe(path.join(spaced, 'npx.CMD'));
    expect(plan.args).toEqual([
      '/d',
      '/s',
      '/v:off',
      '/c',
      `"${caretEscape(path.join(spaced, 'npx.CMD'), 1)} ^^^"mcec-sim^^^" ^^^"--stdio^^^""`,
    ]);
    expect(planSpawn('old', [], host()).file).toBe('cmd.exe');
  });

  it('spawns an .exe, a command not found and anything off Windows as given', () => {
    const asGiven = (command: string) => ({ file: command, args: ['a b'], windowsVerbatimArguments: false });
    expect(planSpawn('tool', ['a b'], host())).toEqual(asGiven('tool'));
    expect(planSpawn('both', ['a b'], host())).toEqual(asGiven('both'));
    expect(planSpawn('missing', ['a b'], host())).toEqual(asGiven('missing'));
    expect(planSpawn('missing.cmd', ['a b'], host())).toEqual(asGiven('missing.cmd'));
    for (const platform of ['linux', 'darwin'] as const)
      expect(planSpawn('npx', ['a b'], { ...host(), platform })).toEqual(asGiven('npx'));
  });

  it('refuses a line break and a line over cmd.exe limit, naming why', () => {
    expect(() => planSpawn('npx', ['a\nb'], host())).toThrow(WindowsCommandLineError);
    expect(() => planSpawn('npx', ['a\r'], host())).toThrow(/line break, which cmd.exe cannot pass/);
    expect(() => planSpawn('npx', ['x'.repeat(CMD_LINE_LIMIT)], host())).toThrow(
      /over cmd.exe's limit of 8191/,
    );
  });
});

describe('quoting for cmd.exe and the program', () => {
  it('quotes by the MSVCRT rules', () => {
    expect(quoteForMsvcrt('')).toBe('""');
    expect(quoteForMsvcrt('a b')).toBe('"a b"');
    expect(quoteForMsvcrt('say "hi"')).toBe('"say \\"hi\\""');
    expect(quoteForMsvcrt('C:\\dir\\')).toBe('"C:\\dir\\\\"');
    expect(quoteForMsvcrt('a\\\\"b')).toBe('"a\\\\\\\\\\"b"');
    expect(quoteForMsvcrt('a\\b')).toBe('"a\\b"');
  });

  it('writes the exact line', () => {
    const npx = 'C:\\Program Files\\nodejs\\npx.cmd';
    expect(batchCommandLine(npx, [])).toBe('C:\\Program^ Files\\nodejs\\npx.cmd');
    expect(batchCommandLine(npx, ['', 'a&b', '%PATH%', '^', 'say "hi"', 'dir\\', 'é'])).toBe(
      [
        'C:\\Program^ Files\\nodejs\\npx.cmd',
        '^^^"^^^"',
        '^^^"a^^^&b^^^"',
        '^^^"^^^%^^^PATH^^^%^^^"',
        '^^^"^^^^^^^"',
        '^^^"say^^^ \\^^^"hi\\^^^"^^^"',
        '^^^"dir\\\\^^^"',
        '^^^"é^^^"',
      ].join(' '),
    );
  });

  const ENV = { PATH: 'C:\\Windows', OS: 'Windows_NT', X: 'x' };
  const TRICKY = [
    '',
    'plain',
    'a b',
    '  lead and trail  ',
    'tab\there',
    'say "hi"',
    'a"&b',
    'a"^b',
    '"a" | "b" > "c"',
    '"',
    '""',
    '\\"',
    'a\\"b',
    'a\\\\"b',
    'C:\\dir\\',
    'C:\\dir\\\\',
    '\\\\server\\share\\',
    '%PATH%',
    '%PATH:Windows=Nope%',
    '%PATH:~0,2%',
    '%OS%%X%',
    '%NOPE%PATH%',
    '100%',
    '%',
    '%%',
    '^',
    '^^',
    'a^b',
    'a&b',
    '&&',
    'a|b',
    '<in>',
    'x>y 2>&1',
    '(a)',
    '!X!',
    'a;b,c=d',
    '*?[]`',
    'ünïcødé ✓ 😀',
    'ends with caret^',
    '{"jsonrpc":"2.0","id":1}',
    // cross-spawn's own cases (test/index.test.js, run there on a real cmd.exe).
    ...['()', '[]', '%!', '^<', '>&', '|;', ', ', '!=', '\\*', '"f"', '?.', '=`', "'", '\\"', 'bar\\'],
    ...['"foo|bar>baz"', '"(foo|bar>baz|foz)"', 'André Cruz'],
  ];

  it('gives the program back every argument after cmd.exe and the batch file read the line', () => {
    const batch = 'C:\\Program Files (x86)\\my&tools%X%\\npx.cmd';
    // As planSpawn wraps it for `cmd /d /s /v:off /c`.
    const quoted = `"${batchCommandLine(batch, TRICKY)}"`;
    const { program, rest } = runCmdLine(quoted, ENV);
    expect(program).toBe(batch);
    // npx.cmd's last line: "%NODE_EXE%" "%NPX_CLI_JS%" %* (%* is not percent-expanded again).
    const shimLine = caretAndQuotePhase(`"node.exe" "npx-cli.js" ${rest}`);
    expect(parseMsvcrt(shimLine)).toEqual(['node.exe', 'npx-cli.js', ...TRICKY]);
  });

  it('gives back each argument alone too (no state carried from a neighbour)', () => {
    for (const arg of TRICKY) {
      const line = batchCommandLine('C:\\t\\x.cmd', [arg]);
      const { rest } = runCmdLine(`"${line}"`, ENV);
      expect(parseMsvcrt(caretAndQuotePhase(rest))).toEqual([arg]);
    }
  });
});

// --- a model of cmd.exe's parse, only what the lines above need -------------------------------------------

/** cmd /s /c "<line>": the outer quotes go, the percent phase (command-line context), then carets and quotes. */
function runCmdLine(quoted: string, env: Record<string, string>): { program: string; rest: string } {
  expect(quoted.startsWith('"') && quoted.endsWith('"')).toBe(true);
  const line = caretAndQuotePhase(percentPhase(quoted.slice(1, -1), env), true);
  const split = line.indexOf('\u0000');
  return split < 0
    ? { program: line, rest: '' }
    : { program: line.slice(0, split), rest: line.slice(split + 1) };
}

/**
 * Phase 1 on a command line (not in a batch file): `%name%` and `%name:...%` expand when `name` is defined
 * (any case); otherwise `%name` stays and reading goes on from the second `%`. Every expansion shows up.
 */
function percentPhase(line: string, env: Record<string, string>): string {
  let out = '';
  let i = 0;
  while (i < line.length) {
    const ch = line[i]!;
    if (ch !== '%') {
      out += ch;
      i++;
      continue;
    }
    const close = line.indexOf('%', i + 1);
    if (close < 0) {
      out += line.slice(i);
      break;
    }
    const body = line.slice(i + 1, close);
    const name = body.split(':')[0]!.toUpperCase();
    const defined = name !== '' && Object.keys(env).some((k) => k.toUpperCase() === name);
    if (defined) {
      out += `<EXPANDED ${body}>`;
      i = close + 1;
    } else {
      out += `%${body}`;
      i = close;
    }
  }
  return out;
}

/**
 * Phase 2: outside quotes a caret takes the next character literally and is dropped; a quote (unescaped)
 * toggles quoting, inside which everything is literal. An unescaped `& | < > ( )` outside quotes would be
 * cmd's syntax: the model fails on it. With `markCommand`, the first unescaped, unquoted space (the end of the
 * program's name) becomes NUL.
 */
function caretAndQuotePhase(line: string, markCommand = false): string {
  let out = '';
  let quoted = false;
  let commandEnded = !markCommand;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quoted) {
      if (ch === '"') quoted = false;
      out += ch;
    } else if (ch === '^') {
      i++;
      if (i < line.length) out += line[i];
    } else if (ch === '"') {
      quoted = true;
      out += ch;
    } else if ('&|<>()'.includes(ch)) {
      throw new Error(`cmd would read an unescaped ${ch} at ${i} of ${line}`);
    } else if (ch === ' ' && !commandEnded) {
      commandEnded = true;
      out += '\u0000';
    } else {
      out += ch;
    }
  }
  return out;
}

/** argv as the Microsoft C runtime (2008 and later) splits a command line. */
function parseMsvcrt(line: string): string[] {
  const args: string[] = [];
  let i = 0;
  while (i < line.length) {
    while (line[i] === ' ' || line[i] === '\t') i++;
    if (i >= line.length) break;
    let arg = '';
    let quoted = false;
    while (i < line.length) {
      const ch = line[i]!;
      if (!quoted && (ch === ' ' || ch === '\t')) break;
      if (ch === '\\') {
        let n = 0;
        while (line[i] === '\\') {
          n++;
          i++;
        }
        if (line[i] === '"') {
          arg += '\\'.repeat(Math.floor(n / 2));
          if (n % 2 === 1) {
            arg += '"';
            i++;
          }
        } else {
          arg += '\\'.repeat(n);
        }
      } else if (ch === '"') {
        if (quoted && line[i + 1] === '"') {
          arg += '"';
          i += 2;
        } else {
          quoted = !quoted;
          i++;
        }
      } else {
        arg += ch;
        i++;
      }
    }
    args.push(arg);
  }
  return args;
}
