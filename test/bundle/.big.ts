import fs from 'node:fs';
import { calls, FixtureSession, makeSessionsDir } from '../helpers/fixture-session.ts';

const root = process.argv[2] ?? makeSessionsDir();
const s = FixtureSession.create(root, { scenario: 'big' });
s.call(calls.displays());
const t = Date.now();
// 200 captures spread through 10,000 calls
let caps = 0;
for (let i = 0; i < 10000 - 1; i++) {
  if (i % 50 === 0 && caps < 200) {
    await s.capture({ width: 1280, height: 800 });
    caps++;
    continue;
  }
  const k = i % 4;
  s.call(
    k === 0
      ? calls.findSave()
      : k === 1
        ? calls.query(40)
        : k === 2
          ? calls.invokeSave()
          : calls.ambiguousFind(),
  );
}
await s.blankCapture();
s.end();
s.close();
console.log(s.dir, Date.now() - t, 'ms');
